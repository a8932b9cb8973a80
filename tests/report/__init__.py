"""The report of a recording (gputui/report): summary, lanes, charts, the HTML page."""
