"""``--mlflow``: runs, tables and studies tracked in a real local MLflow store, read back with MLflow's own API.

The LMs are the scripted ones of the optimize tests (``scripted:tests.helpers.optimize_lms:task|memory``);
skipped where the ``mlflow`` extra is not installed.
"""

import json
import shutil
import sys
from pathlib import Path

import pytest

mlflow = pytest.importorskip("mlflow")

import dspy  # noqa: E402

import memreason.eval.cli as eval_cli  # noqa: E402
import memreason.optimize.cli as optimize_cli  # noqa: E402
from memreason.eval.cli import main as eval_main  # noqa: E402
from memreason.eval.harness.runs import comparable  # noqa: E402
from memreason.eval.harness.tracking import flat_params, run_metrics, store_uri  # noqa: E402
from memreason.lm import LMChoice, ScriptedEngine  # noqa: E402
from memreason.optimize.lms import SCRIPTED_ENV, resolve, scripted_engine  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]

TASK, MEMORY = "scripted:tests.helpers.optimize_lms:task", "scripted:tests.helpers.optimize_lms:memory"
LMS = ["--lm", TASK, "--memory-lm", MEMORY]


@pytest.fixture(autouse=True)
def scripted(monkeypatch):
    monkeypatch.setenv(SCRIPTED_ENV, "1")
    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", resolve)  # the eval CLIs take scripted:MODULE:FUNCTION too
    monkeypatch.setattr("memreason.eval.experience_transfer.table_cells.resolve_lm", resolve)


@pytest.fixture(scope="module")
def empty_store(tmp_path_factory) -> Path:
    """A migrated, empty SQLite store, copied where a test wants one (creating one runs all of its migrations: seconds)."""
    db = tmp_path_factory.mktemp("store") / "mlflow.db"
    mlflow.MlflowClient(tracking_uri=f"sqlite:///{db}").search_experiments()
    return db


def store_at(db: Path, template: Path) -> Path:
    db.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, db)
    return db


def read_store(db: Path):
    """(client, experiment id, runs) of the store in ``db``."""
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{db}")
    experiment = client.get_experiment_by_name("memreason")
    return client, experiment.experiment_id, client.search_runs([experiment.experiment_id])


def calls() -> int:
    return sum(len(scripted_engine(spec).calls) for spec in (TASK, MEMORY))


def test_a_tracked_run_has_params_metrics_artifacts_and_a_trace_per_program_call(tmp_path, empty_store):
    argv = ["hdr", "--level", "1", "--limit", "4", "--no-progress", *LMS]
    assert eval_cli.main([*argv, "--out", "elsewhere/plain"]) == 0
    assert not [p for p in tmp_path.rglob("*") if p.name in ("mlflow.db", "mlruns", "mlartifacts")]  # no --mlflow: nothing

    store_at(tmp_path / "runs" / "mlflow.db", empty_store)  # where a bare --mlflow puts the store
    before = calls()
    assert eval_cli.main([*argv, "--out", "runs/hdr-tracked", "--mlflow"]) == 0
    spent = calls() - before
    client, experiment, runs = read_store(tmp_path / "runs" / "mlflow.db")
    assert len(runs) == 1
    run = runs[0]
    assert run.info.status == "FINISHED" and run.info.run_name == "hdr-tracked"
    assert run.data.tags["memreason.run_dir"] == str((tmp_path / "runs" / "hdr-tracked").resolve())
    config = json.loads((tmp_path / "runs" / "hdr-tracked" / "config.json").read_text())
    assert run.data.params["program"] == "hdr" and run.data.params["limit"] == "4" and run.data.params["lm"] == TASK
    assert len(run.data.params) == len(flat_params(config))
    metrics = run.data.metrics
    results = json.loads((tmp_path / "runs" / "hdr-tracked" / "results.json").read_text())
    assert metrics["accuracy"] == results["accuracy"]["mean"] and metrics["hypothesis_f1"] == results["hypothesis_f1"]["mean"]
    assert metrics["tokens_task_prompt"] == results["tokens"]["task"]["prompt"] > 0
    assert metrics["tokens_memory_completion"] == results["tokens"]["memory"]["completion"] > 0
    assert {"accuracy_std", "wall_seconds"} <= set(metrics) and "cost_usd" not in metrics  # no price for a scripted LM
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"report.md", "results.json", "config.json"} <= artifacts and any(a.endswith(".png") for a in artifacts)

    traces = client.search_traces(locations=[experiment], run_id=run.info.run_id, max_results=1000)
    answers = [t for t in traces if t.data.spans[0].name == "HDR.forward"]
    assert len(answers) == 4 and 4 <= len(traces) <= spent  # a trace per scene; memory building's calls too
    assert (tmp_path / "runs" / "mlartifacts").is_dir() and not (tmp_path / "mlruns").exists()
    assert not any(type(c).__module__.startswith("mlflow") for c in dspy.settings.callbacks)  # autolog off again

    plain = json.loads((tmp_path / "elsewhere" / "plain" / "results.json").read_text())
    assert comparable(plain) == comparable(results)  # tracking changes nothing in the results


def test_a_run_that_stops_ends_failed(tmp_path, monkeypatch, empty_store):
    store_at(tmp_path / "store.db", empty_store)
    broken = ScriptedEngine(lambda call: "no fields here at all")
    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", lambda spec, **kw: LMChoice("broken", broken.lm(), local=False))
    argv = [
        "episodic",
        "--level",
        "1",
        "--limit",
        "3",
        "--max-errors",
        "0",
        "--out",
        "runs/broken",
        "--no-progress",
        "--lm-retries",
        "0",
        "--mlflow",
        str(tmp_path / "store.db"),
    ]
    assert eval_cli.main(argv) == 1
    client, _, runs = read_store(tmp_path / "store.db")
    assert [r.info.status for r in runs] == ["FAILED"] and "accuracy" not in runs[0].data.metrics
    assert "config.json" in {a.path for a in client.list_artifacts(runs[0].info.run_id)}


def test_a_study_is_one_run_with_a_nested_run_per_trial(tmp_path, empty_store):
    store_at(tmp_path / "studies" / "mlflow.db", empty_store)
    argv = [
        "hdr",
        "--level",
        "1",
        "--limit",
        "6",
        "--trials",
        "3",
        "--sampler",
        "grid",
        "--pruner",
        "none",
        "--chunks",
        "1",
        "--param",
        "K=1:3",
        "--param",
        "N=2",
        "--param",
        "cot=false",
        "--param",
        "per_object=false",
        "--param",
        "demos=0",
        "--out",
        "studies/hdr",
        "--mlflow",
        *LMS,
    ]
    assert optimize_cli.main(argv) == 0
    client, experiment, runs = read_store(tmp_path / "studies" / "mlflow.db")
    [study] = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    trials = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == study.info.run_id]
    assert study.info.run_name == "hdr-L1" and study.info.status == "FINISHED" and len(runs) == 4 and len(trials) == 3
    assert study.data.params["trials"] == "3" and {"summary.md", "best.json"} <= {
        a.path for a in client.list_artifacts(study.info.run_id)
    }
    assert sorted(r.data.params["K"] for r in trials) == ["1", "2", "3"]
    assert all(r.data.tags["optuna.state"] == "COMPLETE" and r.data.params["N"] == "2" for r in trials)
    assert [r.data.params["K"] for r in trials if r.data.metrics["accuracy"] == 1.0] == ["2"]  # the script's optimum
    assert all(r.data.metrics["tokens"] > 0 for r in trials)
    for trial in trials:  # each trial's LM calls are traced in its own run
        assert len(client.search_traces(locations=[experiment], run_id=trial.info.run_id, max_results=1000)) > 0


def test_table_cells_are_runs_nested_under_the_table(tmp_path, empty_store):
    store_at(tmp_path / "runs" / "mlflow.db", empty_store)
    argv = [
        "table3",
        "--levels",
        "1",
        "--rows",
        "episodic_cot",
        "--limit",
        "3",
        "--lm",
        TASK,
        "--out",
        "runs/tables",
        "--no-progress",
        "--mlflow",
    ]
    assert eval_main(argv) == 0
    client, _, runs = read_store(tmp_path / "runs" / "mlflow.db")
    [table] = [r for r in runs if r.info.run_name == "table3"]
    [cell] = [r for r in runs if r is not table]
    assert cell.data.tags["mlflow.parentRunId"] == table.info.run_id and cell.data.params["program"] == "episodic_cot"
    assert "accuracy" in cell.data.metrics and "table3.md" in {a.path for a in client.list_artifacts(table.info.run_id)}


@pytest.mark.parametrize(
    "main, argv",
    [
        (eval_cli.main, ["hdr", "--level", "1", "--mlflow"]),
        (eval_cli.main, ["baseline", "--mlflow"]),
        (eval_cli.main, ["table3", "--mlflow", "x.db"]),
        (optimize_cli.main, ["hdr", "--level", "1", "--mlflow"]),
    ],
)
def test_mlflow_missing_is_one_line_and_exit_2_before_any_work(main, argv, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "mlflow", None)  # import mlflow fails
    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", lambda *a, **k: pytest.fail("an LM was resolved"))
    assert main([*argv, *LMS] if argv[0] != "table3" else argv) == 2
    assert capsys.readouterr().err == f"error: --mlflow needs MLflow: pip install -e '{ROOT}[mlflow]'\n"  # a checkout's path
    assert list(tmp_path.iterdir()) == []


def test_metrics_params_and_store_uris(tmp_path):
    arc = {
        "oracle_at_k": {"1": 0.5, "2": 1.0, "3": None},
        "official_score": 1.0,
        "score_by_retries": {"0": 0.5, "1": 1.0},
        "tokens": {"task": {"prompt": 10, "completion": 3}},
        "cost": {"total": None},
        "wall_seconds": 2.5,
    }
    assert run_metrics(arc) == {
        "official_score": 1.0,
        "oracle_at_1": 0.5,
        "oracle_at_2": 1.0,
        "score_at_retries_0": 0.5,
        "score_at_retries_1": 1.0,
        "tokens_task_prompt": 10.0,
        "tokens_task_completion": 3.0,
        "wall_seconds": 2.5,
    }
    params = flat_params({"knobs": {"K": 2, "cot": True}, "tasks": None, "empty": {}, "ids": ["a"] * 5000, "lm": "x"})
    assert params["knobs.K"] == "2" and params["knobs.cot"] == "true" and params["tasks"] == "null" and params["empty"] == "{}"
    assert len(params["ids"]) == 6000 and params["lm"] == "x"
    assert store_uri("http://host:5000", tmp_path) == "http://host:5000"
    assert store_uri("", tmp_path / "runs") == f"sqlite:///{tmp_path.resolve()}/runs/mlflow.db"
    assert store_uri(str(tmp_path), tmp_path / "runs") == f"sqlite:///{tmp_path.resolve()}/mlflow.db"  # a directory
    assert store_uri("my.db", tmp_path / "runs") == f"sqlite:///{tmp_path.resolve()}/my.db"  # cwd is tmp_path
