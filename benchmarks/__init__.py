"""The benchmarks; a package so the fleet tests can reuse the synthetic fleet data (benchmarks.fleet_data)."""
