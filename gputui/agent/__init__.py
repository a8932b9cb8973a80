"""What runs inside the user's job, not in gputui: the stack sampler `gputui run -- CMD` injects through
sitecustomize.py. Standard library only, and nothing here imports the rest of gputui (an import contract says so):
the job's Python may have neither gputui's dependencies nor gputui itself on its path. gputui reads what it writes
in gputui/sources/stacks/inprocess.py."""
