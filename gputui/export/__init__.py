"""The Prometheus exporter: Snapshots as metric families (metrics.py), served over HTTP (server.py)."""
