"""Spending limits on ``python -m optimize``: a study starts no trial past its cap, a compile stops its optimizer
(scripted engines; see tests/eval/harness/test_budget.py for the evaluation commands)."""

import json
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

import memreason.optimize.cli as cli
from memreason.optimize.lms import SCRIPTED_ENV

TASK, MEMORY = "scripted:tests.helpers.optimize_lms:task", "scripted:tests.helpers.optimize_lms:memory"
LMS = ["--lm", TASK, "--memory-lm", MEMORY]


@pytest.fixture(autouse=True)
def scripted(monkeypatch):
    monkeypatch.setenv(SCRIPTED_ENV, "1")


def trials_of(study_dir: Path, name: str = "hdr-L1"):
    storage = optuna.storages.RDBStorage(f"sqlite:///{study_dir / 'study.db'}")
    return optuna.load_study(study_name=name, storage=storage)


def errors(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error:") or "Traceback" in line]


def test_a_study_starts_no_trial_past_its_budget_and_continues_with_a_larger_one(tmp_path, capsys):
    out = tmp_path / "study"
    argv = ["hdr", "--level", "1", "--limit", "4", "--trials", "3", "--sampler", "grid", "--pruner", "none"]
    argv += ["--param", "K=1:3", "--param", "N=2", "--param", "cot=false", "--param", "per_object=false"]
    argv += ["--param", "demos=0", "--out", str(out), *LMS]
    assert cli.main([*argv, "--budget-tokens", "1"]) == 1
    err = capsys.readouterr().err
    assert "budget estimate: 12 examples (3 trials left, 4 examples a trial, memory builds besides)" in err
    [line] = errors(err)
    assert line.startswith("error: run stopped: the budget was reached (") and f"what the run has is in {out}" in line
    study = trials_of(out)
    assert [t.state for t in study.get_trials()] == [TrialState.COMPLETE]  # the first trial ran, no other started
    assert study.user_attrs["stopped"]["reason"] == "budget" and study.user_attrs["stopped"]["reached"]
    assert (out / "summary.md").exists()  # the outputs are written all the same

    assert cli.main([*argv, "--budget-tokens", "1"]) == 1  # spent already: no trial starts
    assert len(trials_of(out).get_trials()) == 1 and "the budget was reached" in errors(capsys.readouterr().err)[0]

    assert cli.main([*argv, "--budget-tokens", "10000000"]) == 0
    assert "from the 4 examples the study has" in capsys.readouterr().err
    study = trials_of(out)
    assert [t.state for t in study.get_trials()] == [TrialState.COMPLETE] * 3 and study.user_attrs["stopped"] is None


def test_a_compile_past_its_budget_stops_before_writing_and_replays_to_go_on(tmp_path, capsys):
    out = tmp_path / "compiled"
    argv = ["compile", "hdr", "--optimizer", "bootstrap", "--level", "1", "--knob", "K=2", "--knob", "N=2"]
    argv += ["--knob", "cot=false", "--trainset-size", "3", "--max-demos", "1", "--out", str(out), *LMS]
    assert cli.main([*argv, "--budget-tokens", "200"]) == 1
    err = capsys.readouterr().err
    assert "budget estimate: 4 training and validation examples" in err
    [line] = errors(err)
    assert line.startswith("error: run stopped: the budget was reached (") and "dspy_cache" in line
    assert not (out / "program.json").exists() and not (out / "compile.json").exists()
    assert cli.main([*argv, "--budget-tokens", "10000000"]) == 0  # replays the answers it paid for, then goes on
    report = json.loads((out / "compile.json").read_text())
    assert report["optimizer"] == "bootstrap" and (out / "program.json").exists()


def test_a_consolidator_compile_past_its_budget_stops(tmp_path, capsys):
    out = tmp_path / "consolidator"
    argv = ["compile", "consolidator", "--optimizer", "bootstrap", "--train-tables", "2", "--val-tables", "1"]
    argv += ["--lm", "scripted:tests.helpers.optimize_lms:consolidator", "--out", str(out), "--budget-tokens", "1"]
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert "budget estimate: 4 consolidations" in err and "the budget was reached" in errors(err)[0]
    assert not (out / "program.json").exists()
