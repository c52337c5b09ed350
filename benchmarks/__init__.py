"""mongosim benchmarks (issue 10): `python -m benchmarks` runs them all."""
