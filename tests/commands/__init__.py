"""The commands (gputui/commands), run through gputui.cli.main as a user types them."""
