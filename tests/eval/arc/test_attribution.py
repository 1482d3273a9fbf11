"""Two runs of the same tasks compared: the 2x2 table of tasks, McNemar's exact p and a paired bootstrap CI, by hand."""

import json
import math

import pytest

from memreason.eval.arc.attribution import bootstrap_ci, compare, load_run, mcnemar_p
from memreason.eval.cli import main as eval_main
from memreason.eval.harness.errors import UsageError


def test_mcnemar_by_hand():
    # b = 8 tasks solved only by A, c = 1 only by B: p = 2 * (C(9,0) + C(9,1)) / 2^9 = 2 * 10 / 512
    assert mcnemar_p(8, 1) == 0.0390625 == mcnemar_p(1, 8)
    assert mcnemar_p(3, 0) == pytest.approx(2 * 1 / 8)
    assert mcnemar_p(0, 0) == 1.0 and mcnemar_p(5, 5) == 1.0  # never above 1
    assert mcnemar_p(10, 2) == pytest.approx(2 * sum(math.comb(12, i) for i in range(3)) / 2**12)
    assert 0 < mcnemar_p(600, 500) < 0.01  # large counts stay exact (integers), no overflow
    with pytest.raises(ValueError):
        mcnemar_p(-1, 2)


def test_bootstrap_is_seeded_and_holds_the_observed_difference():
    diffs = [1.0, 0.0, 0.0, -0.5, 1.0, 0.0, 0.5, 0.0, 1.0, 0.0]
    observed = sum(diffs) / len(diffs)
    low, high = bootstrap_ci(diffs, resamples=10_000, seed=0)
    assert low < observed < high and -0.5 <= low and high <= 1.0
    assert bootstrap_ci(diffs, resamples=10_000, seed=0) == (low, high)
    uneven = [0.1 * i**1.5 - 1 for i in range(12)]  # values off any lattice: the interval moves with the seed
    assert bootstrap_ci(uneven, resamples=50, seed=1) != bootstrap_ci(uneven, resamples=50, seed=2)
    assert bootstrap_ci([0.25] * 7, resamples=100) == (0.25, 0.25)  # no spread, no interval
    wide = bootstrap_ci(diffs, resamples=10_000, seed=0, level=0.99)
    assert wide[0] <= low and high <= wide[1]


def write_run(path, program, solved, *, runs=1, attempts=1, scores=None):
    """A run directory whose task ``i`` of run ``r`` has official score ``scores[r][i]`` (default: 1.0 if solved)."""
    path.mkdir(parents=True)
    lines = []
    for r in range(runs):
        for task, ok in solved[r].items():
            score = (scores or {}).get((r, task), 1.0 if ok else 0.0)
            lines.append({"run": r, "id": task, "scores": {"official_score": score}, "read": {}, "attempts": []})
    (path / "examples.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    results = {"task": "arc", "program": program, "runs": runs, "attempts": attempts, "oracle_at_k": {}}
    (path / "results.json").write_text(json.dumps(results))
    return path


TASKS = [f"t{i}" for i in range(10)]


@pytest.fixture
def pair(tmp_path):
    """A solves t0..t8, B solves t8 and t9: only A 8, only B 1, both 1, neither 0."""
    a = write_run(tmp_path / "a", "arcmemo_ps", [{t: t != "t9" for t in TASKS}])
    b = write_run(tmp_path / "b", "baseline", [{t: t in ("t8", "t9") for t in TASKS}])
    return a, b


def test_compare_two_runs_by_hand(pair):
    found = compare(load_run(pair[0]), load_run(pair[1] / "results.json"))
    assert (found.only_a, found.only_b, found.both, found.neither) == (8, 1, 1, 0)
    assert found.p_value == 0.0390625
    assert found.difference == pytest.approx((9 - 2) / 10)
    assert found.ci[0] <= found.difference <= found.ci[1]
    assert (found.a, found.b, found.tasks, found.runs) == ("arcmemo_ps (a)", "baseline (b)", 10, 1)
    text = found.text()
    assert "| A solved | 1 (both) | 8 (only A) |" in text and "| A unsolved | 1 (only B) | 0 (neither) |" in text
    assert "McNemar exact two-sided p = 0.03906" in text and "official score A - B: +70.00 points, 95% CI [" in text


def test_runs_pool_by_majority_and_scores_average_over_runs(tmp_path):
    # three runs: x solved by A in runs 0 and 1 (majority), y in run 2 only; B solves y in every run
    a = write_run(
        tmp_path / "a", "arcmemo_ps", [{"x": True, "y": False}, {"x": True, "y": False}, {"x": False, "y": True}], runs=3
    )
    b = write_run(tmp_path / "b", "baseline", [{"x": False, "y": True}] * 3, runs=3, scores={(0, "y"): 0.5})
    found = compare(load_run(a), load_run(b))
    assert (found.only_a, found.only_b, found.both, found.neither) == (1, 1, 0, 0)  # x only A; y B (A solved it once)
    # A: x 2/3, y 1/3; B: x 0, y (0.5 + 1 + 1) / 3: difference ((2/3 - 0) + (1/3 - 5/6)) / 2
    assert found.difference == pytest.approx(((2 / 3) + (1 / 3 - 5 / 6)) / 2)
    anyrun = compare(load_run(a), load_run(b), pool="any")
    assert (anyrun.only_a, anyrun.only_b, anyrun.both) == (1, 0, 1)
    assert "official score above 0 in more than half of its runs" in found.text()


def test_mismatched_runs_are_refused(tmp_path, pair):
    other = write_run(tmp_path / "other", "baseline", [{t: False for t in TASKS[:9]}])
    with pytest.raises(UsageError, match="different tasks: 1 only in .*a \\(e.g. t9\\)"):
        compare(load_run(pair[0]), load_run(other))
    twice = write_run(tmp_path / "twice", "baseline", [{t: False for t in TASKS}], attempts=2)
    with pytest.raises(UsageError, match="different attempts: 1 in .*, 2 in"):
        compare(load_run(pair[0]), load_run(twice))
    short = write_run(tmp_path / "short", "baseline", [{t: False for t in TASKS}], runs=1)
    (short / "results.json").write_text(json.dumps({"task": "arc", "program": "baseline", "runs": 2, "attempts": 1}))
    with pytest.raises(UsageError, match="different runs"):
        compare(load_run(pair[0]), load_run(short))
    with pytest.raises(UsageError, match="no record of task t0 in run 1"):
        compare(load_run(short), load_run(short))


def test_common_compares_the_tasks_both_runs_hold(tmp_path, pair):
    # B ran the first six tasks only (t8, t9 left out): A solves t0..t5 there, B none
    part = write_run(tmp_path / "part", "baseline", [{t: False for t in TASKS[:6]}])
    with pytest.raises(UsageError, match="different tasks"):
        compare(load_run(pair[0]), load_run(part))
    found = compare(load_run(pair[0]), load_run(part), common=True)
    assert (found.tasks, found.only_a, found.only_b, found.both, found.left_out) == (6, 6, 0, 0, (4, 0))
    assert "6 tasks (the tasks both ran; left out: 4 of A's, 0 of B's)" in found.text()
    elsewhere = write_run(tmp_path / "elsewhere", "baseline", [{"u1": False}])
    with pytest.raises(UsageError, match="no task in common"):
        compare(load_run(pair[0]), load_run(elsewhere), common=True)


def test_arc_table_compare_prints_it_after_the_tables(pair, capsys):
    from memreason.eval.arc.tables import tables

    results = {
        "task": "arc",
        "program": "arcmemo_ps",
        "retries": 0,
        "runs": 1,
        "attempts": 1,
        "examples": 10,
        "wall_seconds": 1.0,
        "oracle_at_k": {"1": 0.9, "2": None, "3": None},
        "tokens": {"memory": {"total": 0}, "task": {"total": 0}},
        "by_retries": {"0": {"oracle_at_k": {"1": 0.9, "2": None, "3": None}, "oracle_at_k_std": {}, "strict_score": 0.9}},
    }
    for path, program in zip(pair, ("arcmemo_ps", "baseline")):
        (path / "results.json").write_text(json.dumps({**results, "program": program}))
    assert eval_main(["arc_table", "--compare", str(pair[0]), str(pair[1])]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(tables([results, {**results, "program": "baseline"}]))
    assert "Attribution: A = arcmemo_ps (a), B = baseline (b); 10 tasks" in printed and "p = 0.03906" in printed
    assert eval_main(["arc_table", str(pair[0]), str(pair[1])]) == 0
    assert "Attribution" not in capsys.readouterr().out  # only when asked


@pytest.mark.parametrize("which", ["three", "mismatch", "no_examples"])
def test_arc_table_compare_refuses_with_one_line(tmp_path, pair, which, capsys):
    results = json.loads((pair[0] / "results.json").read_text())
    results.update(retries=0, examples=10, wall_seconds=1.0, tokens={"memory": {"total": 0}, "task": {"total": 0}})
    results["by_retries"] = {"0": {"oracle_at_k": {"1": 0, "2": None, "3": None}, "oracle_at_k_std": {}, "strict_score": 0}}
    for path in pair:
        (path / "results.json").write_text(json.dumps(results))
    if which == "three":
        argv, message = [str(pair[0]), str(pair[1]), str(pair[0])], "--compare takes exactly two runs, got 3"
    elif which == "mismatch":
        other = write_run(tmp_path / "other", "baseline", [{"z": True}])
        (other / "results.json").write_text(json.dumps(results))
        argv, message = [str(pair[0]), str(other)], "cannot compare runs of different tasks"
    else:
        (pair[1] / "examples.jsonl").unlink()
        argv, message = [str(pair[0]), str(pair[1])], "has no examples.jsonl"
    assert eval_main(["arc_table", "--compare", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("error: ") and message in captured.err
    assert captured.err.count("\n") == 1
