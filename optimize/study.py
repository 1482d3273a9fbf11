"""An Optuna study as our distributed engine: storage, sampler, pruner, a trial budget shared by workers.

Storage is a SQLite file in the study directory by default (``study.db``), so a killed
study resumes where it stopped: finished trials are kept, and a trial whose worker died
(its heartbeat stops) is marked failed and its configuration retried, continuing from
the examples it had finished. Any Optuna RDB URL (``postgresql://...``, ``mysql://...``)
works the same way, and is how several machines share one study.

Workers. ``--n-jobs J`` runs J trials at once in one process (threads). More processes,
on this host or others, join a study by running the same command with the same
``--storage`` and ``--study``::

    # host A (creates the study), then hosts B, C, ... (join it); all stop at T trials in total
    python -m optimize hdr --level 1 --trials 40 --study hdr-l1 --storage postgresql://user:pw@db/optuna
    python -m optimize hdr --level 1 --trials 40 --study hdr-l1 --storage postgresql://user:pw@db/optuna

``--trials T`` is the study's total, not each worker's: a worker starts a trial only while
fewer than T trials are finished, running or waiting, and a trial created past T in a
race is closed unrun (state FAIL, user attribute ``surplus``). SQLite suits the workers
of one machine (processes share the file); across machines use a server database.
Each host keeps its own study directory (caches, configuration runs, outputs).
"""

from __future__ import annotations

import logging
import re
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import optuna
from optuna.trial import TrialState

from .choices import PRUNERS, SAMPLERS, StudyError

DIRECTIONS = {"accuracy": "maximize", "tokens": "minimize"}
BUDGET_STATES = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING, TrialState.WAITING)
FINISHED = (TrialState.COMPLETE, TrialState.PRUNED)


class Surplus(Exception):
    """A trial created after the budget was already taken; it is closed without running."""


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{Path(path).resolve()}"


# What a worker sees when another one is creating the same storage's tables at that moment.
_CREATION_RACES = ("already exists", "UNIQUE constraint failed", "database is locked")


def open_storage(url: str, *, heartbeat: int | None = 60, retries: int = 2) -> optuna.storages.RDBStorage:
    """An RDB storage with heartbeats (dead workers' trials fail after ``2 * heartbeat`` s and are retried)."""
    kwargs: dict[str, Any] = {}
    if url.startswith("sqlite"):
        kwargs["engine_kwargs"] = {"connect_args": {"timeout": 60}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        if heartbeat:
            kwargs.update(heartbeat_interval=heartbeat, grace_period=2 * heartbeat)
            if hasattr(optuna.storages, "RetryHeartbeatStaleTrialCallback"):  # Optuna >= 4.9
                kwargs["heartbeat_stale_trial_callback"] = optuna.storages.RetryHeartbeatStaleTrialCallback(max_retry=retries)
            else:
                kwargs["failed_trial_callback"] = optuna.storages.RetryFailedTrialCallback(max_retry=retries)
        for attempt in range(5):  # workers that start together race to create the tables: the loser finds them made
            try:
                return optuna.storages.RDBStorage(url, **kwargs)
            except Exception as exc:
                error = exc
                if not any(race in str(exc) for race in _CREATION_RACES):
                    break
                time.sleep(0.5 * (attempt + 1))
    first = str(error).splitlines()[0] if str(error) else type(error).__name__
    raise StudyError(f"cannot open storage {url!r}: {first}")


def make_sampler(
    name: str, *, space_grid: dict[str, list[Any]] | None = None, seed: int | None = None, multi: bool = False
) -> optuna.samplers.BaseSampler:
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed, n_startup_trials=4 if not multi else 6)
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "grid":
        return optuna.samplers.GridSampler(space_grid or {}, seed=seed)
    if name == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed, population_size=8)
    raise StudyError(f"--sampler must be one of {', '.join(SAMPLERS)}, got {name!r}")


def make_pruner(name: str, *, multi: bool) -> optuna.pruners.BasePruner:
    if multi or name == "none":
        return optuna.pruners.NopPruner()  # Optuna does not prune multi-objective studies
    if name == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=2, n_warmup_steps=0)
    raise StudyError(f"--pruner must be one of {', '.join(PRUNERS)}, got {name!r}")


def load_study(name: str, storage, objectives: tuple[str, ...], sampler, pruner) -> optuna.Study:
    directions = [DIRECTIONS[o] for o in objectives]
    try:
        study = optuna.create_study(
            study_name=name, storage=storage, sampler=sampler, pruner=pruner, directions=directions, load_if_exists=True
        )
    except Exception as exc:
        raise StudyError(f"cannot open study {name!r}: {exc}") from None
    if [d.name.lower() for d in study.directions] != directions:
        raise StudyError(
            f"study {name!r} optimises {[d.name.lower() for d in study.directions]}, "
            f"not {directions} (--objectives {','.join(objectives)}): use another --study"
        )
    saved = study.user_attrs.get("objectives")
    if saved is None:
        study.set_user_attr("objectives", list(objectives))
    return study


@dataclass
class Budget:
    """At most ``total`` trials in the study, whichever worker runs them."""

    total: int

    def taken(self, study: optuna.Study) -> int:
        return len(study.get_trials(deepcopy=False, states=BUDGET_STATES))

    def finished(self, study: optuna.Study) -> int:
        return len(study.get_trials(deepcopy=False, states=FINISHED))

    def check(self, study: optuna.Study, trial: optuna.Trial) -> None:
        """Raise :class:`Surplus` when trials numbered below this one already fill the budget."""
        before = [t for t in study.get_trials(deepcopy=False, states=BUDGET_STATES) if t.number < trial.number]
        if len(before) >= self.total:
            trial.set_user_attr("surplus", True)
            study.stop()
            raise Surplus(f"the study already has {self.total} trials")

    def callback(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        if self.finished(study) >= self.total:
            study.stop()


def run_workers(
    study: optuna.Study,
    objective: Callable,
    *,
    trials: int,
    n_jobs: int = 1,
    enqueue: list[dict[str, Any]] = (),
    stop: Callable[[], bool] | None = None,
) -> int:
    """Run trials until the study holds ``trials`` finished ones; returns how many this process finished.

    ``stop`` (a spending limit reached) is asked before the first trial and after each: once it says yes, no trial
    starts, and trials under way finish."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)  # a dead worker's trials (no-op without heartbeats)
    for params in enqueue:  # e.g. the paper's configuration, evaluated on the same scenes
        study.enqueue_trial(params, skip_if_exists=True)
    budget = Budget(trials)
    if budget.taken(study) >= trials or (stop is not None and stop()):  # finished, or run by other workers; or spent
        return 0
    done = 0
    lock = threading.Lock()

    def guarded(trial: optuna.Trial):
        nonlocal done
        budget.check(study, trial)
        value = objective(trial)
        with lock:
            done += 1
        return value

    def count_pruned(study_, frozen) -> None:
        nonlocal done
        if frozen.state == TrialState.PRUNED:
            with lock:
                done += 1
        budget.callback(study_, frozen)
        if stop is not None and stop():
            study_.stop()

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    quiet = QuietLMFailures()
    optuna_log = logging.getLogger("optuna.study._optimize")
    optuna_log.addFilter(quiet)
    try:
        study.optimize(
            guarded,
            n_trials=None,
            n_jobs=n_jobs,
            callbacks=[count_pruned],
            catch=(Surplus,),
            gc_after_trial=False,
            show_progress_bar=False,
        )
    finally:
        optuna_log.removeFilter(quiet)
    return done


class QuietLMFailures(logging.Filter):
    """Drops Optuna's report of a trial that failed because the LM did (its traceback runs to hundreds of lines).

    The failure stops the study and the command line says it in one line; the trial stays in the study as failed.
    """

    def __init__(self) -> None:
        super().__init__()
        self.trials: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        from memreason.lm.faults import LMFailure

        trial = re.match(r"Trial (\d+) failed with", record.getMessage())
        if trial is None:
            return True
        if record.exc_info and isinstance(record.exc_info[1], LMFailure):
            self.trials.add(trial.group(1))
            return False
        return trial.group(1) not in self.trials  # its second line, "failed with value None"
