"""Metrics: pure functions over predictions and targets."""

from __future__ import annotations

import math
from typing import Any, Sequence


def accuracy(predictions: Sequence[Any], targets: Sequence[Any]) -> float:
    """Fraction of exact matches; a missing prediction (``None``) counts as wrong."""
    if len(predictions) != len(targets):
        raise ValueError(f"{len(predictions)} predictions for {len(targets)} targets")
    if not targets:
        raise ValueError("accuracy of an empty set is undefined")
    return sum(p is not None and p == t for p, t in zip(predictions, targets)) / len(targets)


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (n - 1), as the papers report over repeated runs.

    A single value has standard deviation 0.
    """
    if not values:
        raise ValueError("mean of no values is undefined")
    mean = sum(values) / len(values)
    if len(values) == 1:
        return mean, 0.0
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
