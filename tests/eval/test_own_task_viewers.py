"""A problem task of the user's own, registered from outside the library, is run, shown and reported (with a paired
comparison) by the same commands as the library's tasks: the viewers ask the run's Task and name none."""

from __future__ import annotations

import json

import dspy
import pytest

from memreason.datasets.inductive import Example, Problem, Query
from memreason.eval.cli import main as eval_main
from memreason.eval.tasks import TASKS, ProblemTask, register_task, task_of
from memreason.lm import LMChoice, ScriptedEngine

NAME = "parity_of_mine"


class SayParity(dspy.Signature):
    """Say whether the number is even or odd, as the labelled numbers in memory are."""

    number: int = dspy.InputField(desc="the number")
    answer: str = dspy.OutputField(desc="even or odd")


class Parity(ProblemTask):
    name = NAME
    signature = SayParity
    summary = "a test's own: even or odd"

    def problems(self, seed: int = 0, limit: int | None = None) -> list[Problem]:
        found = []
        for p, asked in enumerate((2, 7, 4)):  # the scripted reader always says "even": 7 is answered wrong
            shown = [asked + 2 * k + 1 for k in (1, 2)] + [asked + 2 * 3]
            episodes = tuple(Example(n, _parity(n), str(n), _parity(n)) for n in shown)
            found.append(Problem(f"p{p}", episodes, (Query(f"number-{asked}", asked, str(asked), _parity(asked)),)))
        return found[:limit]


def _parity(n: int) -> str:
    return "even" if n % 2 == 0 else "odd"


@pytest.fixture
def parity(monkeypatch):
    register_task(Parity)
    engine = ScriptedEngine(lambda call: {"reasoning": "like the numbers in memory", "answer": "even"})
    monkeypatch.setattr(
        "memreason.eval.harness.lms.resolve_lm", lambda spec, **kw: LMChoice(spec or "embedded", engine.lm(), local=False)
    )
    yield engine
    TASKS.pop(NAME, None)


def test_a_task_of_ones_own_is_run_shown_and_reported_with_a_paired_test(parity, tmp_path, capsys):
    runs = [tmp_path / "one", tmp_path / "two"]
    for run in runs:
        argv = ["episodic_cot", "--task", NAME, "--out", str(run), "--no-progress", "--no-report"]
        assert eval_main(argv) == 0
    results = json.loads((runs[0] / "results.json").read_text())
    assert results["task"] == NAME and results["examples"] == 3 and task_of(results).name == NAME
    assert results["accuracy"]["mean"] == pytest.approx(2 / 3)

    capsys.readouterr()
    assert eval_main(["show", str(runs[0]), "--width", "200"]) == 0
    shown = capsys.readouterr().out
    assert "each problem builds its own memory" in shown  # the default view: a memory per problem
    assert all(f"number-{n}" in shown for n in (2, 7, 4))  # a line per query
    assert "accuracy 66.7% on 3 examples" in shown and f"task {NAME}" in shown

    assert eval_main(["show", str(runs[0]), "--wrong", "--width", "200"]) == 0
    wrong = capsys.readouterr().out
    assert "number-7" in wrong and "prediction even, target odd" in wrong and "number-2 (run" not in wrong
    assert eval_main(["show", str(runs[0]), "--id", "number-4", "--width", "200"]) == 0
    assert "problem p2, query: 4" in capsys.readouterr().out

    out = tmp_path / "compare"
    assert eval_main(["report", str(runs[0]), str(runs[1]), "--out", str(out)]) == 0
    report = (out / "report.md").read_text()
    assert f"| episodic_cot {NAME} [one] | {NAME} |" in report  # the accuracy row, named by the task
    assert "| 66.7 ± 0.0 | [" in report  # with its 95% CI
    assert "## Paired tests" in report and "| A | B | queries | right in A only |" in report
    assert f"| episodic_cot {NAME} [two] | episodic_cot {NAME} [one] | 3 |" in report  # the three queries, paired
    assert "Right or wrong per query (answer right;" in report

    TASKS.pop(NAME)  # its module not imported: no registered task claims the runs, and the defaults read them
    assert task_of(results) is None
    assert eval_main(["show", str(runs[0]), "--wrong", "--width", "200"]) == 0
    assert "prediction even, target odd" in capsys.readouterr().out
    assert eval_main(["report", str(runs[0]), str(runs[1]), "--out", str(tmp_path / "again")]) == 0
    again = (tmp_path / "again" / "report.md").read_text()
    assert f"| episodic_cot {NAME} [two] | episodic_cot {NAME} [one] | 3 |" in again and "| 66.7 ± 0.0 | [" in again
