"""python -m optimize PROGRAM --task T: studies on any registered task, a problem task's trials run through the task.

The scripted reader (tests/optimize_lms.py ``problems``) answers right with chain of thought only, so a study over
``cot`` finds cot=true.
"""

import json
from pathlib import Path

import dspy
import optuna
import pytest

import memreason.eval.cli as eval_cli
import memreason.optimize.cli as cli
from memreason.datasets.inductive import Example, Problem, Query
from memreason.eval.tasks import TASKS, ProblemTask, register_task
from memreason.optimize.lms import SCRIPTED_ENV, resolve
from memreason.optimize.space import default_space
from memreason.programs.registry import PROBLEMS

LM = "scripted:tests.helpers.optimize_lms:problems"


@pytest.fixture(autouse=True)
def scripted(monkeypatch):
    monkeypatch.setenv(SCRIPTED_ENV, "1")


class SayWord(dspy.Signature):
    """Give the word the examples' rule makes of the input word."""

    word: str = dspy.InputField()
    answer: str = dspy.OutputField()


class Capitals(ProblemTask):
    """A tiny task of one's own: each problem shows three words and their capitals, then asks one word's."""

    name = "capitals"
    signature = SayWord
    summary = "words in capitals (a test's task)"
    WORDS = ["apple", "river", "stone", "cloud", "ember", "frost"]

    def problems(self, seed=0, limit=None):
        words = self.WORDS[seed % len(self.WORDS) :] + self.WORDS[: seed % len(self.WORDS)]
        out = []
        for i in range(len(words) - 3):
            shown = words[i : i + 3]
            episodes = tuple(Example(input=w, output=w.upper(), text=w, label=w.upper()) for w in shown)
            asked = words[i + 3]
            out.append(Problem(id=str(i), episodes=episodes, queries=(Query(f"{i}-0", asked, asked, asked.upper()),)))
        return out[:limit] if limit is not None else out


@pytest.fixture
def capitals():
    register_task(Capitals)
    yield TASKS["capitals"]
    TASKS.pop("capitals", None)


def trials_of(study_dir: Path, name: str):
    storage = optuna.storages.RDBStorage(f"sqlite:///{study_dir / 'study.db'}")
    return optuna.load_study(study_name=name, storage=storage).get_trials()


def test_a_problem_tasks_space_is_the_programs_own_and_cot():
    assert default_space("hdr_checked").describe() == {"N": "1:5", "samples": "1:3", "cot": "true,false"}
    assert default_space("hdr", PROBLEMS).names == ["K", "N", "cot"]
    assert default_space("episodic_cot", PROBLEMS).names == ["cot"]


def test_a_two_trial_study_on_acre_runs_through_the_task(tmp_path, capsys, monkeypatch):
    out = tmp_path / "study"
    argv = ["episodic_cot", "--task", "acre", "--trials", "2", "--limit", "3", "--lm", LM, "--out", str(out)]
    assert cli.main([*argv, "--sampler", "grid"]) == 0
    printed = capsys.readouterr().out
    trials = trials_of(out, "episodic_cot-acre")
    assert [t.state.name for t in trials] == ["COMPLETE", "COMPLETE"]
    assert sorted(t.params["cot"] for t in trials) == [False, True]
    by_cot = {t.params["cot"]: t for t in trials}
    for cot, trial in by_cot.items():
        run = Path(trial.user_attrs["config_dir"]) / "run"
        results = json.loads((run / "results.json").read_text())
        assert results["task"] == "acre" and results["program"] == "episodic_cot" and results["examples"] == 3
        assert trial.user_attrs["accuracy"] == results["accuracy"]["mean"]
        assert trial.user_attrs["tokens"] == results["tokens"]["memory"]["total"] + results["tokens"]["task"]["total"] > 0
        knobs = json.loads((run.parent / "knobs.json").read_text())
        assert knobs == {"program": "episodic_cot", "knobs": {"cot": cot}}
        assert json.loads((run / "config.json").read_text())["knobs"] == {"cot": cot}
    best = json.loads((out / "best.json").read_text())
    assert best["task"] == "acre" and best["program"] == "episodic_cot" and "level" in best
    assert f"memreason-eval episodic_cot --task acre --config {out / 'best.json'}" in printed
    # the same command again: the study holds its trials, nothing runs
    assert cli.main([*argv, "--sampler", "grid"]) == 0
    assert "this worker ran 0 trials" in capsys.readouterr().out
    # the best configuration, evaluated as the study says
    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", resolve)
    again = tmp_path / "again"
    argv = ["episodic_cot", "--task", "acre", "--limit", "3", "--lm", LM, "--config", str(out / "best.json")]
    assert eval_cli.main([*argv, "--out", str(again), "--no-progress", "--no-report"]) == 0
    evaluated = json.loads((again / "results.json").read_text())
    assert evaluated["accuracy"]["mean"] == best["accuracy"]


def test_a_study_on_a_task_of_ones_own_finds_the_knob_that_answers(tmp_path, capsys, capitals):
    out = tmp_path / "study"
    argv = ["episodic_cot", "--task", "capitals", "--trials", "2", "--sampler", "grid", "--lm", LM, "--out", str(out)]
    assert cli.main([*argv, "--objectives", "accuracy,tokens"]) == 0
    trials = {t.params["cot"]: t for t in trials_of(out, "episodic_cot-capitals")}
    assert trials[True].user_attrs["accuracy"] == 1.0 and trials[False].user_attrs["accuracy"] == 0.0
    assert all(t.values[1] == t.user_attrs["tokens"] > 0 for t in trials.values())
    front = json.loads((out / "pareto.json").read_text())
    assert front[0]["knobs"] == {"cot": True} and front[0]["task"] == "capitals"
    assert json.loads((out / "best.json").read_text())["accuracy"] == 1.0
    run = Path(trials[True].user_attrs["config_dir"]) / "run"
    lines = [json.loads(line) for line in (run / "examples.jsonl").read_text().splitlines()]
    assert [(r["query"], r["prediction"], r["correct"]) for r in lines[:2]] == [
        ("cloud", "CLOUD", True),
        ("ember", "EMBER", True),
    ]


def test_a_memory_program_on_a_task_of_ones_own(tmp_path, capitals):
    out = tmp_path / "study"
    argv = ["hdr", "--task", "capitals", "--trials", "1", "--limit", "2", "--lm", LM, "--out", str(out)]
    assert cli.main([*argv, "--param", "K=1", "--param", "N=1", "--param", "cot=true"]) == 0
    (trial,) = trials_of(out, "hdr-capitals")
    run = Path(trial.user_attrs["config_dir"]) / "run"
    assert trial.user_attrs["accuracy"] == 1.0 and trial.user_attrs["memory_tokens"] > 0
    assert sorted(p.name for p in (run / "memory" / "run0").iterdir()) == ["0.json", "1.json"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["hdr_checked", "--trials", "2"], "hdr_checked runs on problem tasks: give --task (acre, list_functions)"),
        (["arcmemo_ps", "--task", "acre"], "arcmemo_ps does not run on acre; programs that do: "),
        (["hdr", "--task", "nosuch"], "unknown task 'nosuch'; choose from: "),
        (["hdr", "--task", "acre", "--level", "1"], "--level is not an option of a study on acre"),
        (["episodic_cot", "--task", "acre", "--memory", "m.json"], "--memory is not an option of a study on acre"),
        (["hdr_checked", "--task", "acre", "--modality", "image"], "--task acre is text only"),
        (["hdr_checked", "--task", "acre", "--param", "K=1:2"], "unknown parameter 'K'"),
        (["compile", "hdr_checked", "--optimizer", "bootstrap"], "hdr_checked runs on problem tasks only; compiling covers"),
    ],
)
def test_bad_task_requests_are_refused_in_one_line(argv, message, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert cli.main([*argv, "--lm", LM]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1
    assert not list(tmp_path.iterdir())  # nothing made


def test_a_spending_limit_counts_a_problem_tasks_runs(tmp_path, capsys, capitals):
    out = tmp_path / "study"
    argv = ["hdr", "--task", "capitals", "--trials", "3", "--limit", "1", "--lm", LM, "--out", str(out)]
    argv += ["--param", "K=1", "--param", "N=1:3", "--sampler", "grid", "--budget-tokens", "1"]
    assert cli.main(argv) == 1  # the first trial's memory and answers pass the cap: no second trial starts
    assert [t.state.name for t in trials_of(out, "hdr-capitals")] == ["COMPLETE"]
    assert "budget" in capsys.readouterr().err.lower()
