"""Opening a run, written once: what every command that runs a program over items does before its first item.

    check_run_options(options)                      # first: --mlflow installed, --out writable (no work yet)
    plan = RunPlan(name="hdr-L2", config=config, runs=1, temperatures={"--temperature": 0.0})
    opened = open_run(options, plan)                # before any model loads: continue or refuse the run
    publish(options, opened.run_dir, lambda: evaluate(..., task=opened.task, memory=opened.memory), ...)

:func:`open_run` takes the steps in order: the run directory's saved config checked against the request (the
identity keys of :class:`RunPlan`), the repetitions checked, a dollar cap's prices checked, the LMs resolved
(and ``check_lms`` asked of them), the run directory opened (locked, its response cache in place) and, for a
new run, ``config.json`` written; then the spending limit, counting what the run's records already hold.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from memreason.lm import LMChoice
from memreason.lm.reasoning import fit_settings
from memreason.lm.spend import Spend

from .budget import add_recorded, check_prices, new_spend
from .lms import adapted_records, resolve_lms
from .options import RunOptions
from .paths import check_output_dir
from .resume import continues
from .runs import RunConfig, open_run_dir
from .session import check_repetitions
from .tracking import check_mlflow

__all__ = ["OpenedRun", "RunPlan", "check_run_options", "open_run"]

log = logging.getLogger(__name__)


@dataclass
class RunPlan:
    """What a task decided about a run before any model loads.

    ``name``: the run directory's name (``runs/<name>-<time>``); ``config``: the task's config dataclass (written
    into ``config.json``); ``extra``: what was derived from the options (knobs, a state's digest, task ids), also
    written; ``keys``: the config keys that decide results (:func:`memreason.eval.tasks.identity_keys`) and
    ``defaults`` the values of those missing from configs saved before they existed; ``temperatures``: the
    temperature of each kind of call that decides answers, by flag (repetitions need one above 0); ``lm_settings``:
    :func:`memreason.eval.harness.lms.resolve_lms`'s keywords; ``check_lms``: refuses LMs that cannot run it
    (raises :class:`UsageError`); ``flag``: the option that names the run directory (``--out``: ``options.out``;
    another: ``out``); ``runs``: repetitions; ``written``: what a new run's config.json holds besides
    (never checked on a resume), with the run directory under ``dir_key``; ``adapted``: settings of the task's own
    it changed to what the model's provider takes (:class:`memreason.lm.reasoning.Adapted`), written into a new
    run's config.json under ``adapted`` with those the LMs' resolution changed.
    """

    name: str
    config: Any
    keys: tuple[str, ...]
    runs: int = 1
    extra: dict[str, Any] = field(default_factory=dict)
    defaults: dict[str, Any] | None = None
    temperatures: dict[str, float | None] = field(default_factory=dict)
    lm_settings: dict[str, Any] = field(default_factory=dict)
    check_lms: Callable[[LMChoice, LMChoice], None] | None = None
    out: Path | None = None
    flag: str = "--out"
    written: dict[str, Any] = field(default_factory=lambda: {"resume": None})  # in a new run's config.json only
    dir_key: str = "out"  # the key of config.json that holds the run directory
    adapted: list[Any] = field(default_factory=list)


@dataclass
class OpenedRun:
    """A run directory ready for its items: the LMs that answer, the spending limit, what repetitions vary by."""

    run_dir: Path
    task: LMChoice
    memory: LMChoice
    spend: Spend | None
    repetitions: dict[str, Any] | None
    continuing: bool


def sent_temperatures(options: RunOptions, temperatures: dict[str, float | None]) -> dict[str, float | None]:
    """``temperatures`` (by flag) as the models are sent them: a reasoning model's default 0 goes out as 1
    (memreason.lm.reasoning), so its repetitions do sample."""
    sent = {}
    for flag, temperature in temperatures.items():
        memory = flag == "--memory-temperature"
        spec = (options.memory_lm or options.lm) if memory else options.lm
        if temperature is None or spec is None or spec.startswith("local:"):
            sent[flag] = temperature
            continue
        extra = (options.memory_lm_args if memory else options.lm_args) or {}
        fitted = fit_settings(spec, {"temperature": temperature, **extra}, given={}, role="memory LM" if memory else "task LM")
        sent[flag] = fitted.settings["temperature"]
    return sent


def check_run_options(options: RunOptions) -> None:
    """What is checked before anything else: ``--mlflow`` can track, ``--out`` can be written."""
    check_mlflow(options)
    check_output_dir(options.out)


def open_run(options: RunOptions, plan: RunPlan, *, spend: Spend | None = None) -> OpenedRun:
    """Open the run ``plan`` describes (see the module's docstring). ``spend``: a spending limit shared with other
    runs (a table's cells), already holding what they recorded; without one, the options' caps for this run alone."""
    out = options.out if plan.flag == "--out" else plan.out
    requested = RunConfig.of(options, plan.config, **plan.extra).to_json()
    continuing = continues(out, requested, keys=plan.keys, defaults=plan.defaults, flag=plan.flag)  # before any model loads
    temperatures = sent_temperatures(options, plan.temperatures)
    repetitions = check_repetitions(plan.runs, temperatures, continuing=bool(continuing)) if plan.temperatures else None
    check_prices(options.budget_usd, [options.lm, options.memory_lm or options.lm])
    task, memory = resolve_lms(options, **plan.lm_settings)
    if plan.check_lms is not None:
        plan.check_lms(task, memory)
    run_dir = open_run_dir(out, plan.name, options.cache)
    if continuing:
        log.info("continuing the run in %s", run_dir)
    else:
        extra = {**plan.extra, **plan.written, plan.dir_key: str(run_dir)}
        adapted = [change.as_dict() for change in plan.adapted] + adapted_records(task, memory)
        if adapted:  # what was sent instead of a default the model's provider refuses
            extra["adapted"] = adapted
        memory_spec = (options.memory_lm or memory.spec) if memory is task else memory.spec  # named, if unused
        RunConfig.of(options, plan.config, lm=task.spec, memory_lm=memory_spec, **extra).write(run_dir)
    if spend is None:
        spend = new_spend(options)
        add_recorded(spend, run_dir, task.spec, memory.spec)
    return OpenedRun(run_dir, task, memory, spend, repetitions, bool(continuing))
