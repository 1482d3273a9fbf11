"""Evaluate an ARC program: Algorithm 1 over the tasks, ``runs`` times, resumable (see :mod:`memreason.eval.arc`)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Sequence

import dspy
from tqdm import tqdm

from memreason.datasets.arc import ArcTask
from memreason.lm import LMChoice
from memreason.lm.faults import RetryPolicy, RunAborted, failure_of
from memreason.lm.tokens import Meter, metering
from memreason.programs import build_program
from memreason.programs.arc_solver import Attempt
from memreason.programs.memory_file import Memory, save_memory

from ..loop import run_each
from ..resume import read_examples
from ..runs import JsonlWriter
from ..session import RunSession
from ..traces import TraceStore, example_unit, write_unit
from .checkpoints import _read_writes, _replay_read, _restore, _resume_point
from .config import ArcConfig
from .scoring import lm_failure, task_record
from .summary import summarise


def evaluate_arc(
    config: ArcConfig,
    *,
    task: LMChoice,
    memory: LMChoice,
    run_dir: Path,
    sandbox,
    progress: bool = True,
    tasks: Sequence[ArcTask] | None = None,
    initial_memory: Memory | None = None,
    policy: RetryPolicy | None = None,
    max_errors: int | None = None,
    retry_failed: bool = False,
) -> dict[str, Any]:
    """Evaluate ``config`` on ``tasks`` (default: the config's split) with programs run in ``sandbox``,
    continuing whatever ``run_dir`` already holds; ``retry_failed`` solves again the tasks recorded as failures."""
    tasks = list(tasks) if tasks is not None else config.load_tasks()
    initial = initial_memory if initial_memory is not None else config.load_memory()
    run_dir.mkdir(parents=True, exist_ok=True)
    finished = read_examples(run_dir / "examples.jsonl")
    if retry_failed:
        finished = {key: r for key, r in finished.items() if not r.get("failure") and not r.get("error")}
    session = RunSession.start(task, memory, policy=policy, max_errors=max_errors, unit="tasks", one_adapter=True)
    writer = JsonlWriter(run_dir / "examples.jsonl")
    per_run: list[list[dict[str, Any]]] = []
    writes: list[list[dict[str, Any]]] = []
    kept = 0
    try:
        for run in range(config.runs):
            records, run_writes, run_kept = _run(config, run, tasks, initial, finished, session, sandbox, run_dir,
                                                 writer, progress)
            per_run.append(records)
            writes.append(run_writes)
            kept += run_kept
    finally:
        writer.close()
    return session.finish(summarise(config, tasks, per_run, writes, task, memory), threads=config.threads, resumed=kept,
                          answered=sum(len(r) for r in per_run) - kept)


def _run(config: ArcConfig, run: int, tasks: list[ArcTask], initial: Memory | None, finished, session: RunSession,
         sandbox, run_dir: Path, writer: JsonlWriter, progress: bool):
    """Run ``run`` of Algorithm 1, continuing from what ``finished`` holds; (records, writes, tasks kept)."""
    program = build_program(config.program, **config.program_knobs(run), sandbox=sandbox)
    program.solver.parallel = config.threads > 1  # a task's attempts go to the LM at once too
    if config.program_state:
        program.load(config.program_state)  # before the memory LM is set, which a loaded state would replace
    program.set_memory_lm(session.memory_lm)  # memory reads and writes: metered as the memory role
    snapshots = run_dir / "memory" / f"run{run}"
    index = {item.id: i for i, item in enumerate(tasks)}
    done = {i: finished[(run, item.id)] for i, item in enumerate(tasks) if (run, item.id) in finished}
    start = _resume_point(config, len(tasks), done, initial, snapshots)
    if initial is not None:
        _restore(program, initial, snapshots, start)
    bar = tqdm(total=len(tasks), initial=len(done), desc=f"{config.program} run {run + 1}/{config.runs}",
               disable=not progress, unit="task", dynamic_ncols=True)
    write_meter = Meter(root=program, trace=True)
    traces = TraceStore(run_dir)

    def solve_batch(batch: list[ArcTask]) -> list[dspy.Prediction]:
        predictions, todo = {}, []
        for item in batch:
            i = index[item.id]
            if i in done:  # finished before: its read is replayed, its attempts feed the write
                record = done[i]
                _replay_read(program, record)
                predictions[i] = dspy.Prediction(attempts=[Attempt.from_json(a) for a in record["attempts"]], record=record)
            else:
                todo.append(item)
        for i, solved in _solve_batch(program, todo, index, run, config, session, writer, traces, bar).items():
            predictions[i] = solved
            done[i] = solved.record
        if session.errors.stopping:
            raise RunAborted(session.errors.why())
        return [predictions[index[item.id]] for item in batch]

    def on_write(i: int, records: list[dict[str, Any]]) -> None:
        entry = {"after_problem": start + i, "records": records, **write_meter.take()}
        traces.write(write_unit(run, start + i), write_meter.take_calls())
        log = JsonlWriter(snapshots / "writes.jsonl")
        try:
            log.write(entry)  # before the snapshot: a snapshot always has its log line
        finally:
            log.close()
        save_memory(program.memory, snapshots / f"step-{start + i:04d}.json")

    with bar, session.task_context(), metering(write_meter):
        program.solve_all(tasks[start:], solve_batch=solve_batch, on_write=on_write)
    if initial is not None:
        save_memory(program.memory, snapshots / "final.json")
    kept = sum(1 for i in range(len(tasks)) if (run, tasks[i].id) in finished and done[i] is finished[(run, tasks[i].id)])
    return [done[i] for i in range(len(tasks))], _read_writes(snapshots / "writes.jsonl"), kept


def _solve_batch(program, batch: list[ArcTask], index: dict[str, int], run: int, config: ArcConfig,
                 session: RunSession, writer: JsonlWriter, traces: TraceStore, bar) -> dict[int, dspy.Prediction]:
    """Solve ``batch`` in parallel (``config.threads``), writing each record as it finishes; by task index."""

    def solve(item: ArcTask) -> dspy.Prediction | None:
        if session.errors.stopping:
            return None
        started = time.perf_counter()
        meter = Meter(root=program, trace=True)
        attempts: list[Attempt] = []
        read: dict[str, Any] = {}
        failure = None
        with session.task_context(), metering(meter):
            try:
                out = program(task=item)
                attempts, read = out.attempts, out.read
            except Exception as exc:  # one bad task must not stop the run
                failure = failure_of(exc)
        failure = failure or lm_failure(attempts)
        record = task_record(item, attempts, read, run=run, index=index[item.id], retries=config.retries,
                             failure=failure, spent=meter.record())
        record["seconds"] = round(time.perf_counter() - started, 2)
        traces.write(example_unit(run, item.id), meter.take_calls())  # before its line: a line always has its trace
        writer.write(record)
        if failure:
            session.errors.fail(failure)
        return dspy.Prediction(attempts=attempts, record=record)  # attempts for the program's GETFEEDBACK

    def official(done: list[dspy.Prediction]) -> dict[str, str]:
        return {"official": f"{sum(p.record['scores']['official_score'] for p in done) / len(done):.0%}"}

    return {index[item.id]: solved for item, solved in run_each(batch, solve, threads=config.threads, bar=bar,
                                                                errors=session.errors, postfix=official)}
