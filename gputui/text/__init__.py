"""The plain-text views: a snapshot's tables (`gputui snapshot`), the topology matrix (`gputui topo` and the
monitor's `t`), a job's activity and the findings as lines (`diagnose`, the monitor, the report). ASCII only, for
terminals and fonts on rented servers; "n/a" for every value not reported."""
