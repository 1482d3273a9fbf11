"""Metrics: pure functions over predictions and targets."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from dataclasses import dataclass
from typing import Any, Collection, Sequence

from memreason.signatures.implications import NotLabel, OtherThan  # re-exported: hypothesis_f1's input


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


@dataclass(frozen=True)
class HypothesisScore:
    """Precision, recall and F1 of a hypothesis set, with what each hypothesis and each target contributed.

    ``correct[i]``: hypothesis i counts as correct; ``covered[j]``: target j (an
    attribute combination, or a reference rule) is covered by a correct hypothesis.
    """

    precision: float
    recall: float
    f1: float
    correct: tuple[bool, ...]
    covered: tuple[bool, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "correct": list(self.correct),
            "covered": list(self.covered),
        }


def f1_score(precision: float, recall: float) -> float:
    """Harmonic mean of precision and recall; 0 when both are 0."""
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def hypothesis_f1(implications: Sequence[Sequence[Any]], truth: Sequence[str]) -> HypothesisScore:
    """Score hypotheses extensionally against a rule table, each statement on its own, by what it implies.

    ``implications[i][j]`` is what statement i, read on its own, implies for attribute
    combination j (from ``memreason.programs.parse_implications``,
    ``memreason.programs.HypothesisInterpreter`` or structured rules): a label; ``NotLabel(x)``
    ("not x", a negation where the labels are not two); ``OtherThan(k)`` ("the other label of
    combination k", the background flip); or ``None`` when it is silent. ``truth[j]`` is the
    table's label of combination j.

    - A statement is correct when it implies something and every implication holds: a
      label matches the table, ``NotLabel(x)`` holds where the table's label is not x,
      ``OtherThan(k)`` where the two combinations' labels differ.
    - Statements that imply nothing (silent everywhere: unreadable, or about nothing the
      level scores) are neither right nor wrong: they are not correct (``correct`` is
      False) but are left out of precision. A set of only such statements scores 0.
    - Duplicates count once: statements with the same implications (the same set of
      (combination, implication) pairs, whatever their wording) are one statement for
      precision. Precision = distinct correct statements / distinct statements that imply something.
    - Recall is the fraction of combinations whose label a correct statement states:
      a label it implies, or ``OtherThan(k)`` where combination k is itself covered
      (so the flip covers the twins of what correct label statements cover; alone it
      covers nothing). ``NotLabel`` covers nothing.

    An empty hypothesis set scores 0 on all three.
    """
    if not truth:
        raise ValueError("hypothesis_f1 needs at least one combination")
    for i, row in enumerate(implications):
        if len(row) != len(truth):
            raise ValueError(f"hypothesis {i} has {len(row)} implications for {len(truth)} combinations")
    correct = tuple(
        any(said is not None for said in row) and all(_holds(said, j, truth) for j, said in enumerate(row))
        for row in implications
    )
    covered = [False] * len(truth)
    for ok, row in zip(correct, implications):
        for j, said in enumerate(row):
            covered[j] = covered[j] or (ok and isinstance(said, str))
    changed = True
    while changed:  # the flip covers what the combination it refers to is covered by
        changed = False
        for ok, row in zip(correct, implications):
            for j, said in enumerate(row):
                if ok and isinstance(said, OtherThan) and covered[said.index] and not covered[j]:
                    covered[j] = changed = True
    distinct: dict[frozenset, bool] = {}
    for ok, row in zip(correct, implications):
        said = frozenset((j, s) for j, s in enumerate(row) if s is not None)
        if said:
            distinct[said] = ok
    precision = sum(distinct.values()) / len(distinct) if distinct else 0.0
    recall = sum(covered) / len(covered)
    return HypothesisScore(precision, recall, f1_score(precision, recall), correct, tuple(covered))


def _holds(said: Any, j: int, truth: Sequence[str]) -> bool:
    if said is None:
        return True
    if isinstance(said, NotLabel):
        return truth[j] != said.label
    if isinstance(said, OtherThan):
        return truth[j] != truth[said.index]
    return said == truth[j]


def hypothesis_match_f1(matches: Sequence[Collection[int]], n_rules: int) -> HypothesisScore:
    """Score hypotheses by matching them to reference rules, like HypoBench's LM-judge mode.

    ``matches[i]`` holds the indices of the reference rules hypothesis i states
    (from ``memreason.programs.HypothesisJudge``). Precision is the fraction of hypotheses
    that match some rule; recall the fraction of rules matched by some hypothesis.
    An empty hypothesis set scores 0 on all three.
    """
    if n_rules < 1:
        raise ValueError("hypothesis_match_f1 needs at least one reference rule")
    for i, matched in enumerate(matches):
        if any(not 0 <= j < n_rules for j in matched):
            raise ValueError(f"hypothesis {i} matches a rule index outside 0..{n_rules - 1}")
    correct = tuple(bool(matched) for matched in matches)
    covered = tuple(any(j in matched for matched in matches) for j in range(n_rules))
    return _score(correct, covered)


def _score(correct: tuple[bool, ...], covered: tuple[bool, ...]) -> HypothesisScore:
    precision = sum(correct) / len(correct) if correct else 0.0
    recall = sum(covered) / len(covered)
    return HypothesisScore(precision, recall, f1_score(precision, recall), correct, covered)


# -- ARC (ArcMemo paper, Appendix B) ------------------------------------------------------


def _check_verify(verify: Sequence[Sequence[bool]]) -> tuple[int, int]:
    if not verify:
        raise ValueError("no attempts to score")
    tests = len(verify[0])
    if tests == 0 or any(len(row) != tests for row in verify):
        raise ValueError("every attempt needs one verdict per test case, and there must be at least one test case")
    return len(verify), tests


def oracle_at_k(verify: Sequence[Sequence[bool]], k: int) -> float:
    """ArcMemo's oracle@k for one problem: the mean, over all k-subsets C of the n attempts, of
    z(C) = fraction of test cases t for which some attempt in C passes t.

    ``verify[a][t]``: attempt a's output for test case t is correct. By linearity the
    subset average is, per test case, 1 - C(n - p_t, k) / C(n, k) with p_t the number
    of attempts passing t, averaged over test cases. k = 2 with n = 2 is ARC's official score.
    """
    n, tests = _check_verify(verify)
    if not 1 <= k <= n:
        raise ValueError(f"oracle@{k} needs 1 <= k <= n attempts (n = {n})")
    subsets = math.comb(n, k)
    per_test = [1 - math.comb(n - sum(bool(row[t]) for row in verify), k) / subsets for t in range(tests)]
    return sum(per_test) / tests


def official_score(verify: Sequence[Sequence[bool]]) -> float:
    """ARC's official score for one problem: two attempts (the first two), a test case counts when either
    attempt gets it, the score is the fraction of test cases."""
    _check_verify(verify)
    first = verify[:2]
    return oracle_at_k(first, len(first))


def strict_at_k(verify: Sequence[Sequence[bool]], k: int) -> float:
    """Strict scoring (ArcMemo Table 5), averaged over k-subsets like oracle@k: a subset scores 1 only when a
    single attempt in it passes every test case."""
    n, _ = _check_verify(verify)
    if not 1 <= k <= n:
        raise ValueError(f"strict@{k} needs 1 <= k <= n attempts (n = {n})")
    solving = sum(all(row) for row in verify)
    return 1 - math.comb(n - solving, k) / math.comb(n, k)


def strict_score(verify: Sequence[Sequence[bool]]) -> float:
    """Strict score for one problem under the official protocol: 1 when one of the first two attempts passes
    every test case, else 0."""
    _check_verify(verify)
    return float(any(all(row) for row in verify[:2]))


# -- ARC: the sampling protocol (ArcMemo paper, Appendix B; Table 4) --------------------------------

MAX_SUBSETS = 20_000  # beyond this many k-subsets, dataset_oracle_at_k takes the closed form and gives no std


@dataclass(frozen=True)
class SubsetScore:
    """A dataset score averaged over the k-subsets of a pool of samples: mean, sample std over the subsets
    (``None`` for a single subset, or when there were too many to enumerate) and how many subsets there are."""

    mean: float
    std: float | None
    subsets: int

    def as_dict(self) -> dict[str, Any]:
        return {"mean": self.mean, "std": self.std, "subsets": self.subsets}


def _check_pool(verify: Sequence[Sequence[Sequence[bool]]]) -> int:
    if not verify:
        raise ValueError("no problems to score")
    sizes = {_check_verify(rows)[0] for rows in verify}
    if len(sizes) != 1:
        raise ValueError(f"every problem needs the same pool of samples, got pools of {sorted(sizes)}")
    return sizes.pop()


def sample_scores(verify: Sequence[Sequence[Sequence[bool]]]) -> list[float]:
    """Each sample's dataset score (ArcMemo's individual run scores: its official score with k = 1).

    ``verify[i][s][t]``: sample s of the pool gets test case t of problem i. Sample s scores
    the mean over problems of the fraction of test cases it gets.
    """
    n = _check_pool(verify)
    return [sum(sum(map(bool, rows[s])) / len(rows[s]) for rows in verify) / len(verify) for s in range(n)]


def dataset_oracle_at_k(verify: Sequence[Sequence[Sequence[bool]]], k: int, *, max_subsets: int = MAX_SUBSETS) -> SubsetScore:
    """ArcMemo's oracle@k of a dataset under its sampling protocol: the mean, over all k-subsets C of the
    pool of n samples, of the dataset score z(C) (the mean over problems of the fraction of test cases
    some sample in C gets), with the sample standard deviation over the subsets.

    ``verify[i][s][t]`` as for :func:`sample_scores`. The mean equals the problems' mean
    :func:`oracle_at_k`; k = n has one subset (std ``None``). Past ``max_subsets`` subsets they are
    not enumerated: the mean comes from that closed form and the std is ``None``.
    """
    n = _check_pool(verify)
    if not 1 <= k <= n:
        raise ValueError(f"oracle@{k} needs 1 <= k <= n samples (n = {n})")
    count = math.comb(n, k)
    if count > max_subsets:
        return SubsetScore(sum(oracle_at_k(rows, k) for rows in verify) / len(verify), None, count)
    # each test case as the set of samples that get it (a bit mask), with its weight in a problem's score
    weights: Counter[int] = Counter()
    for rows in verify:
        tests = len(rows[0])
        for t in range(tests):
            weights[sum(1 << s for s, row in enumerate(rows) if row[t])] += 1 / tests
    weights.pop(0, None)  # a test case no sample gets
    scores = []
    for subset in itertools.combinations(range(n), k):
        chosen = sum(1 << s for s in subset)
        scores.append(sum(w for mask, w in weights.items() if mask & chosen) / len(verify))
    mean, std = mean_std(scores)
    return SubsetScore(mean, std if count > 1 else None, count)
