"""MLflow tracking of a run (``--mlflow [URI]``), the optional ``mlflow`` extra.

    python -m eval hdr --level 1 --mlflow                          # runs/mlflow.db, artifacts in runs/mlartifacts
    python -m eval hdr --level 1 --mlflow http://localhost:5000    # any MLflow tracking URI (or a .db file path)
    mlflow ui --backend-store-uri sqlite:///runs/mlflow.db

What a command does with it (``args`` is any options object with ``mlflow``):

    check_mlflow(args)                         # before any model work: UsageError when MLflow is not installed
    with tracking(args, run_dir, name=run_dir.name, params=config):   # a no-op without --mlflow
        results = evaluate(...)
        publish(run_dir, results, ...)

A run becomes one MLflow run in the experiment ``memreason``, named after its run directory:
the config as params, every DSPy call as a trace (``mlflow.dspy.autolog``), the scores,
tokens, cost and wall time of ``results.json`` as metrics, and the report, plots, results and
config as artifacts. A run that raises ends FAILED. A run started while another is active
(a table's cells) is nested under it; a study's trials: ``memreason.optimize.tracking``.
Given bare, ``--mlflow`` keeps a SQLite store in the run directory's parent (``mlflow.db``)
with artifacts beside it (``mlartifacts/``), so nothing lands in ``./mlruns``.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Protocol

from memreason.installed import install_hint
from memreason.lm.redact import redact

from .errors import UsageError

EXPERIMENT = "memreason"
RUN_ARTIFACTS = ("report.md", "*.png", "results.json", "config.json")
REMOTE = ("http://", "https://", "databricks")


class Tracked(Protocol):
    """What tracking reads of a command's options: where ``--mlflow`` tracks (None: no tracking)."""

    mlflow: str | None


def check_mlflow(args: Tracked) -> None:
    """Refuse ``--mlflow`` in one line when MLflow is not installed (call before any model work)."""
    if args.mlflow is None:
        return
    try:
        import mlflow  # noqa: F401
    except ImportError:
        raise UsageError(f"--mlflow needs MLflow: {install_hint('mlflow')}") from None


def store_uri(value: str | None, home: Path) -> str:
    """The tracking URI ``--mlflow`` names: bare, ``sqlite:///<home>/mlflow.db``; a path, that SQLite file
    (``mlflow.db`` inside it when it is a directory); a URI, itself."""
    if value and ("://" in value or value == "databricks"):
        return value
    path = Path(value) if value else Path(home) / "mlflow.db"
    if path.is_dir():
        path = path / "mlflow.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{path.resolve()}"


def artifact_root(uri: str, home: Path) -> str | None:
    """Where a new experiment keeps artifacts: beside a SQLite file, under ``home`` for other databases,
    the server's choice for a tracking server."""
    if uri.startswith(REMOTE):
        return None
    if uri.startswith("sqlite:///"):
        return (Path(uri.removeprefix("sqlite:///")).parent / "mlartifacts").resolve().as_uri()
    return (Path(home) / "mlartifacts").resolve().as_uri()


@contextmanager
def tracking(
    args: Tracked,
    run_dir: Path,
    *,
    name: str | None = None,
    params: dict[str, Any] | None = None,
    artifacts: tuple[str, ...] = RUN_ARTIFACTS,
) -> Iterator[Any]:
    """An MLflow run around the body when ``args.mlflow`` is set (yields it), nothing otherwise (yields None).

    ``params`` default to ``run_dir/config.json``; at the end the metrics of ``run_dir/results.json``
    and the files matching ``artifacts`` in ``run_dir`` are logged."""
    if args.mlflow is None:
        yield None
        return
    import dspy
    import mlflow

    run_dir = Path(run_dir)
    uri = store_uri(args.mlflow, run_dir.resolve().parent)
    mlflow.set_tracking_uri(uri)
    experiment = _experiment(mlflow, artifact_root(uri, run_dir.resolve().parent))
    outermost = mlflow.active_run() is None
    usage = dspy.settings.track_usage
    if params is None and (run_dir / "config.json").is_file():
        params = json.loads((run_dir / "config.json").read_text())
    with mlflow.start_run(
        experiment_id=experiment,
        run_name=name or run_dir.name,
        nested=not outermost,
        tags={"memreason.run_dir": str(run_dir.resolve())},
    ) as run:
        mlflow.log_params(flat_params(params or {}))
        mlflow.dspy.autolog(silent=True)
        try:
            yield run
            mlflow.log_metrics(run_metrics(_read(run_dir / "results.json")))
        finally:
            for pattern in artifacts:
                for path in sorted(run_dir.glob(pattern)):
                    mlflow.log_artifact(str(path))
            if outermost:
                mlflow.flush_trace_async_logging()  # the traces are in the store when the command returns
                mlflow.dspy.autolog(disable=True, silent=True)
                dspy.settings.configure(track_usage=usage)  # autolog turned it on


def _experiment(mlflow, artifact_location: str | None) -> str:
    """The id of the ``memreason`` experiment, created with ``artifact_location`` (another process may race us)."""
    found = mlflow.get_experiment_by_name(EXPERIMENT)
    if found is None:
        try:
            return mlflow.create_experiment(EXPERIMENT, artifact_location=artifact_location)
        except mlflow.exceptions.MlflowException:
            found = mlflow.get_experiment_by_name(EXPERIMENT)
            if found is None:
                raise
    return found.experiment_id


def flat_params(config: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """``config`` as MLflow params: nested dicts as dotted keys, other values as JSON, cut to MLflow's limits."""
    from mlflow.utils.validation import MAX_ENTITY_KEY_LENGTH, MAX_PARAM_VAL_LENGTH

    out: dict[str, str] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(flat_params(value, f"{name}."))
        else:
            text = redact(value) if isinstance(value, str) else json.dumps(redact(value), default=str)
            out[name[:MAX_ENTITY_KEY_LENGTH]] = text[:MAX_PARAM_VAL_LENGTH]
    return out


def run_metrics(results: dict[str, Any]) -> dict[str, float]:
    """The numbers of a ``results.json`` worth comparing across runs; what is missing or None is left out."""
    accuracy = results.get("accuracy") or {}
    f1 = results.get("hypothesis_f1") or {}
    metrics: dict[str, Any] = {
        "accuracy": accuracy.get("mean"),
        "accuracy_std": accuracy.get("std"),
        "hypothesis_f1": f1.get("mean"),
        "official_score": results.get("official_score"),
        "cost_usd": (results.get("cost") or {}).get("total"),
        "wall_seconds": results.get("wall_seconds"),
    }
    metrics.update({f"oracle_at_{k}": v for k, v in (results.get("oracle_at_k") or {}).items()})
    metrics.update({f"score_at_retries_{r}": v for r, v in (results.get("score_by_retries") or {}).items()})
    for role, spent in (results.get("tokens") or {}).items():
        metrics.update({f"tokens_{role}_{kind}": spent.get(kind) for kind in ("prompt", "completion")})
    return {k: float(v) for k, v in metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
