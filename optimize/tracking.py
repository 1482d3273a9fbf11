"""A study's trials as MLflow runs nested under the study's run (``python -m optimize ... --mlflow``).

    with tracking(options, study_dir, name=study_name, params=setup) as run:   # memreason.eval.harness.tracking
        run_workers(study, trial_runs(objective, run), trials=...)

Each trial is a run named ``trial <number>`` under the study's run: the trial's parameters
as params, its objective values and numeric user attributes (accuracy, tokens, examples,
wall seconds, ...) as metrics, the others (config directory, memory cache, worker) as tags,
its Optuna state as the tag ``optuna.state``, and the DSPy traces of its LM calls. A pruned
trial's run is KILLED, a failed one's FAILED. Runs are started with the study run's id as
their parent, so trials in ``--n-jobs`` threads nest too.

(optuna-integration's ``MLflowCallback`` logs a trial only once it has finished, so its run
holds no traces; it is deprecated since Optuna 4.9.)
"""

from __future__ import annotations

from typing import Any, Callable

import optuna


def trial_runs(objective: Callable[[optuna.Trial], Any], run) -> Callable[[optuna.Trial], Any]:
    """``objective`` with each trial in a nested MLflow run of ``run``; ``objective`` itself when ``run`` is None."""
    if run is None:
        return objective

    def tracked(trial: optuna.Trial):
        import mlflow

        names = trial.study.user_attrs.get("objectives") or ["value"]
        mlflow.start_run(
            experiment_id=run.info.experiment_id,
            run_name=f"trial {trial.number}",
            nested=True,
            parent_run_id=run.info.run_id,
            tags={"optuna.study": trial.study.study_name, "optuna.trial": str(trial.number)},
        )
        state, status, values = "COMPLETE", "FINISHED", {}
        try:
            value = objective(trial)
            values = dict(zip(names, value if isinstance(value, (list, tuple)) else [value]))
            return value
        except optuna.TrialPruned:
            state, status = "PRUNED", "KILLED"
            raise
        except BaseException:
            state, status = "FAIL", "FAILED"
            raise
        finally:
            _log_trial(mlflow, trial, state, values)
            mlflow.end_run(status)

    return tracked


def _log_trial(mlflow, trial: optuna.Trial, state: str, values: dict[str, Any]) -> None:
    from memreason.eval.harness.tracking import flat_params

    numbers = {k: v for k, v in {**trial.user_attrs, **values}.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    mlflow.log_params(flat_params(trial.params))
    mlflow.log_metrics({k: float(v) for k, v in numbers.items()})
    mlflow.set_tags({"optuna.state": state, **flat_params({k: v for k, v in trial.user_attrs.items() if k not in numbers})})
