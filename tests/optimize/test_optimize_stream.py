"""python -m optimize <stream program> --task rg:NAME: studies of a stream program's knobs and run options.

The scripted solver (tests/helpers/stream_answers.py) answers Game-of-24 problems right when their first number is
odd, so a trial's accuracy is the share of such items among the tuning items, whatever the knobs.
"""

import json
from pathlib import Path

import optuna
import pytest

import memreason.optimize.cli as cli
from memreason.datasets.gym import GymData
from memreason.eval.tasks import get_task
from memreason.optimize.held_out import TuningStream, tuning_seed
from memreason.optimize.lms import SCRIPTED_ENV
from memreason.optimize.space import default_space, run_options, split_params

LM = "scripted:tests.helpers.stream_answers:scripted"


@pytest.fixture(autouse=True)
def scripted(monkeypatch):
    monkeypatch.setenv(SCRIPTED_ENV, "1")


def trials_of(study_dir: Path, name: str):
    storage = optuna.storages.RDBStorage(f"sqlite:///{study_dir / 'study.db'}")
    return optuna.load_study(study_name=name, storage=storage).get_trials()


def test_a_stream_programs_space_is_its_knobs_and_the_runs_options():
    assert default_space("fewshot").describe() == {
        "k": "1:8",
        "cot": "true,false",
        "batch": "0,5,10,20",
        "verify": "0:4",
        "verify_margin": "0:2",
    }
    unverified = default_space("fewshot", verifiable=False)  # writes nobody can verify: none verified
    assert unverified.names == ["k", "cot", "batch", "verify"] and unverified["verify"].values == [0]
    assert default_space("stream_baseline").names == ["cot"]  # no memory: nothing to batch or verify
    params = {"k": 2, "cot": True, "batch": 5, "verify": 1, "verify_margin": 0}
    assert split_params(params) == ({"k": 2, "cot": True}, 0)
    assert run_options(params) == {"batch": 5, "verify": 1, "verify_margin": 0}


def test_tuning_items_are_never_the_reported_ones():
    task = get_task("rg:puzzle24")
    tuning = TuningStream(task, report_seed=3, report_size=12)
    assert tuning.seed == tuning_seed(3) != 3 and tuning.name == task.name and tuning.checker is task.checker
    data = tuning.data({})
    reported = {item.question for item in GymData("puzzle24").items(3, 12, distinct=True)}
    tuned = data.items(tuning.seed, 12, distinct=True)
    assert len(tuned) == 12 and not reported & {item.question for item in tuned}
    # an item the reported ones ask is skipped, the next taken: the tuning stream itself, reported
    itself = TuningStream(task, report_seed=tuning.seed, report_size=3).data({})
    kept = itself.items(tuning.seed, 4, distinct=True)
    assert [item.id for item in kept] == [item.id for item in GymData("puzzle24").items(tuning.seed, 7, distinct=True)][3:]


def test_a_two_trial_study_on_a_stream_task(tmp_path, capsys):
    out = tmp_path / "study"
    argv = ["fewshot", "--task", "rg:puzzle24", "--trials", "2", "--size", "4", "--seed-size", "2", "--lm", LM]
    argv += ["--param", "k=1:2", "--param", "cot=true", "--param", "verify=0:1", "--sampler", "grid", "--out", str(out)]
    argv += ["--param", "batch=2", "--param", "verify_margin=0", "--report-size", "8"]
    assert cli.main(argv) == 0
    printed = capsys.readouterr().out
    trials = trials_of(out, "fewshot-rg-puzzle24")
    assert [t.state.name for t in trials] == ["COMPLETE", "COMPLETE"]
    points = sorted((t.params["k"], t.params["verify"]) for t in trials)
    assert len(set(points)) == 2 and all(set(t.params) == {"k", "cot", "batch", "verify", "verify_margin"} for t in trials)
    reported = {item.question for item in GymData("puzzle24").items(0, 8, distinct=True)}
    for trial in trials:
        run = Path(trial.user_attrs["config_dir"]) / "run"
        config = json.loads((run / "config.json").read_text())
        results = json.loads((run / "results.json").read_text())
        assert config["knobs"] == {"k": trial.params["k"], "cot": True}  # the program's knobs ...
        assert (config["batch"], config["verify"], config["verify_margin"]) == (2, trial.params["verify"], 0)  # ... the run's
        assert config["seed"] == tuning_seed(0) and results["examples"] == 4 and results["task"] == "rg:puzzle24"
        lines = [json.loads(line) for line in (run / "examples.jsonl").read_text().splitlines()]
        assert len(lines) == 4 and not reported & {line["question"] for line in lines}
        assert trial.user_attrs["accuracy"] == results["accuracy"]["mean"]
        assert trial.value == trial.user_attrs["accuracy"]
        assert trial.user_attrs["tokens"] == results["tokens"]["memory"]["total"] + results["tokens"]["task"]["total"] > 0
        assert (trial.params["verify"] > 0) == (results["verification"] is not None)
    best = json.loads((out / "best.json").read_text())
    assert best["task"] == "rg:puzzle24" and set(best["knobs"]) == {"k", "cot"} and best["tuning_seed"] == tuning_seed(0)
    assert best["options"] == {"batch": 2, "verify": best["options"]["verify"], "verify_margin": 0}
    assert "memreason-eval fewshot --task rg:puzzle24 --size 8 --seed-size 2 --batch 2" in printed
    assert f"--config {out / 'best.json'}" in printed
    # the same command again: the study holds its trials, nothing runs
    assert cli.main(argv) == 0
    assert "this worker ran 0 trials" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["fewshot", "--task", "rg:puzzle24", "--param", "depth=1:2"], "unknown parameter 'depth'"),
        (["hdr", "--task", "rg:puzzle24"], "hdr does not run on rg:puzzle24"),
        (["fewshot", "--trials", "2"], "fewshot runs on stream tasks: give --task"),
        (["fewshot", "--task", "rg:nosuchgym"], "unknown reasoning-gym dataset 'nosuchgym'"),
        (["fewshot", "--task", "rg:puzzle24", "--level", "1"], "--level is not an option of a study on rg:puzzle24"),
        (["hdr", "--level", "1", "--size", "3"], "--size is an option of a study on a stream task"),
        (
            ["fewshot", "--task", "rg:puzzle24", "--learn-from", "self", "--param", "verify=1:2"],
            "verify: writes learn from self here",
        ),
        (["fewshot", "--task", "rg:puzzle24", "--param", "batch=-1"], "batch: whole numbers from 0"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, message, tmp_path, capsys):
    out = tmp_path / "study"
    assert cli.main([*argv, "--lm", LM, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and err.startswith("error: ")
    assert not out.exists()
