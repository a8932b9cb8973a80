"""The simulated machine, labelled SIMULATED everywhere: the scenario table, physics, waves, the lab job mode."""
