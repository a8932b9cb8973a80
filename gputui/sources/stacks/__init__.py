"""The job-activity source: what a GPU job's threads are doing, read from their Python stacks.

Two readers give the same StackWindow (samples.py): py-spy from outside (pyspy.py: ptrace, never pausing the job),
and the sampler `gputui run` puts inside the job (agent/, read back by inprocess.py). classify.py sorts each stack
into an ActivityKind by a table of frame patterns and sums a window into the model's JobActivity.
"""
