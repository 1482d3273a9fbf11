"""Evaluate an ARC program: Algorithm 1 over the tasks, ``runs`` times, resumable (see :mod:`memreason.eval.arc`)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import dspy
from tqdm import tqdm

from memreason.datasets.arc import ArcTask
from memreason.lm import LMChoice
from memreason.lm.faults import RetryPolicy, RunAborted, failure_of
from memreason.lm.spend import Spend
from memreason.lm.tokens import Meter, merge_lms, metering
from memreason.programs import build_program
from memreason.programs.arcmemo.arc_program import PassesDone, unfinished
from memreason.programs.arcmemo.arc_solver import Attempt
from memreason.programs.arcmemo.memory_file import Memory, save_memory

from ..harness.budget import STOPPED_BY_BUDGET, answered_so_far
from ..harness.lms import memory_chars
from ..harness.loop import run_each
from ..harness.resume import read_examples
from ..harness.runs import JsonlWriter
from ..harness.session import RunSession
from ..harness.traces import TraceStore, example_unit, write_unit
from .attribution import official
from .checkpoints import finish_pass, finished_pass, read_writes, replay_read, restore_memory, restore_pass, resume_point
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
    spend: Spend | None = None,
) -> dict[str, Any]:
    """Evaluate ``config`` on ``tasks`` (default: the config's split) with programs run in ``sandbox``,
    continuing whatever ``run_dir`` already holds; ``retry_failed`` solves again the tasks recorded as failures.
    ``spend``: the spending limit; once it is reached no task starts, and the results are those of the tasks every
    started run answered (``execution["stopped"] == "budget"``)."""
    tasks = list(tasks) if tasks is not None else config.load_tasks()
    initial = initial_memory if initial_memory is not None else config.load_memory()
    run_dir.mkdir(parents=True, exist_ok=True)
    passed = {run: finished_pass(run_dir, run) for run in range(config.runs)}
    # a record of pass 0, or of a retry pass its run finished (a pass cut short is done again)
    finished = read_examples(
        run_dir / "examples.jsonl", keep=lambda r: int(r.get("pass", 0)) <= max(0, passed.get(int(r["run"]), -1))
    )
    if retry_failed:
        finished = {key: r for key, r in finished.items() if not r.get("failure") and not r.get("error")}
    session = RunSession.start(
        task, memory, policy=policy, max_errors=max_errors, unit="tasks", one_adapter=True, spend=spend, run_dir=run_dir
    )
    writer = JsonlWriter(run_dir / "examples.jsonl")
    stopped = None
    per_run: list[list[dict[str, Any]]] = []
    writes: list[list[dict[str, Any]]] = []
    kept = 0
    try:
        for run in range(config.runs):
            records, run_writes, run_kept = _run(
                config, run, tasks, initial, finished, session.for_run(run), sandbox, run_dir, writer, progress
            )
            per_run.append(records)
            writes.append(run_writes)
            kept += run_kept
    except RunAborted:
        if not session.errors.budget_reached:
            raise
        stopped = _answered_so_far(config, tasks, run_dir, finished)  # the spending limit: keep what is done
        if not stopped.per_run:
            raise  # nothing answered: no results to write
        tasks, per_run, writes = stopped.tasks, stopped.per_run, stopped.writes
    finally:
        writer.close()
        session.note_process()
    return session.finish(
        summarise(config, tasks, per_run, writes, task, memory),
        threads=config.threads,
        resumed=stopped.resumed if stopped else kept,
        answered=stopped.answered if stopped else sum(len(r) for r in per_run) - kept,
        stopped=STOPPED_BY_BUDGET if stopped and not stopped.complete else None,
    )


@dataclass
class _SoFar:
    """What a run stopped at its spending limit holds: the tasks every started run answered, their records and the
    runs' memory writes; tasks kept from before and answered by this process; whether it is done after all."""

    tasks: list[ArcTask]
    per_run: list[list[dict[str, Any]]]
    writes: list[list[dict[str, Any]]]
    resumed: int
    answered: int
    complete: bool


def _answered_so_far(config: ArcConfig, tasks: list[ArcTask], run_dir: Path, finished) -> _SoFar:
    now = read_examples(run_dir / "examples.jsonl", repair=False)
    per_run = answered_so_far(now, config.runs, [t.id for t in tasks])
    common = {r["id"] for r in per_run[0]} if per_run else set()
    kept = [t for t in tasks if t.id in common]
    writes = [read_writes(run_dir / "memory" / f"run{r}" / "writes.jsonl") for r in range(len(per_run))]
    passes = config.retry_mode == "passes" and config.retries > 0  # a later pass may be cut short with every task recorded
    return _SoFar(
        tasks=kept,
        per_run=per_run,
        writes=writes,
        resumed=sum(finished.get(key) == record for key, record in now.items()),
        answered=sum(finished.get(key) != record for key, record in now.items()),
        complete=len(per_run) == config.runs and len(kept) == len(tasks) and not passes,
    )


def _run(
    config: ArcConfig,
    run: int,
    tasks: list[ArcTask],
    initial: Memory | None,
    finished,
    session: RunSession,
    sandbox,
    run_dir: Path,
    writer: JsonlWriter,
    progress: bool,
):
    """Run ``run`` of Algorithm 1 (and its retry passes), continuing from what ``finished`` holds;
    (records, writes, tasks kept)."""
    program = build_program(config.program, **config.program_knobs(run), sandbox=sandbox)
    program.solver.parallel = config.threads > 1  # a task's attempts go to the LM at once too
    if config.program_state:
        program.load(config.program_state)  # before the memory LM is set, which a loaded state would replace
    session.note_program(program)  # its instructions, for the run's manifest
    program.set_memory_lm(session.memory_lm)  # memory reads and writes: metered as the memory role
    program.show_memory_within(memory_chars(session.memory))  # a growing memory still fits the context
    snapshots = run_dir / "memory" / f"run{run}"
    index = {item.id: i for i, item in enumerate(tasks)}
    passed = finished_pass(run_dir, run) if program.passes else -1
    ours = {item.id: finished[(run, item.id)] for item in tasks if (run, item.id) in finished}
    if passed >= 0 and len(ours) < len(tasks):
        # --retry-failed dropped tasks whose pass 0 is done: every pass is done again from the start
        # (in Algorithm 1's order; what did not fail answers from the run's cache)
        passed, ours = -1, {}
        finish_pass(run_dir, run, -1)
        for stale in snapshots.glob("pass*.json"):
            stale.unlink()
    if passed >= 0:  # continue after the last finished pass
        done = {index[i]: r for i, r in ours.items()}
        if initial is not None:
            restore_pass(program, snapshots, passed)
        resume = PassesDone(passed + 1, [_prediction(done[i]) for i in range(len(tasks))], _written(snapshots / "writes.jsonl"))
    else:  # in pass 0: continue from the last snapshot at a batch boundary, as an inline run does
        done = {index[i]: r for i, r in ours.items() if int(r.get("pass", 0)) == 0}
        start = resume_point(config, len(tasks), done, initial, snapshots)
        if initial is not None:
            restore_memory(program, initial, snapshots, start)
        resume = PassesDone(0, [_prediction(done[i]) for i in range(start)], _written(snapshots / "writes.jsonl"))
    kept_records = dict(done)
    write_meter = Meter(root=program, trace=True)
    traces = TraceStore(run_dir)
    bars: dict[int, tqdm] = {}
    scores: dict[int, list[float]] = {}  # per pass: the official score of each task its bar has counted
    passes = f" pass {{}}/{program.passes + 1}" if program.passes else ""

    def bar(p: int, total: int, initial: int = 0) -> tqdm:
        if p not in bars:
            desc = f"{config.program} run {run + 1}/{config.runs}" + passes.format(p)
            bars[p] = tqdm(total=total, initial=initial, desc=desc, disable=not progress, unit="task", dynamic_ncols=True)
        return bars[p]

    def solve_batch(batch: list[ArcTask]) -> list[dspy.Prediction]:
        predictions, todo = {}, []
        for item in batch:
            i = index[item.id]
            if i in done:  # finished before: its read is replayed, its attempts feed the write
                replay_read(program, done[i])
                predictions[i] = _prediction(done[i])
            else:
                todo.append(item)
        if 0 not in scores:  # resumed tasks count too
            scores[0] = [official(r) for r in done.values()]
        shown = scores[0]
        solved = _solve_batch(
            program, todo, index, run, config, session, writer, traces, bar(0, len(tasks), len(done)), shown, retry_pass=None
        )
        for i, prediction in solved.items():
            predictions[i] = prediction
            done[i] = prediction.record
        _stop_if_asked(session)
        return [predictions[index[item.id]] for item in batch]

    def retry_batch(p: int, batch: list[tuple[ArcTask, dspy.Prediction]]) -> list[dspy.Prediction]:
        before = {item.id: prediction for item, prediction in batch}
        progress = bars[p] if p in bars else bar(p, sum(unfinished(_prediction(r)) for r in done.values()))  # counted once a pass
        solved = _solve_batch(
            program,
            [item for item, _ in batch],
            index,
            run,
            config,
            session,
            writer,
            traces,
            progress,
            scores.setdefault(p, []),
            retry_pass=(p, before),
        )
        for i, prediction in solved.items():
            done[i] = prediction.record
        _stop_if_asked(session)
        return [solved.get(index[item.id], before[item.id]) for item, _ in batch]

    def on_write(i: int, records: list[dict[str, Any]]) -> None:
        p = program.pass_index
        entry = {"pass": p, "after_problem": i, "records": records, **write_meter.take()}
        traces.write(write_unit(run, i) if p == 0 else f"{write_unit(run, i)}-pass{p}", write_meter.take_calls())
        log = JsonlWriter(snapshots / "writes.jsonl")
        try:
            log.write(entry)  # before the snapshot: a snapshot always has its log line
        finally:
            log.close()
        save_memory(program.memory, snapshots / (f"step-{i:04d}.json" if p == 0 else f"pass{p}-step-{i:04d}.json"))

    def on_pass(p: int, predictions: list[Any]) -> None:
        if bars.get(p) is not None:
            bars[p].close()
        if not program.passes:
            return
        if initial is not None:
            save_memory(program.memory, snapshots / f"pass-{p}.json")
        finish_pass(run_dir, run, p)

    try:
        with session.task_context(), metering(write_meter):
            program.solve_all(
                tasks, solve_batch=solve_batch, retry_batch=retry_batch, on_write=on_write, on_pass=on_pass, resume=resume
            )
    finally:
        for open_bar in bars.values():
            open_bar.close()
    if initial is not None:
        save_memory(program.memory, snapshots / "final.json")
    kept = sum(1 for i, record in kept_records.items() if done[i] is record)
    return [done[i] for i in range(len(tasks))], read_writes(snapshots / "writes.jsonl"), kept


def _prediction(record: dict[str, Any]) -> dspy.Prediction:
    """A task as a finished record holds it: what the program's loop and its retry passes need."""
    return dspy.Prediction(
        attempts=[Attempt.from_json(a) for a in record["attempts"]],
        read=record.get("read") or {},
        concepts=record.get("concepts", ""),
        record=record,
    )


def _written(log: Path) -> set[str]:
    """The tasks whose solutions a run's memory writes took (each is written once)."""
    return {r["task"] for entry in read_writes(log) for r in entry["records"] if "task" in r}


def _stop_if_asked(session: RunSession) -> None:
    if session.errors.stopping:
        raise RunAborted(session.errors.why())


def _solve_batch(
    program,
    batch: list[ArcTask],
    index: dict[str, int],
    run: int,
    config: ArcConfig,
    session: RunSession,
    writer: JsonlWriter,
    traces: TraceStore,
    bar,
    shown: list[float],
    retry_pass: tuple[int, dict[str, dspy.Prediction]] | None,
) -> dict[int, dspy.Prediction]:
    """Solve ``batch`` in parallel (``config.threads``), writing each record as it finishes; by task index.

    ``shown``: the official scores of the tasks the pass's bar has counted, in earlier batches too; each
    finished task's is added, and the bar shows their mean (the pass's score so far, not the batch's).

    ``retry_pass`` (p, predictions by task id): instead of solving, give each task's unfinished
    attempts one more step (retry pass p); its record then holds every step so far, and what the
    task spent in all passes."""

    def solve(item: ArcTask) -> dspy.Prediction | None:
        if session.errors.stopping:
            return None
        started = time.perf_counter()
        meter = Meter(root=program, trace=True)
        before = retry_pass[1][item.id] if retry_pass else None
        attempts: list[Attempt] = list(before.attempts) if before else []
        read: dict[str, Any] = dict(before.read) if before else {}
        concepts = before.concepts if before else ""
        failure = None
        with session.task_context(), metering(meter):
            try:
                out = program.retry_pass(item, before) if before else program(task=item)
                attempts, read, concepts = out.attempts, out.read, out.concepts
            except Exception as exc:  # one bad task must not stop the run
                failure = failure_of(exc)
        failure = failure or lm_failure(attempts)
        spent = meter.record()
        earlier = before.record if before else {}
        if earlier:
            spent = {key: _add(earlier.get(key) or {}, spent.get(key) or {}) for key in ("usage", "faults", "retries")} | {
                "lms": merge_lms(earlier.get("lms") or {}, spent.get("lms") or {})
            }
        record = task_record(
            item, attempts, read, run=run, index=index[item.id], retries=config.retries, failure=failure, spent=spent
        )
        record["seconds"] = round(time.perf_counter() - started + (earlier.get("seconds") or 0), 2)
        if program.passes:
            record["pass"] = retry_pass[0] if retry_pass else 0
            record["concepts"] = concepts  # what a later pass's retries start from
        calls = meter.take_calls()
        if program.passes:  # each call knows its pass: a pass done again after a crash replaces its own calls
            for call in calls:
                call["pass"] = record["pass"]
        if before:
            calls = [c for c in traces.read(example_unit(run, item.id)) if c.get("pass", 0) < record["pass"]] + calls
        traces.write(example_unit(run, item.id), calls)  # before its line: a line always has its trace
        writer.write(record)
        if failure:
            session.errors.fail(failure)
        return dspy.Prediction(attempts=attempts, read=read, concepts=concepts, record=record)

    def count(item: ArcTask, solved: dspy.Prediction) -> None:
        shown.append(official(solved.record))

    def so_far(done: list[dspy.Prediction]) -> dict[str, str]:
        return {"official": f"{sum(shown) / len(shown):.0%}"}

    finished = run_each(batch, solve, threads=config.threads, bar=bar, errors=session.errors, postfix=so_far, on_result=count)
    return {index[item.id]: solved for item, solved in finished}


def _add(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Two nested dicts of counts added key by key (what a task spent over its passes)."""
    out = dict(a)
    for key, value in b.items():
        if isinstance(value, dict):
            out[key] = _add(out.get(key) or {}, value)
        else:
            out[key] = (out.get(key) or 0) + value
    return out
