"""ARC scoring as the ArcMemo release does it: an attempt gets a test pair when any of its programs does
(scores never fall with retry depth, strict asks one program), and the sampling protocol of Appendix B."""

import itertools
import math
import random

import pytest

from memreason.datasets.arc import ArcTask
from memreason.eval.arc import ArcConfig, summarise, task_record, task_scores, verify_matrix
from memreason.eval.arc.scoring import sample_pool
from memreason.eval.arc.tables import markdown_table, sampling_table
from memreason.eval.metrics import dataset_oracle_at_k, sample_scores
from memreason.lm import LMChoice
from memreason.programs.arcmemo.arc_solver import Attempt, Check, Step

RIGHT, WRONG = [[2]], [[9]]


def task_with(tests: int, task_id: str = "t") -> ArcTask:
    """One train pair and ``tests`` test pairs, every expected output ``RIGHT``."""
    pair = {"input": [[1]], "output": RIGHT}
    return ArcTask.from_json(task_id, {"train": [pair], "test": [pair] * tests})


def step(retry: int, *outputs, passed: bool = False) -> Step:
    """A program whose test outputs are ``outputs`` (``None``: it crashed there)."""
    return Step(
        retry,
        "def transform(grid): ...",
        train=[Check(RIGHT if passed else WRONG, correct=passed)],
        test=[Check(o) for o in outputs],
    )


def record(task: ArcTask, attempts: list[Attempt], retries: int = 1) -> dict:
    return task_record(task, attempts, {}, run=0, index=0, retries=retries, failure=None, spent={})


def test_a_wrong_retry_does_not_undo_a_right_program_before_it():
    # retry 0 gets the test pair (but fails train, so it is retried); retry 1 gets it wrong
    task = task_with(1)
    rec = record(task, [Attempt(0, [step(0, RIGHT), step(1, WRONG)])])
    assert rec["scores"]["score_by_retries"] == {"0": 1.0, "1": 1.0}
    assert rec["verify"] == [[True]] and rec["scores"]["official_score"] == 1.0
    assert rec["scores"]["by_retries"]["1"]["oracle_at_k"]["1"] == 1.0
    # strict asks the program the attempt ends on: retry 0 at depth 0, retry 1 (wrong) after
    assert rec["scores"]["by_retries"]["0"]["strict_score"] == 1.0
    assert rec["scores"]["by_retries"]["1"]["strict_score"] == 0.0
    assert rec["scores"]["strict_score"] == 0.0 and rec["scores"]["strict_at_k"]["1"] == 0.0
    assert rec["predictions"] == [[WRONG]]  # what the attempt submitted: its last program's outputs


def test_strict_needs_one_program_for_every_test_pair():
    # two test pairs: the first program gets pair 0 only, its retry pair 1 only
    task = task_with(2)
    attempts = [Attempt(0, [step(0, RIGHT, WRONG), step(1, WRONG, RIGHT)])]
    assert verify_matrix(task, attempts) == [[True, True]]
    assert verify_matrix(task, attempts, step="last") == [[False, True]]
    assert verify_matrix(task, attempts, 0) == verify_matrix(task, attempts, 0, step="last") == [[True, False]]
    scores = record(task, attempts)["scores"]
    assert scores["official_score"] == 1.0  # the pairs, each by some program of the attempt
    assert scores["strict_score"] == 0.0  # no single program gets both
    assert task_scores(verify_matrix(task, attempts))["strict_score"] == 1.0  # what strict would say from the any-step matrix
    # a program that got both on its retry is strict
    both = [Attempt(0, [step(0, WRONG, WRONG), step(1, RIGHT, RIGHT, passed=True)])]
    assert record(task, both)["scores"]["strict_score"] == 1.0


def test_a_crashed_or_short_step_counts_as_wrong():
    task = task_with(2)
    attempts = [Attempt(0, [step(0, None, RIGHT)]), Attempt(1, [step(0, RIGHT)])]  # attempt 1 ran on one pair only
    assert verify_matrix(task, attempts) == [[False, True], [True, False]]


def test_scores_never_fall_with_depth_and_the_default_is_the_deepest():
    rng = random.Random(1)
    for _ in range(100):
        tests, retries = rng.randint(1, 3), rng.randint(0, 3)
        task = task_with(tests)
        attempts = [
            Attempt(
                a,
                [step(r, *(rng.choice([RIGHT, WRONG, None]) for _ in range(tests))) for r in range(rng.randint(1, retries + 1))],
            )
            for a in range(rng.randint(1, 3))
        ]
        scores = record(task, attempts, retries)["scores"]
        by_depth = [scores["score_by_retries"][str(r)] for r in range(retries + 1)]
        assert by_depth == sorted(by_depth) and by_depth[-1] == scores["official_score"]
        oracle1 = [scores["by_retries"][str(r)]["oracle_at_k"]["1"] for r in range(retries + 1)]
        assert oracle1 == sorted(oracle1) and oracle1[-1] == scores["oracle_at_k"]["1"]
        assert scores["by_retries"][str(retries)] == {k: v for k, v in scores.items() if k in scores["by_retries"]["0"]}


# -- the sampling protocol (Appendix B, Table 4) --------------------------------------------


def solved(verify: list[list[bool]]) -> dict:
    """A task record with ``verify`` (no rows: the task failed before its attempt)."""
    failure = None if verify else {"kind": "timeout", "reason": "gave up"}
    scores = task_scores(verify)
    return {
        "verify": verify,
        "attempts": [],
        "read": {},
        "passed_train": bool(verify),
        "failure": failure,
        "error": f"{failure['kind']}: {failure['reason']}" if failure else None,
        "scores": {**scores, "by_retries": {"0": scores}},
    }


def results_of(tasks: list[ArcTask], per_run: list[list[dict]], attempts: int) -> dict:
    lm = LMChoice("scripted", None, local=False)
    config = ArcConfig(program="baseline", attempts=attempts, runs=len(per_run))
    return summarise(config, tasks, per_run, [[] for _ in per_run], lm, lm)


@pytest.fixture
def three_samples() -> dict:
    """Three runs of one attempt each (samples s0, s1, s2) over tasks A (one pair), B (two pairs), C (one pair):
    A: s0 only; B: s0 gets pair 0, s1 both, s2 failed before its attempt; C: s2 only."""
    tasks = [task_with(1, "A"), task_with(2, "B"), task_with(1, "C")]
    per_run = [
        [solved([[True]]), solved([[True, False]]), solved([[False]])],
        [solved([[False]]), solved([[True, True]]), solved([[False]])],
        [solved([[False]]), solved([]), solved([[True]])],
    ]
    return results_of(tasks, per_run, attempts=1)


def test_sampling_by_hand(three_samples):
    block = three_samples["sampling"]
    assert block["pool"] == 3
    # s0: (1 + 1/2 + 0) / 3; s1: (0 + 1 + 0) / 3; s2: (0 + 0 + 1) / 3 (its missing B sample solves nothing)
    assert block["samples"] == pytest.approx([1 / 2, 1 / 3, 1 / 3])
    one, two, three = (block["oracle_at_k"][k] for k in ("1", "2", "3"))
    # k=1: the samples' scores; mean 7/18, deviations 1/9, -1/18, -1/18 -> variance (1/54) / 2
    assert one["mean"] == pytest.approx(7 / 18) and one["std"] == pytest.approx(math.sqrt(1 / 108))
    assert one["subsets"] == 3
    # k=2: {s0,s1}: (1 + 1 + 0)/3, {s0,s2}: (1 + 1/2 + 1)/3, {s1,s2}: (0 + 1 + 1)/3 -> 12/18, 15/18, 12/18
    assert two["mean"] == pytest.approx(13 / 18) and two["std"] == pytest.approx(math.sqrt(1 / 108))
    assert two["subsets"] == 3
    # k=3: the whole pool gets every pair; one subset, no std
    assert three == {"mean": pytest.approx(1.0), "std": None, "subsets": 1}
    # with one attempt per run, a sample's score is its run's official score (the paper's run0..run2)
    assert [run["official_score"] for run in three_samples["per_run"]] == pytest.approx(block["samples"])


def test_pooled_oracle_equals_the_sampling_means(three_samples):
    means = {k: v["mean"] for k, v in three_samples["sampling"]["oracle_at_k"].items()}
    assert three_samples["oracle_at_k_pooled"] == pytest.approx(means)


def test_samples_are_ordered_run_then_attempt_and_k_beyond_the_pool_is_none():
    # two runs of two attempts over one task of two pairs; run 1 stopped after its first attempt
    tasks = [task_with(2)]
    per_run = [[solved([[True, True], [False, False]])], [solved([[True, False]])]]
    results = results_of(tasks, per_run, attempts=2)
    block = results["sampling"]
    assert block["pool"] == 4 and block["samples"] == pytest.approx([1.0, 0.0, 0.5, 0.0])
    assert block["oracle_at_k"]["3"]["subsets"] == 4 and block["oracle_at_k"]["3"]["std"] is not None
    assert results["oracle_at_k_pooled"] == pytest.approx({k: v["mean"] for k, v in block["oracle_at_k"].items()})
    one_sample = results_of(tasks, [[solved([[True, False]])]], attempts=1)["sampling"]
    assert one_sample["samples"] == [0.5] and one_sample["oracle_at_k"]["1"] == {"mean": 0.5, "std": None, "subsets": 1}
    assert one_sample["oracle_at_k"]["2"] is None and one_sample["oracle_at_k"]["3"] is None
    assert sample_pool([[[True]], []], attempts=2, tests=1) == [[True], [False], [False], [False]]


def test_dataset_oracle_is_the_subset_average_and_falls_back_to_the_closed_form():
    rng = random.Random(2)
    for _ in range(50):
        n, problems = rng.randint(1, 6), rng.randint(1, 4)
        verify = [
            [[rng.random() < 0.4 for _ in range(tests)] for _ in range(n)]
            for tests in (rng.randint(1, 3) for _ in range(problems))
        ]
        scores = sample_scores(verify)
        for k in range(1, n + 1):
            z = [
                sum(
                    sum(any(verify[i][s][t] for s in c) for t in range(len(verify[i][0]))) / len(verify[i][0])
                    for i in range(problems)
                )
                / problems
                for c in itertools.combinations(range(n), k)
            ]
            got = dataset_oracle_at_k(verify, k)
            mean = sum(z) / len(z)
            assert got.mean == pytest.approx(mean) and got.subsets == len(z)
            if len(z) == 1:
                assert got.std is None
            else:
                assert got.std == pytest.approx(math.sqrt(sum((v - mean) ** 2 for v in z) / (len(z) - 1)))
            if k == 1:
                assert sorted(z) == pytest.approx(sorted(scores))
            capped = dataset_oracle_at_k(verify, k, max_subsets=0)
            assert capped.mean == pytest.approx(mean) and capped.std is None and capped.subsets == len(z)


@pytest.mark.parametrize("verify, k", [([], 1), ([[[True]], [[True], [False]]], 1), ([[[True]]], 2)])
def test_dataset_oracle_rejects_a_ragged_pool_or_a_k_past_it(verify, k):
    with pytest.raises(ValueError):
        dataset_oracle_at_k(verify, k)


def test_the_sampling_table_is_shaped_like_table_4(three_samples):
    results = {**three_samples, "wall_seconds": 1.0}
    older = {k: v for k, v in results.items() if k != "sampling"}  # a results.json from before the protocol
    lines = sampling_table([results, older]).splitlines()
    assert lines[0] == "| setting | pool | samples | pooled k=1 | pooled k=2 | pooled k=3 |"
    assert lines[2:] == ["| baseline | 3 | 50.00, 33.33, 33.33 | 38.89 (9.62) | 72.22 (9.62) | 100.00 |"]
    assert markdown_table([results]) == markdown_table([older])  # the main table stays as it was
