"""The sources of readings (gputui/sources): driver, host, simulated, remote, replay, Prometheus."""
