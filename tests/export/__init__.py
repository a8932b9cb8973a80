"""The Prometheus exporter and the remote source that reads it."""
