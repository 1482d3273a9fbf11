"""ARC Prize submission files: a run written in the official format, scored by the official metric, bad files refused."""

import json

import pytest

import memreason.eval.arc.sandbox as arc_sandbox
from memreason.datasets.arc import ArcDataError, ArcTask
from memreason.eval.arc.scoring import task_record
from memreason.eval.arc.submission import read_submission, run_tasks, score_submission, to_submission
from memreason.eval.cli import main as eval_main
from memreason.lm import ScriptedEngine
from memreason.programs.arcmemo.arc_solver import Attempt, Check, Step
from tests.helpers.arc_helpers import FLIP, IDENTITY, RECOLOR, choice, flip_task, recolor_task, small_sandbox, tiny  # noqa: F401
from tests.helpers.scripted_answers import Script

RIGHT, WRONG, OTHER = [[2]], [[9]], [[7, 7]]


def task_with(tests: int, task_id: str = "t") -> ArcTask:
    pair = {"input": [[1]], "output": RIGHT}
    return ArcTask.from_json(task_id, {"train": [pair], "test": [pair] * tests})


def attempt(index: int, *programs) -> Attempt:
    """An attempt whose programs' test outputs are ``programs`` (each a tuple, one output per test input)."""
    return Attempt(index, [Step(r, "def transform(g): ...", test=[Check(o) for o in outs]) for r, outs in enumerate(programs)])


def rec(task: ArcTask, attempts: list[Attempt], run: int = 0) -> dict:
    return task_record(task, attempts, {}, run=run, index=0, retries=1, failure=None, spent={})


def test_the_official_format_by_hand():
    task = task_with(2)
    records = [rec(task, [attempt(0, (RIGHT, None)), attempt(1, (WRONG, OTHER)), attempt(2, (OTHER, OTHER))])]
    first = to_submission(records, [task])
    # one object per test input; attempt_1/2 the first two attempts' outputs; a crash is [[0]]
    assert first == {"t": [{"attempt_1": RIGHT, "attempt_2": WRONG}, {"attempt_1": [[0]], "attempt_2": OTHER}]}
    vote = to_submission(records, [task], pick="vote")
    # test 0: RIGHT, WRONG, OTHER once each (attempt order); test 1: OTHER twice, then nothing else
    assert vote == {"t": [{"attempt_1": RIGHT, "attempt_2": WRONG}, {"attempt_1": OTHER, "attempt_2": [[0]]}]}
    assert score_submission(first, [task]).per_task == {"t": 0.5}
    # a task whose run failed before any attempt submits [[0]] twice
    assert to_submission([rec(task, [])], [task])["t"][0] == {"attempt_1": [[0]], "attempt_2": [[0]]}


def test_repetitions_one_or_pooled():
    task = task_with(1)
    records = [rec(task, [attempt(0, (WRONG,))], run=0), rec(task, [attempt(0, (RIGHT,))], run=1)]
    assert to_submission(records, [task])["t"] == [{"attempt_1": WRONG, "attempt_2": [[0]]}]
    assert to_submission(records, [task], run=1)["t"] == [{"attempt_1": RIGHT, "attempt_2": [[0]]}]
    assert to_submission(records, [task], run=None)["t"] == [{"attempt_1": WRONG, "attempt_2": RIGHT}]  # run-major
    with pytest.raises(ArcDataError, match="no record of task t in run 2"):
        to_submission(records, [task], run=2)


def test_a_submission_carries_the_last_program_while_the_run_credits_any():
    """The one documented difference: a retry that undid a right program (the run's score, as the release's, keeps it)."""
    task = task_with(1)
    record = rec(task, [attempt(0, (RIGHT,), (WRONG,))])
    assert record["scores"]["official_score"] == 1.0
    assert score_submission(to_submission([record], [task]), [task]).score == 0.0


@pytest.fixture
def scripted(monkeypatch):
    """Flips right at once; recolours wrong first and right on the retry."""

    def program(call):
        if "input (1 rows x 2 columns):\n12" in call.user_text:
            return {"program": FLIP}
        return {"program": RECOLOR if "previous_program" in call.user_text else IDENTITY}

    engine = ScriptedEngine(Script(program=program))
    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", lambda spec, **kw: choice(engine, spec or "embedded"))
    monkeypatch.setattr(arc_sandbox, "make_sandbox", lambda workers, wall_seconds: small_sandbox())
    return engine


@pytest.mark.parametrize("retries, official", [("0", 0.5), ("1", 1.0)])
def test_round_trip_run_submission_score(tmp_path, tiny, scripted, retries, official, capsys):  # noqa: F811
    out = tmp_path / "run"
    argv = ["baseline", "--split", str(tiny), "--attempts", "2", "--retries", retries, "--out", str(out), "--no-progress"]
    assert eval_main(argv) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["official_score"] == official
    assert [t.id for t in run_tasks(out)] == ["a_flip", "b_recolor"]
    capsys.readouterr()
    assert eval_main(["submission", str(out), "--out", str(tmp_path / "sub" / "submission.json")]) == 0
    assert "2 tasks, 3 test inputs written to" in capsys.readouterr().out
    submission = read_submission(tmp_path / "sub" / "submission.json")
    assert set(submission) == {"a_flip", "b_recolor"} and len(submission["a_flip"]) == 2 and len(submission["b_recolor"]) == 1
    assert submission["a_flip"][1]["attempt_1"] == [[9, 8, 7]]
    assert score_submission(submission, run_tasks(out)).score == pytest.approx(official)
    for how in (["--split", str(tiny)], ["--like", str(out)]):
        assert eval_main(["score_submission", str(tmp_path / "sub" / "submission.json"), *how]) == 0
        assert capsys.readouterr().out == f"official score {100 * official:.2f}% on 2 tasks\n"


def good():
    return {
        "a_flip": [{"attempt_1": [[6, 5]], "attempt_2": [[0]]}, {"attempt_1": [[0]], "attempt_2": [[9, 8, 7]]}],
        "b_recolor": [{"attempt_1": [[1, 1]], "attempt_2": [[2, 2]]}],
    }


def test_scoring_by_hand():
    tasks = [flip_task("a_flip"), recolor_task("b_recolor")]
    found = score_submission(good(), tasks)
    assert found.per_task == {"a_flip": 1.0, "b_recolor": 1.0} and found.score == 1.0
    half = good()
    half["a_flip"][1]["attempt_2"] = [[7, 8, 9]]
    assert score_submission(half, tasks).per_task["a_flip"] == 0.5
    assert score_submission(half, tasks).score == pytest.approx(0.75)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda s: "{not json", "is not valid JSON"),
        (lambda s: [1, 2], "a JSON object of task ids"),
        (
            lambda s: {**s, "ffffffff": s["b_recolor"]},
            "task ids differ from the task set's: 1 not in the task set (e.g. ffffffff)",
        ),
        (lambda s: {"a_flip": s["a_flip"]}, "1 missing (e.g. b_recolor)"),
        (lambda s: {**s, "a_flip": s["a_flip"][:1]}, "task a_flip: the submission has 1 test inputs, the task 2"),
        (lambda s: {**s, "b_recolor": [{"attempt_1": [[2, 2]]}]}, "needs an object with attempt_1 and attempt_2"),
        (lambda s: {**s, "b_recolor": [{"attempt_1": [[2, 12]], "attempt_2": [[0]]}]}, "cells must be ints 0-9"),
        (lambda s: {**s, "b_recolor": [{"attempt_1": [[1], [1, 2]], "attempt_2": [[0]]}]}, "is not rectangular"),
    ],
)
def test_bad_submissions_are_refused_with_one_line_and_exit_2(tmp_path, tiny, change, message, capsys):  # noqa: F811
    changed = change(good())
    path = tmp_path / "submission.json"
    path.write_text(changed if isinstance(changed, str) else json.dumps(changed))
    assert eval_main(["score_submission", str(path), "--split", str(tiny)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


def test_command_line_misuse_is_one_line(tmp_path, tiny, capsys):  # noqa: F811
    path = tmp_path / "submission.json"
    path.write_text(json.dumps(good()))
    for argv, message in [
        (["score_submission", str(path), "--like", str(tmp_path), "--limit", "1"], "--like takes the run's task set"),
        (["score_submission", str(tmp_path / "none.json"), "--split", str(tiny)], "cannot read submission"),
        (["submission", str(tmp_path), "--out", str(path)], "cannot read"),
        (["submission", str(tmp_path), "--out", str(path), "--run", "first"], "--run takes a repetition number"),
    ]:
        assert eval_main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err and err.count("\n") == 1
