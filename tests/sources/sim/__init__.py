"""The simulated machine (gputui/sources/sim): scenarios, MIG, the lab job mode."""
