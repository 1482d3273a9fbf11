"""Pooled scores (oracle@k and strict@k over every run's attempts, the sampling protocol) at every retry depth."""

import json

import pytest

import memreason.eval.arc.sandbox as arc_sandbox
from memreason.datasets.arc import ArcTask
from memreason.eval.arc import ArcConfig, summarise, task_record
from memreason.eval.arc.tables import sampling_table
from memreason.eval.cli import main as eval_main
from memreason.lm import LMChoice, ScriptedEngine
from memreason.programs.arcmemo.arc_solver import Attempt, Check, Step
from tests.helpers.arc_helpers import FLIP, IDENTITY, RECOLOR, choice, small_sandbox, tiny  # noqa: F401
from tests.helpers.scripted_answers import Script

R, W = [[2]], [[9]]


def task_with(tests: int, task_id: str) -> ArcTask:
    pair = {"input": [[1]], "output": R}
    return ArcTask.from_json(task_id, {"train": [pair], "test": [pair] * tests})


def one_attempt(task: ArcTask, *programs, run: int) -> dict:
    """A task record (retries=1) of one attempt whose programs' test outputs are ``programs``."""
    steps = [Step(r, "def transform(g): ...", test=[Check(o) for o in outs]) for r, outs in enumerate(programs)]
    return json.loads(json.dumps(task_record(task, [Attempt(0, steps)], {}, run=run, index=0, retries=1, failure=None, spent={})))


@pytest.fixture
def results():
    """Two runs of one attempt, retries=1, over A (one test pair) and B (two):
    run 0: A wrong then right; B gets pair 0, then a retry gets both.
    run 1: A right at once; B gets nothing, then a retry gets pair 1 only."""
    a, b = task_with(1, "A"), task_with(2, "B")
    per_run = [
        [one_attempt(a, (W,), (R,), run=0), one_attempt(b, (R, W), (R, R), run=0)],
        [one_attempt(a, (R,), run=1), one_attempt(b, (W, W), (W, R), run=1)],
    ]
    lm = LMChoice("scripted", None, local=False)
    config = ArcConfig(program="baseline", attempts=1, retries=1, runs=2)
    return summarise(config, [a, b], per_run, [[], []], lm, lm)


def test_pooled_scores_at_every_depth_by_hand(results):
    zero, one = results["by_retries"]["0"], results["by_retries"]["1"]
    # depth 0: A's pool [F], [T] -> k1 1/2, k2 1; B's [T,F], [F,F] -> k1 (1/2 + 0)/2, k2 (1 + 0)/2
    assert zero["oracle_at_k_pooled"] == pytest.approx({"1": 3 / 8, "2": 3 / 4, "3": None})
    # depth 1: A [T], [T] -> 1, 1; B [T,T], [F,T] -> k1 (1/2 + 1)/2, k2 1
    assert one["oracle_at_k_pooled"] == pytest.approx({"1": 7 / 8, "2": 1.0, "3": None})
    # strict asks the program each attempt stopped on: depth 0 A 1/2 (k1), 1 (k2), B none; depth 1 A 1, 1; B run 0 only
    assert zero["strict_at_k_pooled"] == pytest.approx({"1": 1 / 4, "2": 1 / 2, "3": None})
    assert one["strict_at_k_pooled"] == pytest.approx({"1": 3 / 4, "2": 1.0, "3": None})
    # each sample (run) scored: depth 0 run 0 (0 + 1/2)/2, run 1 (1 + 0)/2; depth 1 (1 + 1)/2, (1 + 1/2)/2
    assert zero["sampling"]["samples"] == pytest.approx([1 / 4, 1 / 2])
    assert one["sampling"]["samples"] == pytest.approx([1.0, 3 / 4])
    assert zero["sampling"]["oracle_at_k"]["2"] == {"mean": pytest.approx(3 / 4), "std": None, "subsets": 1}
    # the run as it ended is the deepest level
    for key in ("oracle_at_k_pooled", "strict_at_k_pooled", "sampling"):
        assert results[key] == one[key]


def test_the_sampling_table_has_a_row_per_depth(results):
    lines = sampling_table([{**results, "wall_seconds": 1.0}]).splitlines()
    assert lines[0] == "| setting | pool | retries | samples | pooled k=1 | pooled k=2 | pooled k=3 |"
    assert lines[2] == "| baseline | 2 | 0 | 25.00, 50.00 | 37.50 (17.68) | 75.00 | - |"
    assert lines[3] == "| baseline | 2 | 1 | 100.00, 75.00 | 87.50 (17.68) | 100.00 | - |"
    older = {**results, "wall_seconds": 1.0, "by_retries": {k: {} for k in results["by_retries"]}}  # before per-depth pools
    assert sampling_table([older]).splitlines()[2:] == [lines[3]]


def test_a_scripted_run_pools_each_depth(tmp_path, tiny, monkeypatch):  # noqa: F811
    """--runs 2 --attempts 1 --retries 1: the flip is right at once, the recolour only on its retry."""

    def program(call):
        if "input (1 rows x 2 columns):\n12" in call.user_text:
            return {"program": FLIP}
        return {"program": RECOLOR if "previous_program" in call.user_text else IDENTITY}

    engine = ScriptedEngine(Script(program=program))
    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", lambda spec, **kw: choice(engine, spec or "embedded"))
    monkeypatch.setattr(arc_sandbox, "make_sandbox", lambda workers, wall_seconds: small_sandbox())
    out = tmp_path / "run"
    argv = ["baseline", "--split", str(tiny), "--runs", "2", "--attempts", "1", "--retries", "1", "--out", str(out)]
    assert eval_main([*argv, "--no-progress"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["by_retries"]["0"]["oracle_at_k_pooled"] == {"1": 0.5, "2": 0.5, "3": None}
    assert results["by_retries"]["1"]["oracle_at_k_pooled"] == {"1": 1.0, "2": 1.0, "3": None}
    assert results["by_retries"]["0"]["sampling"]["samples"] == [0.5, 0.5]
    assert results["oracle_at_k_pooled"] == results["by_retries"]["1"]["oracle_at_k_pooled"]
