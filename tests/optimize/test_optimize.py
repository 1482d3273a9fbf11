"""python -m optimize: studies over knobs and demos, shared memories, workers, resumption, DSPy compilation.

The scripted LMs (tests/helpers/optimize_lms.py) make the optimum known: accuracy 1 only at K=2, N=2.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

import memreason.eval.cli as eval_cli
import memreason.optimize.cli as cli
from memreason.datasets.experience_transfer import make_level
from memreason.optimize.demos import scene_examples, training_level
from memreason.optimize.lms import SCRIPTED_ENV, resolve, scripted_engine
from memreason.optimize.objective import chunk_limits
from memreason.optimize.space import SpaceError, default_space

TASK, MEMORY = "scripted:tests.helpers.optimize_lms:task", "scripted:tests.helpers.optimize_lms:memory"
LMS = ["--lm", TASK, "--memory-lm", MEMORY]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def scripted(monkeypatch):
    monkeypatch.setenv(SCRIPTED_ENV, "1")


def trials_of(study_dir: Path, name: str = "hdr-L1"):
    storage = optuna.storages.RDBStorage(f"sqlite:///{study_dir / 'study.db'}")
    return optuna.load_study(study_name=name, storage=storage).get_trials()


def compile_main(argv):
    """``python -m optimize compile <argv>``."""
    return cli.main(["compile", *argv])


def subprocess_env(**extra):
    env = {
        **os.environ,
        SCRIPTED_ENV: "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "PYTHONPATH": str(ROOT),  # the repository root: the helpers are the package tests.helpers
        **extra,
    }
    return env


def start(argv, **env):
    return subprocess.Popen(
        [sys.executable, "-m", "optimize", *argv],
        cwd=os.getcwd(),
        env=subprocess_env(**env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


# -- the space ----------------------------------------------------------------------------


def test_declared_spaces_and_overrides():
    hdr = default_space("hdr")
    assert hdr.describe() == {"K": "1:4", "N": "1:5", "cot": "true,false", "per_object": "true,false", "demos": "0:8"}
    assert default_space("episodic").names == ["cot", "per_object", "demos"]
    assert default_space("arcmemo_ps").names == ["top_k", "attempts", "retries", "demos"]
    assert default_space("arcmemo_ps")["top_k"].values == list(range(1, 11))
    small = hdr.override(["K=1:2", "cot=false", "per_object=true", "demos=0,3"])
    assert small.grid() == {"K": [1, 2], "N": [1, 2, 3, 4, 5], "cot": [False], "per_object": [True], "demos": [0, 3]}
    assert small.size() == 20
    assert hdr.override({"N": {"low": 2, "high": 3}, "K": [2]}).grid()["N"] == [2, 3]
    for bad in (["Q=1:2"], ["K=3:1"], ["K"], ["K=a:b"]):
        with pytest.raises(SpaceError):
            hdr.override(bad)


def test_chunks_grow_to_the_whole_set():
    assert chunk_limits(30, 3) == [10, 20, 30] and chunk_limits(2, 5) == [1, 2] and chunk_limits(7, 1) == [7]


def test_demonstrations_never_come_from_the_evaluation_scenes():
    data = make_level(1)
    train = training_level(data, seed=0)
    assert train.test and not {s.text() for s in train.test} & {s.text() for s in data.test}
    examples = scene_examples(train, lambda s: s.text(), limit=12)
    assert len(examples) == 12 and len({e.count for e in examples}) > 1 and set(examples[0].inputs()) == {"query", "scene"}


# -- studies ------------------------------------------------------------------------------


def test_the_study_finds_the_known_optimum_and_writes_its_outputs(tmp_path, capsys):
    out = tmp_path / "study"
    argv = [
        "hdr",
        "--level",
        "1",
        "--limit",
        "12",
        "--trials",
        "9",
        "--sampler",
        "grid",
        "--pruner",
        "none",
        "--param",
        "K=1:3",
        "--param",
        "N=1:3",
        "--param",
        "cot=false",
        "--param",
        "per_object=false",
        "--param",
        "demos=0",
        "--out",
        str(out),
        *LMS,
    ]
    assert cli.main(argv) == 0
    trials = trials_of(out)
    assert len(trials) == 9 and all(t.state == TrialState.COMPLETE for t in trials)
    perfect = [t.params for t in trials if t.value == 1.0]
    assert perfect == [
        {"K": 2, "N": 2, "cot": False, "per_object": False, "demos": 0}
    ]  # the only configuration the script rewards
    best = json.loads((out / "best.json").read_text())
    assert (
        best["knobs"] == {"K": 2, "N": 2, "cot": False, "per_object": False}
        and best["accuracy"] == 1.0
        and best["program"] == "hdr"
    )
    for name in ("best_program.json", "history.png", "pareto.png", "summary.md"):
        assert (out / name).stat().st_size > 0
    assert "K=2, N=2, cot=False, per_object=False, demos=0: accuracy 100.0%" in (out / "summary.md").read_text()
    assert "memreason-eval hdr --level 1 --config" in capsys.readouterr().out


def test_two_objectives_give_a_pareto_front_and_the_pruner_stops_bad_trials(tmp_path):
    out = tmp_path / "multi"
    argv = [
        "hdr",
        "--level",
        "1",
        "--limit",
        "9",
        "--trials",
        "6",
        "--sampler",
        "grid",
        "--objectives",
        "accuracy,tokens",
        "--param",
        "K=1:3",
        "--param",
        "N=2:3",
        "--param",
        "cot=false",
        "--param",
        "per_object=false",
        "--param",
        "demos=0",
        "--out",
        str(out),
        *LMS,
    ]
    assert cli.main(argv) == 0
    front = json.loads((out / "pareto.json").read_text())
    assert front[0]["knobs"] == {"K": 2, "N": 2, "cot": False, "per_object": False} and front[0]["accuracy"] == 1.0
    assert all(a["tokens"] > b["tokens"] for a, b in zip(front, front[1:]))  # less accurate only if cheaper
    trials = trials_of(out)
    assert all(t.state == TrialState.COMPLETE for t in trials) and len(trials[0].values) == 2
    pruned = tmp_path / "pruned"
    argv = [
        "hdr",
        "--level",
        "1",
        "--limit",
        "12",
        "--trials",
        "9",
        "--sampler",
        "grid",
        "--sampler-seed",
        "0",
        "--chunks",
        "3",
        "--param",
        "K=1:3",
        "--param",
        "N=1:3",
        "--param",
        "cot=false",
        "--param",
        "per_object=false",
        "--param",
        "demos=0",
        "--out",
        str(pruned),
        *LMS,
    ]
    assert cli.main(argv) == 0
    states = [t.state for t in trials_of(pruned)]
    assert TrialState.PRUNED in states and states.count(TrialState.COMPLETE) + states.count(TrialState.PRUNED) == 9
    assert all(t.user_attrs["examples"] < 12 for t in trials_of(pruned) if t.state == TrialState.PRUNED)


def test_the_memory_cache_is_hit_when_only_demonstrations_change(tmp_path):
    out = tmp_path / "demos"
    memory = scripted_engine(MEMORY)
    before = len(memory.calls)
    argv = [
        "hdr",
        "--level",
        "1",
        "--limit",
        "4",
        "--trials",
        "2",
        "--sampler",
        "grid",
        "--pruner",
        "none",
        "--param",
        "K=2",
        "--param",
        "N=2",
        "--param",
        "cot=false",
        "--param",
        "per_object=false",
        "--param",
        "demos=0,3",
        "--out",
        str(out),
        *LMS,
    ]
    assert cli.main(argv) == 0
    assert len(memory.calls) - before == 2 + 2 * 2  # one consolidation: K factor passes, N generate + verify rounds
    trials = sorted(trials_of(out), key=lambda t: t.number)
    assert [t.user_attrs["memory_cache"] for t in trials] == ["built", "hit"]
    assert trials[0].user_attrs["tokens"] > 0 and trials[0].user_attrs["memory_tokens"] == trials[1].user_attrs["memory_tokens"]
    states = {t.params["demos"]: json.loads((Path(t.user_attrs["config_dir"]) / "program.json").read_text()) for t in trials}
    assert len(states[3]["reasoner.answer"]["demos"]) == 3 and states[0]["reasoner.answer"]["demos"] == []
    shown = states[3]["reasoner.answer"]["demos"][0]
    assert set(shown) == {"query", "scene", "count"}  # the scene, never the memory, never an evaluation scene
    assert shown["scene"] not in {s.text() for s in make_level(1).test}


def test_a_killed_study_resumes_with_its_trials_intact(tmp_path):
    out = tmp_path / "killed"
    argv = [
        "hdr",
        "--level",
        "1",
        "--limit",
        "6",
        "--trials",
        "4",
        "--sampler",
        "grid",
        "--pruner",
        "none",
        "--param",
        "K=1:2",
        "--param",
        "N=2:3",
        "--param",
        "cot=false",
        "--param",
        "per_object=false",
        "--param",
        "demos=0",
        "--heartbeat",
        "1",
        "--out",
        str(out),
        *LMS,
    ]
    worker = start(argv, SCRIPTED_TASK_DELAY="0.2")  # trials (1.2 s) long enough to be caught mid-way on a busy machine
    deadline = time.time() + 60
    while time.time() < deadline:
        time.sleep(0.1)
        if (out / "study.db").exists():
            try:
                trials = trials_of(out)
            except Exception:
                continue
            working = [t for t in trials if t.state == TrialState.RUNNING and "config_dir" in t.user_attrs]  # beating
            if any(t.state == TrialState.COMPLETE for t in trials) and working:
                break
    worker.send_signal(signal.SIGKILL)
    worker.wait()
    kept = {t.number: (t.params, t.value) for t in trials_of(out) if t.state == TrialState.COMPLETE}
    assert 1 <= len(kept) < 4
    time.sleep(4.0)  # the dead worker's running trial is stale after 2 heartbeats (room for a loaded machine)
    assert cli.main(argv) == 0
    trials = trials_of(out)
    assert {t.number: (t.params, t.value) for t in trials if t.number in kept} == kept  # intact
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    assert len(complete) == 4 and len({json.dumps(t.params, sort_keys=True) for t in complete}) == 4
    assert any(t.state == TrialState.FAIL for t in trials)  # the one that died, retried as a new trial


def test_two_worker_processes_share_a_sqlite_study_and_finish_t_trials(tmp_path):
    out = tmp_path / "shared"
    total = 6
    argv = [
        "hdr",
        "--level",
        "1",
        "--limit",
        "4",
        "--trials",
        str(total),
        "--sampler",
        "grid",
        "--pruner",
        "none",
        "--param",
        "K=1:3",
        "--param",
        "N=1:3",
        "--param",
        "cot=false",
        "--param",
        "per_object=false",
        "--param",
        "demos=0",
        "--storage",
        f"sqlite:///{tmp_path / 'shared.db'}",
        "--study",
        "shared",
        "--out",
        str(out),
        *LMS,
    ]
    workers = [start(argv, SCRIPTED_TASK_DELAY="0.05") for _ in range(2)]
    for w in workers:
        assert w.wait(timeout=120) == 0, w.stderr.read()
    storage = optuna.storages.RDBStorage(f"sqlite:///{tmp_path / 'shared.db'}")
    trials = optuna.load_study(study_name="hdr-shared", storage=storage).get_trials()
    finished = [t for t in trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
    assert len(finished) == total
    assert all(t.user_attrs.get("surplus") for t in trials if t.state == TrialState.FAIL)  # created in a race, never run
    assert len({t.user_attrs["worker"] for t in finished}) == 2  # both worked
    assert len({t.number for t in finished}) == total
    dirs = {t.user_attrs["config_dir"] for t in finished}  # the grid gives workers distinct points (a rare race may repeat one)
    answered = sum(len((Path(d) / "examples.jsonl").read_text().splitlines()) for d in dirs)
    assert answered == 4 * len(dirs)  # every scene of every configuration answered exactly once, by one worker


# -- compile ------------------------------------------------------------------------------


@pytest.mark.parametrize("optimizer", ["bootstrap", "mipro", "gepa", "simba"])
def test_each_optimizer_compiles_and_python_m_eval_loads_the_state(tmp_path, monkeypatch, optimizer):
    out = tmp_path / optimizer
    argv = [
        "hdr",
        "--optimizer",
        optimizer,
        "--level",
        "1",
        "--knob",
        "K=3",
        "--knob",
        "N=2",
        "--knob",
        "cot=false",
        "--trainset-size",
        "4",
        "--candidates",
        "2",
        "--budget",
        "12",
        "--max-demos",
        "2",
        "--out",
        str(out),
        *LMS,
    ]
    assert compile_main(argv) == 0
    report = json.loads((out / "compile.json").read_text())
    assert report["optimizer"] == optimizer and 0 <= report["train_score"] <= 1
    assert report["wrong_hypotheses"] == ["Notes (round 2)."]  # GEPA's feedback names it
    state = json.loads((out / "program.json").read_text())
    assert all(set(d) <= {"query", "scene", "count", "reasoning", "augmented"} for d in state["reasoner.answer"]["demos"])
    if optimizer == "bootstrap":
        assert state["reasoner.answer"]["demos"]
    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", resolve)
    run = tmp_path / f"eval-{optimizer}"
    assert (
        eval_cli.main(
            [
                "hdr",
                "--level",
                "1",
                "--limit",
                "3",
                "--config",
                str(out / "config.json"),
                "--program-state",
                str(out / "program.json"),
                "--out",
                str(run),
                "--no-progress",
                "--no-report",
                *LMS,
            ]
        )
        == 0
    )
    config = json.loads((run / "config.json").read_text())
    assert config["knobs"] == {"K": 3, "N": 2, "cot": False} and len(config["program_state_sha256"]) == 64
    results = json.loads((run / "results.json").read_text())
    assert results["config"]["knobs"] == {"K": 3, "N": 2, "cot": False} and results["examples"] == 3


def test_gepa_metric_gives_feedback_on_the_scene_and_the_memory():
    from memreason.optimize.metrics import CountFeedback

    data = make_level(1)
    train = training_level(data, seed=0)
    example = scene_examples(train, lambda s: s.text(), limit=1)[0]
    metric = CountFeedback(
        data, ["Red objects are normal on a white background.", *data.oracle_hypotheses[1:]], scenes=train.test
    )
    wrong = type("P", (), {"count": example.count + 1})()
    assert metric(example, wrong) == 0.0
    out = metric(example, wrong, None, "reasoner.answer", [])
    assert out.score == 0.0 and f"answered {example.count + 1}" in out.feedback
    assert "Red objects are normal" in out.feedback and "(1) " in out.feedback


# -- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "main, argv, message",
    [
        (cli.main, ["nosuch", "--level", "1"], "unknown program"),
        (cli.main, ["hdr", "--level", "1", "--param", "K=4:1"], "is empty"),
        (cli.main, ["hdr", "--level", "1", "--param", "Q=1:2"], "unknown parameter"),
        (cli.main, ["hdr", "--level", "1", "--storage", "nosuchdb://x"], "cannot open storage"),
        (cli.main, ["hdr", "--level", "1", "--objectives", "speed"], "--objectives"),
        (cli.main, ["hdr", "--level", "1", "--sampler", "annealing"], "argument --sampler: invalid choice: 'annealing'"),
        (compile_main, ["hdr", "--level", "1", "--optimizer", "adam"], "argument --optimizer: invalid choice: 'adam'"),
        (compile_main, ["nosuch", "--optimizer", "gepa"], "unknown program"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, main, argv, message):
    assert main([*argv, *LMS]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


def test_a_state_that_does_not_fit_is_refused(tmp_path, capsys, monkeypatch):
    from memreason.programs import build_program

    build_program("hdr", cot=True).save(str(tmp_path / "cot.json"))
    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", resolve)
    argv = ["hdr", "--level", "1", "--program-state", str(tmp_path / "cot.json"), "--out", str(tmp_path / "run"), *LMS]
    (tmp_path / "plain.json").write_text(json.dumps({"program": "hdr", "knobs": {"cot": False}}))
    assert eval_cli.main([*argv, "--config", str(tmp_path / "plain.json")]) == 2
    assert "does not fit hdr" in capsys.readouterr().err
