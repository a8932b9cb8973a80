"""The kubelet's pod-resources API (gputui/sources/host/podresources)."""
