"""The recording format and nothing else: format.py (the lines and their schema), writer.py (a thread that owns the
file) and reader.py (read back, losing nothing that can be read). The report that renders a recording is a view of
its own (gputui/report/); replay is a source (gputui/sources/playback.py)."""
