"""One run session: what a process needs to run a program over examples, whatever the benchmark.

    session = RunSession.start(task, memory, policy=RetryPolicy(), max_errors=10, unit="scenes")
    with session.task_context():       # the task LM (role "task") and its adapter
        program(...)
    program.set_lm / set_memory_lm(session.memory_lm)   # the memory LM (role "memory")
    session.note_program(program)      # the instructions of its predictors, for the run's manifest
    session.finish(results, ...)       # + results["manifest"], wall_seconds and results["execution"]: how the run was executed
    session.note_process()             # in a ``finally``: this process's time, for a resumed run's wall_seconds

Both LMs are wrapped in a :class:`GuardedLM` (transport faults retried and counted) and
answered through a :class:`ResilientAdapter` (unparseable answers asked again). A local
model decodes the same prompt the same way (greedy, under a JSON grammar), so its
unparseable answers are not asked again. ``errors`` is the run's error budget. Each LM waits for its
role's rate limit (``LMChoice.limiter``: ``--rpm``, ``--tpm``; ``--memory-rpm``, ``--memory-tpm``), shared by
every thread.
"""

from __future__ import annotations

import json
import time
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import dspy

from memreason.lm import LMChoice
from memreason.lm.bounded_json import BoundedJSONAdapter
from memreason.lm.cost import price
from memreason.lm.faults import ErrorBudget, GuardedLM, ResilientAdapter, RetryPolicy, RunAborted
from memreason.lm.spend import Spend

from .errors import UsageError
from .manifest import instruction_digests, run_manifest, seeds_of


@dataclass
class RunSession:
    """Guarded task and memory LMs, their adapters, the retry policy and the error budget."""

    task: LMChoice
    memory: LMChoice
    task_lm: GuardedLM
    memory_lm: GuardedLM
    task_adapter: dspy.Adapter
    memory_adapter: dspy.Adapter
    policy: RetryPolicy
    errors: ErrorBudget
    started: float = field(default_factory=time.perf_counter)
    run_dir: Path | None = None  # where earlier processes of this run noted their time (PROCESSES_FILE)
    before: float = 0.0  # their seconds in all
    processes_before: int = 0
    noted: bool = False  # this process's time is in PROCESSES_FILE
    instructions: dict[str, str] = field(default_factory=dict)  # predictor -> digest of its instructions (note_program)
    limits_before: dict[str, dict[str, Any]] = field(default_factory=dict)  # the rate limiters' stats at the start

    @classmethod
    def start(
        cls,
        task: LMChoice,
        memory: LMChoice,
        *,
        policy: RetryPolicy | None = None,
        max_errors: int | None = None,
        unit: str = "examples",
        one_adapter: bool = False,
        spend: Spend | None = None,
        run_dir: Path | None = None,
    ) -> "RunSession":
        """``one_adapter``: both roles share one adapter (JSON under grammar if either LM is local),
        for programs whose memory calls run inside the task LM's context (ARC). ``spend``: the run's spending
        limit; both LMs add each answered call to it, and the error budget stops the run once it is reached. ``run_dir``:
        the run's directory, whose earlier processes' time :meth:`finish` adds to this one's (see :meth:`note_process`)."""
        policy = policy or RetryPolicy()
        before, count = earlier_processes(run_dir)
        if one_adapter:
            shared = ResilientAdapter.around(shared_adapter(task, memory), _parse_policy(task.local or memory.local, policy))
            adapters = (shared, shared)
        else:
            adapters = (
                ResilientAdapter.around(task.adapter(), _parse_policy(task.local, policy)),
                ResilientAdapter.around(memory.adapter(), _parse_policy(memory.local, policy)),
            )
        task_lm = GuardedLM(
            task.lm, role="task", policy=policy, spend=spend, price=price(task.spec) if spend else None, limiter=task.limiter
        )
        memory_lm = GuardedLM(
            memory.lm,
            role="memory",
            policy=policy,
            spend=spend,
            price=price(memory.spec) if spend else None,
            limiter=memory.limiter,
        )
        return cls(
            task,
            memory,
            task_lm,
            memory_lm,
            *adapters,
            policy,
            ErrorBudget(max_errors, unit=unit, spend=spend),
            run_dir=run_dir,
            before=before,
            processes_before=count,
            limits_before={role: lm.limiter.stats() for role, lm in (("task", task_lm), ("memory", memory_lm))},
        )

    def for_run(self, run: int) -> "RunSession":
        """The session of repetition ``run`` (0-based): the first is this one; from the second on both LMs carry
        ``rollout_id=run``, which DSPy puts in its cache key and never sends, so a repetition at a temperature
        above 0 draws answers of its own instead of replaying the first run's from the cache. The error budget,
        counts and adapters are shared."""
        if run == 0:
            return self
        return replace(self, task_lm=self.task_lm.copy(rollout_id=run), memory_lm=self.memory_lm.copy(rollout_id=run))

    def note_program(self, program: Any, prefix: str = "") -> None:
        """Note the instructions of every predictor ``program`` holds (names after ``prefix``), for the manifest."""
        self.instructions.update(instruction_digests(program, prefix))

    def task_context(self) -> AbstractContextManager:
        return dspy.context(lm=self.task_lm, adapter=self.task_adapter)

    def memory_context(self) -> AbstractContextManager:
        return dspy.context(lm=self.memory_lm, adapter=self.memory_adapter)

    def note_process(self) -> None:
        """Append this process's time so far to the run directory's :data:`PROCESSES_FILE` (once a process; call it
        in a ``finally``, so a run stopped by Ctrl-C or SIGTERM notes its time too; a process killed outright, or
        stopped by a second Ctrl-C, leaves its time out)."""
        if self.run_dir is None or self.noted:
            return
        self.noted = True
        line = {
            "seconds": round(time.perf_counter() - self.started, 2),
            "ended": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        try:
            with open(self.run_dir / PROCESSES_FILE, "a", encoding="utf-8") as file:
                file.write(json.dumps(line) + "\n")
        except OSError:  # a full disk or a read-only directory costs the next resume's total, not this run
            pass

    def finish(
        self, results: dict[str, Any], *, threads: int, resumed: int, answered: int, stopped: str | None = None
    ) -> dict[str, Any]:
        """``results`` with the run's wall time and ``execution``: how the run was executed (not part of
        its results proper: a resumed run differs from an uninterrupted one here only). ``wall_seconds`` is the
        time of every process of the run (those noted in the run directory, and this one);
        ``execution["wall_seconds"]`` this process's, ``execution["processes"]`` how many there were. ``stopped``:
        why the run ended before its last item (``"budget"``: its spending limit), recorded with the spend and the caps.

        ``results["manifest"]`` (:mod:`memreason.eval.harness.manifest`) is made of the ``lms`` the results' tally
        found in the records (moved there), the LMs' settings, the seeds of the run's ``config.json`` and the
        instructions of the programs noted (:meth:`note_program`); ``execution["rate_limits"]`` says what the rate
        limits held back in this process."""
        results["manifest"] = self.manifest(results.pop("lms", None) or {})
        seconds = round(time.perf_counter() - self.started, 2)
        execution = {
            "wall_seconds": seconds,
            "processes": self.processes_before + 1,
            "threads": threads,
            "resumed_examples": resumed,
            "answered_examples": answered,
            "failed_examples": self.errors.failed,
            "lm_answers": self.task_lm.answered.value
            + (self.memory_lm.answered.value if self.memory_lm is not self.task_lm else 0),
            "unit": self.errors.unit,
            "last_failure": self.errors.last_failure,
            "retry_policy": asdict(self.policy),
            "max_errors": self.errors.max_errors,
        }
        limits = self.rate_limits()
        if limits:
            execution["rate_limits"] = limits
        spend = self.errors.spend
        if spend is not None and spend.capped:
            execution["budget"] = spend.as_dict()
        if stopped:
            execution["stopped"] = stopped
        server = getattr(self.task.lm, "server", None)  # the local llama-server: its calls, reused prefix tokens, restarts
        if self.task.local and server is not None:
            execution["engine"] = server.stats.as_dict()
        results.update(wall_seconds=round(self.before + seconds, 2), execution=execution)
        return results

    def manifest(self, lms: dict[str, Any]) -> dict[str, Any]:
        """The run's manifest from ``lms`` (what its records say answered) and what this session knows."""
        config: dict[str, Any] = {}
        if self.run_dir is not None and (self.run_dir / "config.json").is_file():
            try:
                config = json.loads((self.run_dir / "config.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                config = {}
        return run_manifest(
            roles={"task": (self.task.spec, self.task_lm), "memory": (self.memory.spec, self.memory_lm)},
            lms=lms,
            seeds=seeds_of(config if isinstance(config, dict) else {}),
            instructions=dict(sorted(self.instructions.items())),
        )

    def rate_limits(self) -> dict[str, dict[str, Any]]:
        """By role, what its rate limit held back in this process (requests that waited, by cause; seconds of the
        run during which one waited; provider pauses): only the roles that have caps or met a provider's pause."""
        found: dict[str, dict[str, Any]] = {}
        for role, lm in (("task", self.task_lm), ("memory", self.memory_lm)):
            if role == "memory" and lm.limiter is self.task_lm.limiter:
                if "task" in found:
                    found["memory"] = {"shared_with": "task"}  # one model, one limiter: counted under the task
                continue
            now, before = lm.limiter.stats(), self.limits_before.get(role) or {}
            waits = {k: n - (before.get("waits") or {}).get(k, 0) for k, n in now["waits"].items()}
            entry = {
                "rpm": now["rpm"],
                "tpm": now["tpm"],
                "waits": {k: n for k, n in waits.items() if n},
                "held_seconds": round(now["held_seconds"] - (before.get("held_seconds") or 0.0), 2),
                "provider_pauses": now["provider_pauses"] - (before.get("provider_pauses") or 0),
            }
            if entry["rpm"] is not None or entry["tpm"] is not None or entry["provider_pauses"]:
                found[role] = entry
        return found


PROCESSES_FILE = "processes.jsonl"  # in a run directory: each process of the run, its seconds and when it ended


def earlier_processes(run_dir: Path | None) -> tuple[float, int]:
    """(seconds, count) of the processes of a run noted in ``run_dir`` (unreadable lines skipped)."""
    try:
        lines = (Path(run_dir) / PROCESSES_FILE).read_text(encoding="utf-8").splitlines() if run_dir else []
    except OSError:
        return 0.0, 0
    seconds = []
    for line in lines:
        try:
            seconds.append(float(json.loads(line)["seconds"]))
        except (ValueError, KeyError, TypeError):
            continue
    return round(sum(seconds), 2), len(seconds)


def check_failures(
    results: dict[str, Any],
    run_dir: Any,
    share: float = 1.0,
    *,
    hint: str = "rerun the same command with --retry-failed to answer them again",
) -> None:
    """Raise :class:`RunAborted` (exit 1 at the command line) when items failed in this process and either no LM
    call answered or at least ``share`` of the items answered failed (default 1: all of them), as
    :meth:`RunSession.finish` recorded in ``results["execution"]``. Call it once the run's files are written:
    they are kept, and ``--retry-failed`` answers the failed items again."""
    execution = results.get("execution", {})
    answered, failed = execution.get("answered_examples", 0), execution.get("failed_examples", 0)
    if answered and failed and (failed >= share * answered or execution.get("lm_answers", 1) == 0):
        every = "every one" if failed == answered else str(failed)
        silent = "no LM call answered and " if execution.get("lm_answers", 1) == 0 else ""
        raise RunAborted(
            f"{silent}{every} of the {answered} {execution.get('unit', 'items')} answered failed "
            f"(last: {execution.get('last_failure') or 'unknown'}); what the run has is in {run_dir}: {hint}"
        )


def shared_adapter(task: LMChoice, memory: LMChoice) -> dspy.Adapter:
    """Grammar-constrained JSON when either LM is a local model (JSON works for remote models too)."""
    return BoundedJSONAdapter() if task.local or memory.local else dspy.ChatAdapter()


def _parse_policy(local: bool, policy: RetryPolicy) -> RetryPolicy:
    return replace(policy, retries=0) if local else policy


def check_repetitions(runs: int, temperatures: dict[str, float], *, continuing: bool = False) -> dict[str, Any] | None:
    """What makes ``runs`` repetitions differ, for ``results["repetitions"]``; :class:`UsageError` when nothing does.

    ``temperatures``: the temperature of each LM call kind that decides the answers (``{"--temperature": 0.7}``).
    Repetitions differ by sampling: each draws its own answers at a temperature above 0 (see :meth:`RunSession.for_run`).
    At temperature 0 every repetition would replay the first one's answers from the cache, so more than one is refused,
    unless ``continuing`` a run saved before this check (it goes on, and says that nothing varies).
    """
    if runs <= 1:
        return None
    if not any(t and t > 0 for t in temperatures.values()):
        if continuing:
            return {
                "runs": runs,
                "vary_by": "nothing: every LM call at temperature 0 (a run saved before repetitions were checked)",
            }
        flags = " and ".join(f"{flag} {t:g}" for flag, t in temperatures.items())
        raise UsageError(
            f"--runs {runs} at {flags} repeats one run: every repetition would get the same answers. "
            "Give a temperature above 0 (each run then samples its own answers), or --runs 1"
        )
    varies = ", ".join(f"{flag} {t:g}" for flag, t in temperatures.items() if t and t > 0)
    return {"runs": runs, "vary_by": f"sampling ({varies}): each run after the first has its own rollout id in the cache key"}
