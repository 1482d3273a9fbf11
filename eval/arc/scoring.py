"""Scoring one ARC task and one run: verify matrices, oracle@k, official and strict scores, by retry depth.

    verify = verify_matrix(task, attempts)       # verify[a][t]: some program of attempt a gets test pair t
    last = verify_matrix(task, attempts, step="last")   # ... attempt a's final program gets it
    task_scores(verify, last)                     # oracle@k (k = 1..3), official; strict, strict@k from ``last``
    pooled_oracle_at_k([verify_run0, verify_run1], attempts=2, tests=1, k=3)   # over the attempts of all runs
    sampling([pool_task0, pool_task1], pool=2)     # the paper's sampling protocol over those pools

An attempt is a chain of programs: its first, then each retry on execution feedback. As
in the paper's released code (step selection "all"), an attempt gets a test pair when any
of its programs does, so a wrong retry never undoes a right program before it; scores
after r retries (``verify_matrix(..., retries=r)``) look at programs 0..r and never fall
as r grows. The strict score asks one program for every test pair: the last one.
"""

from __future__ import annotations

from typing import Any, Literal, Sequence

from memreason.datasets.arc import ArcTask
from memreason.lm.tokens import Tokens
from memreason.programs.arcmemo.arc_solver import Attempt

from ..metrics import dataset_oracle_at_k, mean_std, official_score, oracle_at_k, sample_scores, strict_at_k, strict_score

KS = (1, 2, 3)
# dspy's own exceptions that reach the solver unguarded, by the failure kind they are
_KINDS = {"LMAuthError": "auth", "LMBillingError": "billing", "AdapterParseError": "unparseable"}


def lm_failure(attempts: Sequence[Attempt]) -> dict[str, str] | None:
    """A task whose every LM call for a program failed (after retries): the last step's failure, else None."""
    steps = [s for a in attempts for s in a.steps]
    if not steps or not all(s.error for s in steps):
        return None
    kind, _, reason = steps[-1].error.partition(": ")
    return {"kind": _KINDS.get(kind, kind), "reason": reason}


def verify_matrix(
    task: ArcTask, attempts: Sequence[Attempt], retries: int | None = None, *, step: Literal["any", "last"] = "any"
) -> list[list[bool]]:
    """``verify[a][t]``: attempt a, stopped after ``retries`` retries (all its programs by default), gets test t.

    ``step="any"``: some program of the attempt gets it (the release's step selection "all");
    ``"last"``: the program the attempt ends on does."""
    rows = []
    for attempt in attempts:
        steps = attempt.steps if retries is None else attempt.steps[: retries + 1]
        if step == "last":
            steps = steps[-1:]
        outputs = [s.test_outputs for s in steps]
        rows.append(
            [
                any(t < len(out) and out[t] is not None and out[t] == pair.output for out in outputs)
                for t, pair in enumerate(task.test)
            ]
        )
    return rows


def task_scores(verify: list[list[bool]], strict: list[list[bool]] | None = None) -> dict[str, Any]:
    """oracle@k and the official score from ``verify``; the strict scores from ``strict`` (default ``verify``),
    a matrix of one program per attempt."""
    strict = verify if strict is None else strict
    n = len(verify)
    if n == 0:  # the task failed before any attempt: nothing solved
        return {
            "oracle_at_k": {str(k): 0.0 for k in KS},
            "official_score": 0.0,
            "strict_score": 0.0,
            "strict_at_k": {str(k): 0.0 for k in KS},
        }
    return {
        "oracle_at_k": {str(k): oracle_at_k(verify, k) if k <= n else None for k in KS},
        "official_score": official_score(verify),
        "strict_score": strict_score(strict),
        "strict_at_k": {str(k): strict_at_k(strict, k) if k <= n else None for k in KS},
    }


def task_record(
    item: ArcTask,
    attempts: list[Attempt],
    read: dict[str, Any],
    *,
    run: int,
    index: int,
    retries: int,
    failure: dict[str, str] | None,
    spent: dict[str, Any],
) -> dict[str, Any]:
    """One line of ``examples.jsonl``: everything about one task in one run.

    ``failure`` (kind, reason) marks a task whose LM calls failed; ``spent`` is its :class:`Meter`
    record (tokens by role and step, faults, retries)."""
    verify = verify_matrix(item, attempts)
    scores = task_scores(verify, verify_matrix(item, attempts, step="last"))
    by_retries = {
        str(r): task_scores(verify_matrix(item, attempts, r), verify_matrix(item, attempts, r, step="last"))
        for r in range(retries + 1)
    }
    scores["score_by_retries"] = {r: s["official_score"] for r, s in by_retries.items()}
    scores["by_retries"] = by_retries
    usage = spent.get("usage") or {}
    roles = {role: sum((Tokens.of(t) for t in usage.get(role, {}).values()), Tokens()) for role in ("memory", "task")}
    record = {
        "run": run,
        "index": index,
        "id": item.id,
        "read": read,
        "attempts": [a.to_json() for a in attempts],
        "predictions": [a.final.test_outputs for a in attempts],
        "verify": verify,
        "passed_train": any(a.final.passed_train for a in attempts),
        "scores": scores,
        "tokens": {role: t.as_dict() for role, t in roles.items()},
        "failure": failure,
        "error": f"{failure['kind']}: {failure['reason']}" if failure else None,
        "usage": usage,
        "faults": spent.get("faults") or {},
        "retries": spent.get("retries") or {},
        "lms": spent.get("lms") or {},
    }
    return record


def _mean_std_keyed(values: list[dict[str, float | None]]) -> tuple[dict[str, float | None], dict[str, float | None]]:
    means, stds = {}, {}
    for key in values[0]:
        column = [v[key] for v in values]
        if any(c is None for c in column):
            means[key] = stds[key] = None
        else:
            means[key], stds[key] = mean_std(column)
    return means, stds


def scores_of_run(records: list[dict[str, Any]], retries: int) -> dict[str, Any]:
    """One run's scores: each task's scores averaged over tasks."""

    def avg(get):
        values = [get(r) for r in records]
        return None if any(v is None for v in values) else sum(values) / len(values)

    def summary(get_scores):
        return {
            "oracle_at_k": {str(k): avg(lambda r: get_scores(r)["oracle_at_k"][str(k)]) for k in KS},
            "official_score": avg(lambda r: get_scores(r)["official_score"]),
            "strict_score": avg(lambda r: get_scores(r)["strict_score"]),
            "strict_at_k": {str(k): avg(lambda r: get_scores(r)["strict_at_k"][str(k)]) for k in KS},
        }

    out = summary(lambda r: r["scores"])
    out["by_retries"] = {str(n): summary(lambda r, n=n: r["scores"]["by_retries"][str(n)]) for n in range(retries + 1)}
    out["score_by_retries"] = {n: s["official_score"] for n, s in out["by_retries"].items()}
    out["passed_train"] = avg(lambda r: float(r["passed_train"]))
    return out


def aggregate_runs(per_run_scores: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean and sample std over runs of every score (std keys end in ``_std``)."""
    out: dict[str, Any] = {}
    for key in ("oracle_at_k", "strict_at_k", "score_by_retries"):
        out[key], out[f"{key}_std"] = _mean_std_keyed([s[key] for s in per_run_scores])
    for key in ("official_score", "strict_score", "passed_train"):
        out[key], out[f"{key}_std"] = mean_std([s[key] for s in per_run_scores])
    return out


def sample_pool(verify_per_run: Sequence[list[list[bool]]], *, attempts: int, tests: int) -> list[list[bool]]:
    """One task's pool of samples, ``attempts`` per run: run r's attempt a is sample ``r * attempts + a``.

    A run that made fewer attempts (its task failed before or during them) counts its
    missing attempts as solving nothing, so every run weighs the same."""
    return [row for rows in verify_per_run for row in [*rows, *[[False] * tests] * (attempts - len(rows))]]


def pooled_oracle_at_k(verify_per_run: Sequence[list[list[bool]]], *, attempts: int, tests: int, k: int) -> float:
    """oracle@k of one task (``tests`` test pairs) over the attempts of all runs pooled (:func:`sample_pool`)."""
    return oracle_at_k(sample_pool(verify_per_run, attempts=attempts, tests=tests), k)


def sampling(pools: Sequence[list[list[bool]]], *, pool: int) -> dict[str, Any]:
    """The paper's sampling protocol (ArcMemo Appendix B, Table 4) over each task's :func:`sample_pool` of
    ``pool`` samples: every sample's dataset score (``samples``: the individual run scores with one
    attempt per run), and oracle@k for k = 1..3 as the mean over the k-subsets of the pool of the
    dataset score, with the sample std over those subsets (``None`` for one subset, or past
    :data:`memreason.eval.metrics.MAX_SUBSETS` subsets) and their count; ``None`` for k > ``pool``."""
    if not pools:
        return {"pool": pool, "samples": [], "oracle_at_k": {str(k): None for k in KS}}
    return {
        "pool": pool,
        "samples": sample_scores(pools),
        "oracle_at_k": {str(k): dataset_oracle_at_k(pools, k).as_dict() if k <= pool else None for k in KS},
    }
