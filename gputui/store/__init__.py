"""The always-on history: a directory of time-indexed, compressed chunks that a recorder writes while nobody watches
and every view reads back (the monitor's charts, replay, report, diagnose)."""
