"""Recordings: the format, the writer, the reader, replay and the reports."""
