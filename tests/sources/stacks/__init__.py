"""Reading a job's stacks (gputui/sources/stacks): py-spy, the agent's records, classify."""
