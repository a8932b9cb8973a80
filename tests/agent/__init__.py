"""The in-process stacks agent (gputui/agent), in real Python processes."""
