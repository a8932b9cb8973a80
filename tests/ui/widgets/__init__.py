"""The monitor's widgets (gputui/ui/widgets)."""
