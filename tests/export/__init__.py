"""The Prometheus exporter (gputui/export): metric families, the server and its sampler."""
