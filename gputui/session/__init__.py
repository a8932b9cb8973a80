"""The headless core that runs sources through the diagnostics: the monitor's sampling loop, its recording and
replay samplers, and the fleet poller. Views (the TUI, the exporter) sit above it; none of it imports Textual."""
