"""Recordings (gputui/record): the format, the writer, the reader; the shared recorded machines."""
