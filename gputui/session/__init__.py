"""The headless core that runs sources through the diagnostics: the builder that opens a session's parts and closes
them (builder.py), the one sampling loop that the monitor, `diagnose`, the exporter and the fleet view poll through,
its sampler (with the recording and the alerts as sinks), replay, and the fleet poller. Views (the TUI, the
exporter) sit above it; none of it imports Textual."""
