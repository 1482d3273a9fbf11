"""Benchmarks that print figures: ``python -m memreason.eval.bench <name>`` (names: local_lm, sandbox, threads)."""
