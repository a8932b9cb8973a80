"""The host source (gputui/sources/host): psutil, /proc, cgroups, attribution."""
