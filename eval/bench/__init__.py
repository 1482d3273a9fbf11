"""Benchmarks that print figures: ``python -m eval.bench <name>`` (names: local_lm, sandbox, threads)."""
