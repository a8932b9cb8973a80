"""`gputui report`: what a recording says, as text, JSON and one HTML page. A view, like the TUI and the exporter:
it reads recordings (gputui/record/) and runs them through the diagnostics; the recording format knows nothing of
it."""
