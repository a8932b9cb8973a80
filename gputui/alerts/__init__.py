"""Alerts: one message when a finding at or above a configured severity opens or closes, sent to a webhook, a
command or the terminal bell on a thread of its own, so that a slow or dead target never delays a reading.

Fed each tick by the session (a Sampler sink) in the monitor and in `gputui export`, like a view."""
