"""Metrics against hand-computed values."""

import math
import random

import pytest

from memreason.eval.metrics import accuracy, mean_std


def test_accuracy():
    assert accuracy([1, 2, 3, None], [1, 0, 3, 0]) == 0.5
    assert accuracy([None], [0]) == 0.0
    with pytest.raises(ValueError):
        accuracy([1], [1, 2])
    with pytest.raises(ValueError):
        accuracy([], [])


def test_mean_std_matches_the_papers_convention():
    # ArcMemo Table 4, baseline run scores 46.00, 45.50, 47.50 -> 46.33 (1.04)
    mean, std = mean_std([46.0, 45.5, 47.5])
    assert round(mean, 2) == 46.33 and round(std, 2) == 1.04
    assert mean_std([0.7]) == (0.7, 0.0)


def test_mean_std_is_shift_invariant():
    rng = random.Random(0)
    for _ in range(50):
        values = [rng.random() for _ in range(rng.randint(2, 9))]
        shift = rng.uniform(-5, 5)
        m1, s1 = mean_std(values)
        m2, s2 = mean_std([v + shift for v in values])
        assert math.isclose(m2, m1 + shift) and math.isclose(s1, s2, abs_tol=1e-12)
