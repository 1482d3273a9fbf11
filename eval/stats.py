"""Uncertainty over items: bootstrap confidence intervals of a mean score, and paired tests between two rows.

    bootstrap_ci([1, 0, 1, 1, 0])                 # 95% percentile bootstrap CI of the mean (10,000 resamples, seed 0)
    intervals({"official": [1.0, 0.5, 0.0], "strict": [1.0, 0.0, 0.0]})   # one [low, high] per named column
    mcnemar_p(8, 1)                               # 0.0390625: exact two-sided McNemar on the discordant items
    paired({"s1": [1.0], "s2": [0.0]}, {"s1": [0.0], "s2": [0.0]})   # two rows on the items both hold

An item is a scene (Experience-Transfer) or a task (ARC). Where every item is simply right or wrong (a
score of 0 or 1), a score's interval is Wilson's score interval of the proportion right (:func:`wilson_ci`,
:data:`LEVEL` 95%): it never collapses to a point at 0% or 100% (20 items all right: [83.9, 100], where a
bootstrap of the items gives [100, 100], since every resample is all right too). Where some item's score lies
between (averaged over several runs, an ARC task with part of its test pairs solved), the interval resamples
the items with replacement, :data:`RESAMPLES` times from a generator seeded with :data:`SEED`, and takes the
2.5th and 97.5th percentiles of the resampled means (a percentile bootstrap). With several runs an item's score
is its mean over the runs, so the interval is over items, not runs. The resampled indices depend on the number
of items and the seed alone: every score of the same items is resampled the same way, and the same scores always
give the same interval.

A paired test compares two rows (programs, memories, models) item by item on the items both hold:
an item is right in a row when its score is above 0 (a correct count; an ARC task with an official
score above 0), pooled over runs by :data:`POOLS` (default: in more than half of them); McNemar's
exact test reads the items right in one row only. The score difference (each item's mean over runs,
A minus B) gets a paired bootstrap CI (the same items resampled for both rows) and a two-sided
bootstrap p-value (how often the resampled mean difference, centred on the observed one, lies as
far from 0 as the observed difference does). The test to read: McNemar's when every item is
simply right or wrong in both rows, the paired bootstrap's when some item's score lies between
(averaged over several runs, or an ARC task with part of its test pairs solved).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Hashable, Literal, Mapping, Sequence, TypeVar

import numpy as np

__all__ = [
    "LEVEL",
    "POOLS",
    "METHOD",
    "RESAMPLES",
    "SEED",
    "PairedTest",
    "bootstrap_ci",
    "bootstrap_cis",
    "ci_method",
    "intervals",
    "mcnemar_p",
    "paired",
    "pooled",
    "wilson_ci",
]

RESAMPLES = 10_000
SEED = 0
LEVEL = 0.95
_BLOCK = 2_000_000  # values gathered at a time: bounded memory for any number of items and columns

Pool = Literal["majority", "any", "all"]
POOLS: dict[str, str] = {  # how an item's runs make one verdict: the item is right in a row when it is right in ...
    "majority": "more than half of its runs",
    "any": "at least one of its runs",
    "all": "every one of its runs",
}
K = TypeVar("K", bound=Hashable)


#: The words every table's note uses for how its intervals were made.
METHOD = (
    "Wilson score interval where every item is right or wrong, else a percentile bootstrap over the items "
    "(10,000 resamples, seed 0)"
)


def ci_method(items: str) -> dict[str, Any]:
    """How the intervals of a ``results.json`` were made (its ``ci_method``), ``items`` naming what was resampled."""
    return {
        "method": "wilson score where every item is right or wrong, else percentile bootstrap",
        "level": LEVEL,
        "resamples": RESAMPLES,
        "seed": SEED,
        "over": items,
        "runs": "an item's score is its mean over the runs",
    }


def wilson_ci(right: int, n: int, *, level: float = LEVEL) -> tuple[float, float]:
    """Wilson's score interval of a proportion, ``right`` of ``n`` (a fraction each end); (0, 0) for no item."""
    if n <= 0:
        return (0.0, 0.0)
    from statistics import NormalDist

    z = NormalDist().inv_cdf((1 + level) / 2)
    p = right / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def bootstrap_cis(
    rows: Sequence[Sequence[float]], *, resamples: int = RESAMPLES, seed: int = SEED, level: float = LEVEL
) -> list[tuple[float, float]]:
    """Percentile bootstrap CI of the mean of each column of ``rows`` (one row per item), all columns from the same
    resampled items: ``resamples`` draws of as many items with replacement, from a generator seeded with ``seed``."""
    values = np.asarray(rows, dtype=float)
    if values.size == 0:
        return [(0.0, 0.0)] * (values.shape[1] if values.ndim == 2 else 0)
    if values.ndim != 2:
        raise ValueError("rows must be a table: one row of numbers per item")
    if resamples < 1 or not 0 < level < 1:
        raise ValueError("resamples must be >= 1 and level within (0, 1)")
    means = _resampled_means(values, resamples, seed)
    low, high = np.quantile(means, [(1 - level) / 2, (1 + level) / 2], axis=0)
    return [(float(lo), float(hi)) for lo, hi in zip(low, high)]


def bootstrap_ci(
    values: Sequence[float], *, resamples: int = RESAMPLES, seed: int = SEED, level: float = LEVEL
) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean of per-item ``values`` (scores, or paired differences); (0, 0) for none."""
    if len(values) == 0:
        return (0.0, 0.0)
    return bootstrap_cis([[v] for v in values], resamples=resamples, seed=seed, level=level)[0]


def intervals(columns: Mapping[K, Sequence[float | None]]) -> dict[K, list[float] | None]:
    """The 95% CI of each named column of per-item scores as ``[low, high]`` (for ``results.json``): Wilson's where
    every score is 0 or 1, else a percentile bootstrap; ``None`` for a column that is empty or holds a ``None`` (a
    score not defined for some item, e.g. oracle@3 with two attempts). Bootstrapped columns of as many items share
    their resamples, so asking for one column alone gives the same interval."""
    out: dict[K, list[float] | None] = {name: None for name in columns}
    by_size: dict[int, list[K]] = {}
    for name, column in columns.items():
        if len(column) and all(v is not None for v in column):
            by_size.setdefault(len(column), []).append(name)
    for names in by_size.values():
        binary = [name for name in names if all(v in (0, 1) for v in columns[name])]
        for name in binary:
            out[name] = list(wilson_ci(int(sum(columns[name])), len(columns[name])))
        rest = [name for name in names if name not in binary]
        if rest:
            rows = list(zip(*(columns[name] for name in rest)))
            for name, (low, high) in zip(rest, bootstrap_cis(rows)):
                out[name] = [low, high]
    return out


def mcnemar_p(only_a: int, only_b: int) -> float:
    """McNemar's exact test: the two-sided binomial p-value of ``only_a`` against ``only_b`` discordant pairs,
    2 * P(X <= min) for X ~ Binomial(only_a + only_b, 1/2), at most 1 (1 when there are no discordant pairs)."""
    if only_a < 0 or only_b < 0:
        raise ValueError("discordant counts must be >= 0")
    n = only_a + only_b
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(only_a, only_b) + 1))
    return min(1.0, 2 * tail / 2**n)


def pooled(right: Sequence[bool], pool: Pool = "majority") -> bool:
    """One verdict from an item's runs: right in more than half of them (``majority``), in any, or in all."""
    if pool == "any":
        return any(right)
    if pool == "all":
        return all(right)
    if pool != "majority":
        raise ValueError(f"pool must be one of {', '.join(POOLS)}, got {pool!r}")
    return 2 * sum(right) > len(right)


@dataclass(frozen=True)
class PairedTest:
    """Row A against row B on the items both hold: the 2x2 table of items (right/wrong), McNemar's exact p,
    and the mean score difference A - B with its paired bootstrap CI and p-value. Scores are fractions.

    ``test`` and ``p_value`` are the test to read: ``"mcnemar"`` when every item's score is right or wrong
    (0 or 1) in both rows, ``"bootstrap"`` when some item's score lies between (averaged over several runs,
    or an ARC task with some of its test pairs solved)."""

    items: int
    both: int
    only_a: int
    only_b: int
    neither: int
    mcnemar_p: float
    difference: float
    ci: tuple[float, float]
    bootstrap_p: float
    left_out: tuple[int, int] = (0, 0)  # items of A, of B, that the other row lacks
    pool: str = "majority"
    test: str = "mcnemar"
    p_value: float = 1.0

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ci": list(self.ci), "left_out": list(self.left_out)}


def paired(
    a: Mapping[str, Sequence[float]],
    b: Mapping[str, Sequence[float]],
    *,
    pool: Pool = "majority",
    resamples: int = RESAMPLES,
    seed: int = SEED,
    level: float = LEVEL,
) -> PairedTest:
    """Compare row A with row B on the items both hold; ``a[item]`` is the item's score in each run of A.

    :class:`ValueError` when they hold no item in common (callers say which rows, in one line)."""
    if pool not in POOLS:
        raise ValueError(f"pool must be one of {', '.join(POOLS)}, got {pool!r}")
    shared = sorted(set(a) & set(b))
    if not shared:
        raise ValueError("no items in common")
    right_a = [pooled([s > 0 for s in a[item]], pool) for item in shared]
    right_b = [pooled([s > 0 for s in b[item]], pool) for item in shared]
    means_a, means_b = [_mean(a[item]) for item in shared], [_mean(b[item]) for item in shared]
    diffs = [x - y for x, y in zip(means_a, means_b)]
    binary = all(v in (0.0, 1.0) for v in means_a + means_b)
    only_a = sum(x and not y for x, y in zip(right_a, right_b))
    only_b = sum(y and not x for x, y in zip(right_a, right_b))
    both = sum(x and y for x, y in zip(right_a, right_b))
    ci, p = _paired_bootstrap(diffs, resamples=resamples, seed=seed, level=level)
    exact = mcnemar_p(only_a, only_b)
    return PairedTest(
        items=len(shared),
        both=both,
        only_a=only_a,
        only_b=only_b,
        neither=len(shared) - both - only_a - only_b,
        mcnemar_p=exact,
        difference=sum(diffs) / len(diffs),
        ci=ci,
        bootstrap_p=p,
        left_out=(len(a) - len(shared), len(b) - len(shared)),
        pool=pool,
        test="mcnemar" if binary else "bootstrap",
        p_value=exact if binary else p,
    )


def _paired_bootstrap(diffs: list[float], *, resamples: int, seed: int, level: float) -> tuple[tuple[float, float], float]:
    """The percentile CI of the mean of ``diffs`` and the two-sided bootstrap p-value of "mean 0", from the same
    resampled means: (1 + #{|m* - m| >= |m|}) / (1 + resamples), m the observed mean, m* a resampled one."""
    values = np.asarray(diffs, dtype=float)[:, None]
    means = _resampled_means(values, resamples, seed)[:, 0]
    low, high = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    observed = float(values.mean())
    extreme = int(np.count_nonzero(np.abs(means - observed) >= abs(observed) - 1e-12))
    return (float(low), float(high)), min(1.0, (1 + extreme) / (1 + resamples))


def _resampled_means(values: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """The column means of ``resamples`` resamples of the rows of ``values`` (items x columns), drawn with replacement
    from a generator seeded with ``seed``; a block of resamples at a time (numpy's stream does not depend on the
    block size, so neither do the draws)."""
    n, columns = values.shape
    rng = np.random.default_rng(seed)
    means = np.empty((resamples, columns))
    chunk = max(1, _BLOCK // (n * columns))
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        means[start:stop] = values[rng.integers(0, n, size=(stop - start, n))].mean(axis=1)
    return means


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if len(values) else 0.0
