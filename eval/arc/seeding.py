"""Seed a memory file from verified solutions: solved here by the baseline solver, or given
(a directory of the user's own, or re-ARC's verifiers: :mod:`memreason.eval.arc.solutions`, abstracted
with the demonstration's solution written in their DSL).
Each concept a write adds or revises keeps the program that verified (an unverified solution
written with ``unverified`` gives none): what an execution-ranked read runs."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tqdm import tqdm

from memreason.datasets.arc import ArcTask, dsl_primitives
from memreason.lm import LMChoice
from memreason.lm.faults import RetryPolicy, RunAborted, failure_of
from memreason.lm.spend import Spend
from memreason.lm.tokens import Meter, metering
from memreason.programs import build_program
from memreason.programs.arcmemo import ConceptAbstractor, ConceptMemory, use_arc_demos
from memreason.programs.arcmemo.arc_solver import error_text
from memreason.programs.arcmemo.memory_file import empty_memory, load_memory, save_memory

from ..harness.budget import STOPPED_BY_BUDGET
from ..harness.lms import memory_chars
from ..harness.loop import run_each
from ..harness.resume import read_examples
from ..harness.runs import JsonlWriter
from ..harness.session import RunSession
from ..harness.usage import UsageTally
from .build_quality import concept_quality
from .config import BuildConfig
from .scoring import lm_failure, verify_matrix
from .solutions import REARC

log = logging.getLogger(__name__)


def passes_all(task: ArcTask, program: str, sandbox) -> bool:
    """Whether ``program`` reproduces every train and test output of ``task``."""
    pairs = list(task.train) + list(task.test)
    outcomes = sandbox.run(program, [p.input for p in pairs])
    return all(o.output is not None and o.output == p.output for o, p in zip(outcomes, pairs))


def build_memory(
    config: BuildConfig,
    *,
    task: LMChoice,
    memory: LMChoice,
    run_dir: Path,
    sandbox,
    progress: bool = True,
    policy: RetryPolicy | None = None,
    max_errors: int | None = None,
    spend: Spend | None = None,
) -> dict[str, Any]:
    """Seed a memory file from verified solutions (solved here, or the user's); returns the results.

    Continues what ``run_dir`` holds: tasks already recorded are not solved again and the memory
    is restored from the snapshot taken after the last of them that was written. ``spend``: the spending
    limit; once it is reached no task starts and the results are those of the tasks done
    (``execution["stopped"] == "budget"``)."""
    tasks, given = config.load()
    start = _start_memory(config, run_dir)
    if start is not None:  # --extend: the tasks already among the memory's sources are not built again
        held = memory_sources(start)
        tasks = [t for t in tasks if t.id not in held]
        began = {"concepts": len(start), "tasks": len(held)}  # counted now: the build writes to this memory
    session = RunSession.start(
        task, memory, policy=policy, max_errors=max_errors, unit="tasks", one_adapter=True, spend=spend, run_dir=run_dir
    )
    writer_program = build_program(
        {"oe": "arcmemo_oe", "ps": "arcmemo_ps", "cheatsheet": "cheatsheet"}[config.format],
        sandbox=sandbox,
        **({"revise": False} if config.apart else {}),
    )
    writer_program.set_memory_lm(session.memory_lm)
    writer_program.show_memory_within(memory_chars(session.memory))  # a growing memory still fits the context
    if config.solutions == REARC and isinstance(getattr(writer_program, "abstractor", None), ConceptAbstractor):
        use_arc_demos(writer_program.abstractor, dsl=True)  # the demonstration's solution in the verifiers' DSL
    solver = build_program(
        "baseline",
        attempts=config.attempts,
        retries=config.retries,
        cot=config.cot,
        temperature=config.temperature,
        sandbox=sandbox,
    )
    solver.solver.parallel = config.threads > 1
    session.note_program(writer_program, "writer.")  # their instructions, for the run's manifest
    session.note_program(solver, "solver.")
    run_dir.mkdir(parents=True, exist_ok=True)
    finished = read_examples(run_dir / "examples.jsonl")
    kept: list[dict[str, Any]] = []
    for item in tasks:  # records are written in task order: keep the finished prefix
        if (0, item.id) not in finished:
            break
        kept.append(finished[(0, item.id)])
    snapshot = max((i for i in range(1, len(kept) + 1) if (run_dir / "memory" / f"step-{i:04d}.json").exists()), default=0)
    writer_program.use_memory(
        load_memory(run_dir / "memory" / f"step-{snapshot:04d}.json")
        if snapshot
        else (start if start is not None else empty_memory(config.format))
    )
    out = Path(config.out)  # written after each concept is abstracted, never before: a failed build leaves it as it was
    writer = JsonlWriter(run_dir / "examples.jsonl")
    records = list(kept)

    def solve(item: ArcTask) -> tuple[dict[str, Any], Meter, Any] | None:
        if session.errors.stopping:
            return None
        meter = Meter(root=solver)
        record = _solve(item, meter)
        return record, meter, _draft(item, record, meter)

    def _written(record: dict[str, Any]) -> bool:  # a verified solution, or any solution with ``unverified``
        return bool(record["verified"] or (config.unverified and record["solution"]))

    def _shown(item: ArcTask, record: dict[str, Any]) -> str:
        return given[item.id].shown if item.id in given else record["solution"]

    def _draft(item: ArcTask, record: dict[str, Any], meter: Meter) -> Any:
        """What of the write reads no memory, made here, side by side with other tasks' (the writes are in order)."""
        if not _written(record) or session.errors.stopping:
            return None
        with session.task_context(), metering(meter):
            try:
                return writer_program.draft(item, _shown(item, record))
            except Exception as exc:  # the write in order drafts again, and records what failed then
                log.warning("drafting the write of %s failed (%s); it is drafted again when written", item.id, error_text(exc))
                return None

    def _solve(item: ArcTask, meter: Meter) -> dict[str, Any]:
        if item.id in given:  # run as its program, recorded as its source
            solution = given[item.id]
            ok = passes_all(item, solution.program, sandbox)
            return {
                "run": 0,
                "id": item.id,
                "source": solution.origin,
                "solution": solution.source,
                "verified": ok,
                "attempts": [],
            }
        with session.task_context(), metering(meter):
            try:
                attempts = solver(task=item).attempts
            except Exception as exc:
                failure = failure_of(exc)
                return {
                    "run": 0,
                    "id": item.id,
                    "source": "solved",
                    "solution": None,
                    "verified": False,
                    "attempts": [],
                    "failure": failure,
                    "error": f"{failure['kind']}: {failure['reason']}",
                }
        solution = next(
            (a.final.program for a in attempts if a.final.passed_train and all(verify_matrix(item, [a], step="last")[0])), None
        )
        failure = lm_failure(attempts)
        return {
            "run": 0,
            "id": item.id,
            "source": "solved",
            "solution": solution,
            "verified": solution is not None,
            "attempts": [a.to_json() for a in attempts],
            "failure": failure,
            "error": f"{failure['kind']}: {failure['reason']}" if failure else None,
        }

    def keep(item: ArcTask, solved: tuple[dict[str, Any], Meter, Any]) -> None:  # in task order: memory grows
        record, meter, draft = solved
        i = len(records) + 1
        if record.get("failure"):
            session.errors.fail(record["failure"])
        if record["verified"] and record["source"] == "solved":  # reusable: --solutions <run>/solutions
            (run_dir / "solutions").mkdir(exist_ok=True)
            (run_dir / "solutions" / f"{item.id}.py").write_text(record["solution"])
        if _written(record):
            with session.task_context(), metering(meter):
                try:
                    ran = given[item.id].program if item.id in given else record["solution"]  # checked on every pair
                    program = ran if record["verified"] else None
                    record["write"] = writer_program.write(item, _shown(item, record), program=program, draft=draft)
                except Exception as exc:
                    record["write_error"] = error_text(exc)
                    session.errors.fail(failure_of(exc))
                else:
                    save_memory(writer_program.memory, run_dir / "memory" / f"step-{i:04d}.json")
                    if len(writer_program.memory):  # an empty memory never replaces what out holds
                        save_memory(writer_program.memory, out)
        record.update(meter.record())
        writer.write(record)
        records.append(record)

    todo = tasks[len(kept) :]
    try:
        with tqdm(
            total=len(tasks), initial=len(kept), desc=f"build_memory {config.format}", disable=not progress, unit="task"
        ) as bar:
            run_each(todo, solve, threads=config.threads, bar=bar, errors=session.errors, ordered=True, on_result=keep)
        if session.errors.failing:
            raise RunAborted(session.errors.why())
    finally:
        writer.close()
        session.note_process()
    refuse_empty_memory(records, writer_program.memory, out)
    results = _build_results(config, tasks, records, writer_program, out, session)
    if start is not None:  # what the build began from: its examples are the tasks not already held
        results["extended"] = began
    stopped = STOPPED_BY_BUDGET if len(records) < len(tasks) and session.errors.budget_reached else None
    return session.finish(results, threads=config.threads, resumed=len(kept), answered=len(records) - len(kept), stopped=stopped)


def refuse_empty_memory(records: list[dict[str, Any]], memory, out: Path) -> None:
    """Stop the build (:class:`RunAborted`, exit 1) when its tasks were abstracted into no entry at all.

    ``out`` was not written (an empty memory never replaces it), so a build that learnt nothing cannot
    pass for one that did; the run directory keeps what each task's abstraction answered."""
    abstracted = sum(1 for record in records if record.get("write") is not None)
    if abstracted and not len(memory):
        raise RunAborted(
            f"{abstracted} of {len(records)} tasks abstracted, but into no entry; {out} was left as it was "
            "(see the writes in examples.jsonl of the run directory)"
        )


def _start_memory(config: BuildConfig, run_dir: Path):
    """With ``extend``, the memory ``out`` held when this build began (kept in the run directory, so a build
    continued there starts from the same memory); ``None`` otherwise, or when there was no such file."""
    if not config.extend:
        return None
    start = run_dir / "memory" / "start.json"
    if not start.exists():
        if not Path(config.out).exists():
            log.info("--extend: %s does not exist yet; the build starts from an empty memory", config.out)
            return None
        start.parent.mkdir(parents=True, exist_ok=True)
        save_memory(load_memory(config.out), start)
    return load_memory(start)


def memory_sources(memory) -> set[str]:
    """The tasks a memory was written from: every concept's sources (a cheatsheet's own list)."""
    if isinstance(memory, ConceptMemory):
        return {source for entry in memory.entries for source in entry.sources}
    return set(memory.sources)


def _build_results(
    config: BuildConfig, tasks: list[ArcTask], records: list[dict[str, Any]], writer_program, out: Path, session: RunSession
) -> dict[str, Any]:
    errors, failures = Counter(), Counter()
    tally = UsageTally()
    verified = written = 0
    for record in records:
        if record.get("error"):
            errors[record["error"].split(":")[0]] += 1
        if record.get("write_error"):
            errors["write: " + record["write_error"].split(":")[0]] += 1
        if record.get("failure"):
            failures[record["failure"]["kind"]] += 1
        if record["verified"] or (config.unverified and record["solution"]):
            verified += record["verified"]
            written += "write" in record
        tally.add(record, role="task")
    return {
        "task": "arc",
        "command": "build_memory",
        "program": "build_memory",
        "format": config.format,
        "split": config.split,
        "lm": session.task.spec,
        "memory_lm": session.memory.spec,
        "examples": len(tasks),
        "verified": verified,
        "written": written,
        "concepts": len(writer_program.memory),
        "calls": sum(t.calls for t in tally.roles().values()),  # LM calls, every role
        "memory_file": str(out),
        "quality": concept_quality(writer_program.memory, dsl_primitives() if config.solutions == REARC else ())
        if isinstance(writer_program.memory, ConceptMemory)
        else {},
        "failures": dict(sorted(failures.items())),
        "faults": dict(sorted(tally.faults.items())),
        "lm_retries": dict(sorted(tally.retries.items())),
        "errors": dict(sorted(errors.items())),
        **tally.results(session.task.spec, session.memory.spec),
        "config": {k: v for k, v in asdict(config).items() if k != "threads"},
    }
