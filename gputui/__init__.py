"""gputui: a live terminal monitor that answers "why is my training slow?"."""

__version__ = "0.1.0"
