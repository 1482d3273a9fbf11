"""python -m optimize on ARC programs: a study with a known optimum, resumed trials, compilation, bad input.

The scripted LMs (tests/helpers/optimize_arc_lms.py) make the optimum known: the solver is right only
on a retry with execution feedback, so accuracy is 1 exactly when ``retries >= 1``.
"""

import hashlib
import json
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

import memreason.eval.arc.sandbox as arc_sandbox
import memreason.optimize.cli as cli
import memreason.programs.shared.shared_sandbox as shared_sandbox
from memreason.datasets.arc import puzzle_text
from memreason.eval.cli import main as eval_main
from memreason.optimize.demos import arc_training_tasks
from memreason.optimize.lms import SCRIPTED_ENV, resolve, scripted_engine
from memreason.programs import build_program
from tests.helpers.arc_helpers import (
    CRASH,
    FLIP,
    RECOLOR,
    flip_task,
    memory_file,  # noqa: F401  (a fixture)
    puzzle_of,
    recolor_task,
    sandbox,  # noqa: F401  (a fixture)
    small_sandbox,
    with_pair,
    write_tasks,
)

TASK, MEMORY, ORACLE = (f"scripted:tests.helpers.optimize_arc_lms:{name}" for name in ("task", "memory", "oracle"))
LMS = ["--lm", TASK, "--memory-lm", MEMORY]
SMALL = ["--param", "top_k=1", "--param", "attempts=1", "--param", "demos=0"]  # with --param retries=...: a small grid
TASKS = [flip_task("a_flip"), recolor_task("b_recolor"), with_pair(flip_task(), "c_flip", [[4, 5]], [[5, 4]])]
SOLUTION = {"a_flip": FLIP, "b_recolor": RECOLOR, "c_flip": FLIP}
RECOLOUR_PUZZLE = "input (1 rows x 2 columns):\n10"  # only the recolour task's puzzle holds it


@pytest.fixture(autouse=True)
def scripted(monkeypatch, sandbox):
    """Scripted LMs by name; programs run in the test sandbox (the CLIs' ARC programs use the shared one)."""
    monkeypatch.setenv(SCRIPTED_ENV, "1")
    monkeypatch.setattr(shared_sandbox, "_shared", sandbox)
    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", resolve)
    monkeypatch.setattr(arc_sandbox, "make_sandbox", lambda workers, wall_seconds: small_sandbox())


@pytest.fixture
def tiny(tmp_path) -> Path:
    return write_tasks(tmp_path / "tiny", *TASKS)


def compile_main(argv):
    """``python -m optimize compile <argv>``."""
    return cli.main(["compile", *argv])


def trials_of(study_dir: Path, name: str = "arcmemo_ps-tiny"):
    storage = optuna.storages.RDBStorage(f"sqlite:///{study_dir / 'study.db'}")
    return sorted(optuna.load_study(study_name=name, storage=storage).get_trials(), key=lambda t: t.number)


def records(config_dir: str | Path) -> list[dict]:
    return [json.loads(line) for line in (Path(config_dir) / "examples.jsonl").read_text().splitlines()]


def calls_since(spec: str, before: int) -> list:
    return scripted_engine(spec).calls[before:]


def counts() -> tuple[int, int]:
    return len(scripted_engine(TASK).calls), len(scripted_engine(MEMORY).calls)


def lms_of(state: dict) -> list:
    return [v["lm"] for v in state.values() if isinstance(v, dict) and "lm" in v]


def evaluate(*argv: str) -> dict:
    assert eval_main([*argv, "--no-progress", "--no-report"]) == 0
    return json.loads((Path(argv[argv.index("--out") + 1]) / "results.json").read_text())


# -- studies ------------------------------------------------------------------------------


def test_the_arc_study_finds_the_retry_and_python_m_eval_reproduces_it(tmp_path, tiny, memory_file, capsys):
    out = tmp_path / "study"
    argv = [
        "arcmemo_ps",
        "--split",
        str(tiny),
        "--memory",
        str(memory_file),
        "--trials",
        "2",
        "--sampler",
        "grid",
        "--pruner",
        "none",
        "--param",
        "retries=0:1",
        *SMALL,
        "--out",
        str(out),
        *LMS,
    ]
    task_before, memory_before = counts()
    assert cli.main(argv) == 0
    trials = trials_of(out)
    assert all(t.state == TrialState.COMPLETE for t in trials)
    assert sorted((t.params["retries"], t.value) for t in trials) == [(0, 0.0), (1, 1.0)]  # only the retry solves
    best = json.loads((out / "best.json").read_text())
    assert best["knobs"] == {"top_k": 1, "attempts": 1, "retries": 1} and best["demos"] == 0 and best["accuracy"] == 1.0
    assert (best["program"], best["split"], best["memory"]) == ("arcmemo_ps", str(tiny), str(memory_file))
    by_retries = {t.params["retries"]: t for t in trials}
    for retries, trial in by_retries.items():  # every task recorded once, with the programs the script wrote
        done = records(trial.user_attrs["config_dir"])
        assert [r["id"] for r in done] == [t.id for t in TASKS]
        assert all([s["program"] for s in r["attempts"][0]["steps"]] == [CRASH, SOLUTION[r["id"]]][: retries + 1] for r in done)
        attrs = trial.user_attrs
        assert attrs["examples"] == 3 and attrs["memory_tokens"] > 0 and attrs["task_tokens"] > 0
        assert done[0]["read"]["selected"] == ["flip rows"]
    task_calls, memory_calls = calls_since(TASK, task_before), calls_since(MEMORY, memory_before)
    assert len(task_calls) == 3 + 3 and len(memory_calls) == 3  # what both configurations ask is asked once (the cache)
    assert all("`selected`" not in c.system for c in task_calls)  # selection runs on the memory LM
    cheap, dear = by_retries[0].user_attrs, by_retries[1].user_attrs  # cached answers cost what they took, for either trial
    assert cheap["memory_tokens"] == dear["memory_tokens"] and 0 < cheap["task_tokens"] < dear["task_tokens"]
    state = json.loads((out / "best_program.json").read_text())
    assert state and all(lm is None for lm in lms_of(state))  # the study's LMs are never saved with the state
    hint = f"memreason-eval arcmemo_ps --split {tiny} --memory {memory_file} --config {out / 'best.json'}"
    assert hint in capsys.readouterr().out
    results = evaluate(
        "arcmemo_ps",
        "--split",
        str(tiny),
        "--memory",
        str(memory_file),
        "--config",
        str(out / "best.json"),
        "--program-state",
        str(out / "best_program.json"),
        "--out",
        str(tmp_path / "eval"),
        *LMS,
    )
    assert (results["attempts"], results["retries"], results["config"]["top_k"]) == (1, 1, 1)  # the knobs of best.json
    assert results["official_score"] == 1.0 and results["examples"] == 3


def test_an_interrupted_trial_continues_from_its_examples_without_asking_again(tiny, memory_file, monkeypatch):
    argv = [
        "arcmemo_ps",
        "--split",
        str(tiny),
        "--memory",
        str(memory_file),
        "--trials",
        "1",
        "--sampler",
        "grid",
        "--pruner",
        "none",
        "--chunks",
        "1",
        "--param",
        "retries=1",
        *SMALL,
        "--no-cache",
        *LMS,
    ]
    monkeypatch.setenv("ARC_INTERRUPT_ON", RECOLOUR_PUZZLE)
    assert cli.main(argv) == 130  # Ctrl-C while the second task is solved
    out = Path("runs/optimize/arcmemo_ps-tiny")  # the split directory's name, not its path
    (config_dir,) = (out / "configs").iterdir()
    kept = (config_dir / "examples.jsonl").read_text()
    done = [json.loads(line)["id"] for line in kept.splitlines()]  # a_flip; c_flip too if it had started (one thread)
    assert done[0] == "a_flip" and "b_recolor" not in done
    missing = [t for t in TASKS if t.id not in done]
    monkeypatch.delenv("ARC_INTERRUPT_ON")
    task_before, memory_before = counts()
    assert cli.main(argv) == 0
    task_calls, memory_calls = calls_since(TASK, task_before), calls_since(MEMORY, memory_before)
    asked = {puzzle_of(c).strip() for c in task_calls + memory_calls}
    assert asked == {puzzle_text(t).strip() for t in missing}  # never a finished task again
    assert len(task_calls) == 2 * len(missing) and len(memory_calls) == len(missing)
    text = (config_dir / "examples.jsonl").read_text()
    assert text.startswith(kept) and sorted(r["id"] for r in records(config_dir)) == [t.id for t in TASKS]
    trials = trials_of(out)
    assert [t.state for t in trials] == [TrialState.FAIL, TrialState.COMPLETE]
    assert trials[1].value == 1.0 and trials[1].user_attrs["config_dir"] == str(config_dir)


def test_study_demos_are_bootstrapped_from_training_tasks_only(tmp_path, tiny, memory_file):
    out = tmp_path / "study"
    argv = [
        "arcmemo_ps",
        "--split",
        str(tiny),
        "--memory",
        str(memory_file),
        "--trials",
        "1",
        "--sampler",
        "grid",
        "--pruner",
        "none",
        "--param",
        "retries=0",
        "--param",
        "top_k=1",
        "--param",
        "attempts=1",
        "--param",
        "demos=1",
        "--train-size",
        "2",
        "--out",
        str(out),
        "--lm",
        ORACLE,
        "--memory-lm",
        MEMORY,
    ]
    assert cli.main(argv) == 0
    (trial,) = trials_of(out)
    assert trial.value == 1.0
    state = json.loads((Path(trial.user_attrs["config_dir"]) / "program.json").read_text())
    (demo,) = state["solver.solve"]["demos"]
    training = {puzzle_text(t).strip() for t in arc_training_tasks([t.id for t in TASKS], limit=2)}
    assert demo["puzzle"].strip() in training and "task" not in demo
    assert state["solver.retry"]["demos"] == [] and all(lm is None for lm in lms_of(state))


# -- compile ------------------------------------------------------------------------------


@pytest.mark.parametrize("lm, solved", [(ORACLE, 1.0), (TASK, 0.0)])
def test_bootstrap_compiles_an_arc_program_and_python_m_eval_loads_the_state(tmp_path, tiny, memory_file, lm, solved):
    out = tmp_path / "compiled"
    argv = [
        "arcmemo_ps",
        "--optimizer",
        "bootstrap",
        "--split",
        str(tiny),
        "--memory",
        str(memory_file),
        "--knob",
        "attempts=1",
        "--knob",
        "top_k=1",
        "--trainset-size",
        "2",
        "--max-demos",
        "1",
        "--out",
        str(out),
        "--lm",
        lm,
        "--memory-lm",
        MEMORY,
    ]
    assert compile_main(argv) == 0
    report = json.loads((out / "compile.json").read_text())
    assert report["train_score"] == solved and report["trainset"] == 2  # the oracle solves training tasks; no retries here
    state = json.loads((out / "program.json").read_text())
    demos = state["solver.solve"]["demos"]
    assert report["demos"]["solver.solve"] == len(demos) == int(solved)  # a demo is kept only from a solved task
    training = {puzzle_text(t).strip() for t in arc_training_tasks([t.id for t in TASKS], limit=4)[:2]}
    assert all(d["puzzle"].strip() in training and "task" not in d for d in demos)  # never an evaluation task
    assert all(lm is None for lm in lms_of(state))
    before = len(scripted_engine(lm).calls)
    run = tmp_path / "eval"
    results = evaluate(
        "arcmemo_ps",
        "--split",
        str(tiny),
        "--memory",
        str(memory_file),
        "--config",
        str(out / "config.json"),
        "--program-state",
        str(out / "program.json"),
        "--out",
        str(run),
        "--lm",
        lm,
        "--memory-lm",
        MEMORY,
    )
    assert results["official_score"] == solved and results["attempts"] == 1
    config = json.loads((run / "config.json").read_text())
    assert config["program_state_sha256"] == hashlib.sha256((out / "program.json").read_bytes()).hexdigest()
    solving = [c for c in calls_since(lm, before) if "`previous_program`" not in c.system]
    assert solving and all(all(d["puzzle"].strip() in c.user_text for d in demos) for c in solving)  # the state's demos


# -- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "main, argv, message",
    [
        (cli.main, ["arcmemo_ps", "--split", "nowhere"], "unknown split 'nowhere'"),
        (cli.main, ["arcmemo_ps", "--split", "{tiny}", "--memory", "missing.json"], "cannot read memory file"),
        (cli.main, ["arcmemo_ps", "--split", "{tiny}", "--memory", "{oe}"], "needs a ps memory"),
        (cli.main, ["baseline", "--split", "{tiny}", "--memory", "{ps}"], "reads no memory"),
        (cli.main, ["arcmemo_ps", "--level", "1"], "is an ARC program"),
        (cli.main, ["arcmemo_ps", "--split", "{tiny}", "--param", "K=1:3"], "unknown parameter"),
        (compile_main, ["arcmemo_ps", "--optimizer", "bootstrap", "--split", "nowhere"], "unknown split 'nowhere'"),
        (
            compile_main,
            ["arcmemo_ps", "--optimizer", "bootstrap", "--split", "{tiny}", "--memory", "missing.json"],
            "cannot read memory file",
        ),
        (eval_main, ["arcmemo_ps", "--split", "{tiny}", "--config", "{hdr}"], "is for hdr"),
        (eval_main, ["arcmemo_ps", "--split", "{tiny}", "--program-state", "missing.json"], "no such file"),
        (eval_main, ["arcmemo_ps", "--split", "{tiny}", "--program-state", "{cot}"], "does not fit arcmemo_ps"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, tiny, memory_file, capsys, main, argv, message):
    (tmp_path / "oe.json").write_text('{"format": "oe", "concepts": []}')
    (tmp_path / "hdr.json").write_text('{"program": "hdr", "knobs": {"K": 2}}')
    build_program("arcmemo_ps", cot=True).save(str(tmp_path / "cot.json"))
    fill = {
        "{tiny}": str(tiny),
        "{ps}": str(memory_file),
        "{oe}": str(tmp_path / "oe.json"),
        "{hdr}": str(tmp_path / "hdr.json"),
        "{cot}": str(tmp_path / "cot.json"),
    }
    assert main([*(fill.get(a, a) for a in argv), *LMS]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1
    if main is cli.main:
        assert not (tmp_path / "runs").exists()  # refused before a study directory is made
