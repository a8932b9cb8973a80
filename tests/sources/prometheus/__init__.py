"""The fleet from a real Prometheus: the server fixture, scrape targets (gputui export, canned dcgm-exporter)."""
