"""The rule families (gputui/diagnostics/rules) on hand-built snapshots."""
