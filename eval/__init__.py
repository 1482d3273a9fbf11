"""Metrics, the evaluation harness and its CLI (``python -m eval ...`` from the repository root, ``memreason-eval`` anywhere)."""
