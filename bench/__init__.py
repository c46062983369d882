"""nami's benchmarks: `python -m bench` prints them all as one table (see docs/benchmarks.md)."""
