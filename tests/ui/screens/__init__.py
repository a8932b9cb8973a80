"""The monitor's screens (gputui/ui/screens)."""
