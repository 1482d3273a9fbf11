"""Evaluate an ARC program (ArcMemo paper, section 4 and Appendix B), and seed memories.

For each of ``runs`` repetitions: build the program (its sampling seed is the run
number), give it a fresh copy of the memory file, and run Algorithm 1 over the
tasks (``ArcProgram.solve_all``): tasks are solved ``threads`` at a time under
the task LM, memory reads and writes run on the memory LM, and every task's
attempts, retries, programs, outputs, failures, tokens and scores are written to
``examples.jsonl`` as it finishes. Memory snapshots go to ``memory/run<r>/``:
``step-0000.json`` as loaded, ``step-<i>.json`` after the write following problem i,
``final.json`` (with usage counts) at the end; what each write did (and spent) goes to
``memory/run<r>/writes.jsonl``, written just before its snapshot.

A run directory that already holds part of the run is continued: finished tasks are
not solved again (their memory reads are replayed: selection counts), and with
continual updates the memory is restored from the latest snapshot taken at a batch
boundary, and only the batch in progress at the crash is finished (its solved tasks
kept) and written, so the memory equals an uninterrupted run's. LM answers asked again
(a write cut short) come from the run's DSPy cache.

LM faults are retried (:mod:`memreason.lm.faults`): the task LM and the memory LM are each
wrapped in a :class:`GuardedLM` (roles ``task`` and ``memory``) under a
:class:`ResilientAdapter`. A task whose LM calls still fail is recorded with the kind
and reason of its failure and scores 0; the run goes on unless more than
``max_errors`` tasks fail in this process or the provider refuses the key or the bill
(:class:`RunAborted`, the work kept).

Scores per task (``memreason.eval.metrics``): ``oracle_at_k`` for k = 1..3 (k <= attempts;
otherwise null, see ``oracle_at_k_pooled`` which pools the attempts of all runs),
the official score (first two attempts, any match per test pair, fraction of
pairs), the strict score (one program passes every test pair), and the official
score had every attempt stopped after r retries (``score_by_retries``). Each is
averaged over tasks, then mean and sample std over runs. Results also hold failures,
faults and retries by kind, tokens by role and by program step (``arc_solver.solve``,
``arc_solver.retry``, ``concept_selector``, ``concept_abstractor``, ...) and dollar
cost; everything outside ``execution`` and ``wall_seconds`` follows from the run
directory's files, so a resumed run reports what an uninterrupted one does.

``build_memory`` solves training tasks with the baseline solver (or reads a
directory of user solutions, ``<task_id>.py`` defining ``transform``), keeps the
programs that reproduce every train and test output, and abstracts them into a
memory file, saved atomically after every write. Solutions it found itself are
kept in ``<run dir>/solutions/``, so another format can be built from them
without solving again (``--solutions``). It continues its run directory the same way.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

import dspy
from tqdm import tqdm

from memreason.datasets.arc import ArcDataError, ArcTask, load_split
from memreason.programs import PROGRAMS, build_program
from memreason.programs.arc_solver import Attempt, error_text
from memreason.programs.atomic_file import write_atomically
from memreason.programs.concept_memory import ConceptMemory
from memreason.programs.memory_file import Memory, empty_memory, load_memory, save_memory

from memreason.lm.cost import role_costs
from memreason.lm.faults import ErrorBudget, GuardedLM, ResilientAdapter, RetryPolicy, RunAborted, failure_of
from memreason.lm import LMChoice
from memreason.lm.bounded_json import BoundedJSONAdapter
from .metrics import mean_std, official_score, oracle_at_k, strict_at_k, strict_score
from .resume import read_examples
from .runs import JsonlWriter
from memreason.lm.tokens import Meter, Tokens, metering

KS = (1, 2, 3)
MEMORY_FORMAT = {"baseline": None, "cheatsheet": "cheatsheet", "arcmemo_oe": "oe", "arcmemo_ps": "ps",
                 "arcmemo_ps_noselect": "ps"}
# dspy's own exceptions that reach the solver unguarded, by the failure kind they are
_KINDS = {"LMAuthError": "auth", "LMBillingError": "billing", "AdapterParseError": "unparseable"}
# ArcConfig fields that are program knobs (a --config's knobs by these names set them, the rest go to the constructor)
KNOB_FIELDS = ("attempts", "retries", "top_k", "continual_every", "write_gate", "cot", "modality", "temperature")


@dataclass
class ArcConfig:
    """What one ARC evaluation asks for (written to ``config.json``)."""

    program: str
    split: str = "val100"
    tasks: list[str] | None = None
    limit: int | None = None
    memory: str | None = None
    attempts: int = 2
    retries: int = 0
    top_k: int | None = None
    continual_every: int | None = None
    write_gate: str = "train"
    cot: bool = False
    modality: str = "text"
    temperature: float = 0.7
    runs: int = 1
    threads: int = 1
    knobs: dict[str, Any] = field(default_factory=dict)
    program_state: str | None = None  # a DSPy state file (demos, instructions) loaded into each run's program

    @property
    def memory_format(self) -> str | None:
        return MEMORY_FORMAT.get(self.program, getattr(PROGRAMS[self.program].build(), "memory_format", None))

    def load_tasks(self) -> list[ArcTask]:
        tasks = load_split(self.split, ids=self.tasks, limit=self.limit)
        hidden = next((t.id for t in tasks if not t.labelled), None)
        if hidden:
            raise ArcDataError(f"task {hidden} has no test outputs, so it cannot be scored")
        return tasks

    def load_memory(self) -> Memory | None:
        """The memory file's contents (checked against the program), an empty memory, or None (no memory)."""
        format = self.memory_format
        if format is None:
            if self.memory:
                raise ValueError(f"{self.program} reads no memory; drop --memory")
            return None
        if not self.memory:
            return empty_memory(format)
        memory = load_memory(self.memory)
        if memory.format != format:
            raise ValueError(f"{self.program} needs a {format} memory, but {self.memory} holds a {memory.format} one")
        return memory

    def program_knobs(self, run: int) -> dict[str, Any]:
        knobs: dict[str, Any] = dict(attempts=self.attempts, retries=self.retries, cot=self.cot,
                                     temperature=self.temperature, seed=run, write_gate=self.write_gate)
        if self.memory_format is not None:
            knobs["continual_every"] = self.continual_every
        if self.memory_format in ("oe", "ps"):
            knobs["top_k"] = self.top_k
            if self.memory_format == "oe":
                knobs["modality"] = self.modality
        return {**knobs, **self.knobs}



def adapter_for(task: LMChoice, memory: LMChoice) -> dspy.Adapter:
    """Grammar-constrained JSON when either LM is a local model (JSON works for remote models too)."""
    return BoundedJSONAdapter() if task.local or memory.local else dspy.ChatAdapter()


@dataclass
class _Session:
    """What one process needs: guarded LMs, the adapter, the error budget."""

    task_lm: GuardedLM
    memory_lm: GuardedLM
    adapter: dspy.Adapter
    errors: ErrorBudget

    @classmethod
    def start(cls, task: LMChoice, memory: LMChoice, policy: RetryPolicy, max_errors: int | None) -> "_Session":
        # local models decode the same prompt the same way (greedy, under a JSON grammar): asking again cannot help
        parse_policy = replace(policy, retries=0) if task.local or memory.local else policy
        return cls(GuardedLM(task.lm, role="task", policy=policy), GuardedLM(memory.lm, role="memory", policy=policy),
                   ResilientAdapter.around(adapter_for(task, memory), parse_policy), ErrorBudget(max_errors, unit="tasks"))


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
    started = time.perf_counter()
    run_dir.mkdir(parents=True, exist_ok=True)
    finished = read_examples(run_dir / "examples.jsonl")
    if retry_failed:
        finished = {key: r for key, r in finished.items() if not r.get("failure") and not r.get("error")}
    policy = policy or RetryPolicy()
    session = _Session.start(task, memory, policy, max_errors)
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
    seconds = time.perf_counter() - started
    results = summarise(config, tasks, per_run, writes, task, memory)
    results["wall_seconds"] = round(seconds, 2)
    results["execution"] = {
        "wall_seconds": round(seconds, 2), "threads": config.threads, "resumed_examples": kept,
        "answered_examples": sum(len(r) for r in per_run) - kept, "retry_policy": asdict(policy), "max_errors": max_errors,
    }
    server = getattr(task.lm, "server", None)  # the local llama-server: its calls, reused prefix tokens, restarts
    if task.local and server is not None:
        results["execution"]["engine"] = server.stats.as_dict()
    return results


def _run(config: ArcConfig, run: int, tasks: list[ArcTask], initial: Memory | None, finished, session: _Session,
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
    write_meter = Meter(root=program)

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
        for i, solved in _solve_batch(program, todo, index, run, config, session, writer, bar).items():
            predictions[i] = solved
            done[i] = solved.record
        if session.errors.stopping:
            raise RunAborted(session.errors.why())
        return [predictions[index[item.id]] for item in batch]

    def on_write(i: int, records: list[dict[str, Any]]) -> None:
        entry = {"after_problem": start + i, "records": records, **_take(write_meter)}
        log = JsonlWriter(snapshots / "writes.jsonl")
        try:
            log.write(entry)  # before the snapshot: a snapshot always has its log line
        finally:
            log.close()
        save_memory(program.memory, snapshots / f"step-{start + i:04d}.json")

    with bar, dspy.context(lm=session.task_lm, adapter=session.adapter), metering(write_meter):
        program.solve_all(tasks[start:], solve_batch=solve_batch, on_write=on_write)
    if initial is not None:
        save_memory(program.memory, snapshots / "final.json")
    kept = sum(1 for i in range(len(tasks)) if (run, tasks[i].id) in finished and done[i] is finished[(run, tasks[i].id)])
    return [done[i] for i in range(len(tasks))], _read_writes(snapshots / "writes.jsonl"), kept


def _resume_point(config: ArcConfig, n: int, done: dict[int, dict], initial: Memory | None, snapshots: Path) -> int:
    """The first task this process passes through Algorithm 1 (a batch boundary with a memory snapshot).

    Finished tasks past the batch of the first unfinished one are forgotten (they read a memory
    that a redone batch may change: only ``--retry-failed`` leaves such tasks)."""
    k = config.continual_every if initial is not None else None
    first_missing = next((i for i in range(n) if i not in done), n)
    if not k:
        return 0
    end = (first_missing // k + 1) * k
    for i in [i for i in done if i >= end]:
        del done[i]
    start = first_missing // k * k
    while start > 0 and not (snapshots / f"step-{start:04d}.json").exists():
        start -= k  # the write after this batch did not finish: do it again
    return start


def _restore(program, initial: Memory, snapshots: Path, start: int) -> None:
    """Give ``program`` the memory as it was at problem ``start``; forget what was logged after it."""
    path = snapshots / f"step-{start:04d}.json"
    if path.exists():
        program.use_memory(load_memory(path))
    else:
        program.use_memory(type(initial).from_json(initial.to_json()))  # a fresh copy per run
        save_memory(program.memory, path)
    for stale in snapshots.glob("step-*.json"):
        if int(stale.stem.split("-")[1]) > start:
            stale.unlink()
    log = snapshots / "writes.jsonl"
    if log.exists():
        entries = [e for e in _read_writes(log) if e["after_problem"] <= start]
        write_json_lines(log, entries)


def _replay_read(program, record: dict[str, Any]) -> None:
    """What reading the memory did to it (selection counts), for a task solved by an earlier process."""
    selected = (record.get("read") or {}).get("selected")
    if isinstance(program.memory, ConceptMemory) and isinstance(selected, list):
        program.memory.use(selected)


def _read_writes(path: Path) -> list[dict[str, Any]]:
    """The writes of a run in order, one per write point (a later line for the same point wins)."""
    if not path.exists():
        return []
    by_point: dict[int, dict[str, Any]] = {}
    for line in path.read_text().splitlines():
        try:
            entry = json.loads(line)
            by_point[int(entry["after_problem"])] = entry
        except (ValueError, KeyError, TypeError):
            continue  # a line torn by a crash: its write is done again
    return [by_point[i] for i in sorted(by_point)]


def write_json_lines(path: Path, entries: list[dict[str, Any]]) -> None:
    """Replace ``path`` by ``entries``, one JSON object per line, atomically."""
    write_atomically(path, lambda handle: handle.writelines(json.dumps(e, default=str) + "\n" for e in entries))


def _take(meter: Meter) -> dict[str, Any]:
    """What ``meter`` counted since the last take, and start it afresh."""
    spent = meter.record()
    with meter._lock:
        meter.usage, meter.faults, meter.retries = {}, Counter(), Counter()
    return spent


def _solve_batch(program, batch: list[ArcTask], index: dict[str, int], run: int, config: ArcConfig,
                 session: _Session, writer: JsonlWriter, bar) -> dict[int, dspy.Prediction]:
    """Solve ``batch`` in parallel (``config.threads``), writing each record as it finishes; by task index."""

    def solve(item: ArcTask) -> dspy.Prediction | None:
        if session.errors.stopping:
            return None
        started = time.perf_counter()
        meter = Meter(root=program)
        attempts: list[Attempt] = []
        read: dict[str, Any] = {}
        failure = None
        with dspy.context(lm=session.task_lm, adapter=session.adapter), metering(meter):
            try:
                out = program(task=item)
                attempts, read = out.attempts, out.read
            except Exception as exc:  # one bad task must not stop the run
                failure = failure_of(exc)
        failure = failure or lm_failure(attempts)
        record = task_record(item, attempts, read, None, run=run, index=index[item.id], retries=config.retries,
                             failure=failure, spent=meter.record())
        record["seconds"] = round(time.perf_counter() - started, 2)
        writer.write(record)
        if failure:
            session.errors.fail(failure)
        return dspy.Prediction(attempts=attempts, record=record)  # attempts for the program's GETFEEDBACK

    finished: dict[int, dspy.Prediction] = {}
    if not batch:
        return finished
    pool = ThreadPoolExecutor(max_workers=config.threads)
    try:
        futures = {pool.submit(solve, item): index[item.id] for item in batch}
        for future in as_completed(futures):
            solved = future.result()
            if solved is None:
                continue
            finished[futures[future]] = solved
            scored = [p.record["scores"]["official_score"] for p in finished.values()]
            bar.set_postfix(official=f"{sum(scored) / len(scored):.0%}", failed=session.errors.failed)
            bar.update()
    finally:  # on Ctrl-C, tasks not started stay undone (a resumed run solves them); started ones finish and are kept
        pool.shutdown(wait=True, cancel_futures=True)
    return finished


def lm_failure(attempts: Sequence[Attempt]) -> dict[str, str] | None:
    """A task whose every LM call for a program failed (after retries): the last step's failure, else None."""
    steps = [s for a in attempts for s in a.steps]
    if not steps or not all(s.error for s in steps):
        return None
    kind, _, reason = steps[-1].error.partition(": ")
    return {"kind": _KINDS.get(kind, kind), "reason": reason}


def as_tokens(counts: dict[str, int] | None) -> Tokens:
    counts = counts or {}
    return Tokens(counts.get("prompt", 0), counts.get("completion", 0), counts.get("calls", 0))


def verify_matrix(task: ArcTask, attempts: Sequence[Attempt], retries: int | None = None) -> list[list[bool]]:
    """``verify[a][t]``: attempt a (stopped after ``retries`` retries; its final step by default) gets test t."""
    rows = []
    for attempt in attempts:
        step = attempt.final if retries is None else attempt.after(retries)
        rows.append([out is not None and out == pair.output for out, pair in zip(step.test_outputs, task.test)])
    return rows


def task_scores(verify: list[list[bool]]) -> dict[str, Any]:
    n = len(verify)
    if n == 0:  # the task failed before any attempt: nothing solved
        return {"oracle_at_k": {str(k): 0.0 for k in KS}, "official_score": 0.0, "strict_score": 0.0,
                "strict_at_k": {str(k): 0.0 for k in KS}}
    return {
        "oracle_at_k": {str(k): oracle_at_k(verify, k) if k <= n else None for k in KS},
        "official_score": official_score(verify),
        "strict_score": strict_score(verify),
        "strict_at_k": {str(k): strict_at_k(verify, k) if k <= n else None for k in KS},
    }



def task_record(item: ArcTask, attempts: list[Attempt], read: dict[str, Any], error: str | None, *,
                run: int, index: int, retries: int, failure: dict[str, str] | None = None,
                spent: dict[str, Any] | None = None) -> dict[str, Any]:
    """One line of ``examples.jsonl``: everything about one task in one run.

    ``failure`` (kind, reason) marks a task whose LM calls failed; ``spent`` is its :class:`Meter`
    record (tokens by role and step, faults, retries); without it tokens come from the steps."""
    verify = verify_matrix(item, attempts)
    scores = task_scores(verify)
    scores["score_by_retries"] = {
        str(r): task_scores(verify_matrix(item, attempts, r))["official_score"] for r in range(retries + 1)}
    scores["by_retries"] = {str(r): task_scores(verify_matrix(item, attempts, r)) for r in range(retries + 1)}
    if failure and not error:
        error = f"{failure['kind']}: {failure['reason']}"
    if spent is not None:
        usage = spent.get("usage") or {}
        roles = {role: sum((Tokens.of(t) for t in usage.get(role, {}).values()), Tokens()) for role in ("memory", "task")}
    else:
        roles = {"memory": as_tokens(read.get("tokens")), "task": Tokens()}
        for attempt in attempts:
            for step in attempt.steps:
                roles["task"] += as_tokens(step.tokens)
    record = {
        "run": run,
        "index": index,
        "id": item.id,
        "read": read,
        "attempts": [a.to_json() for a in attempts],
        "predictions": [a.final.test_outputs for a in attempts],
        "verify": verify,
        "passed_train": any(a.final.passed_train for a in attempts),
        "scores": scores,
        "tokens": {role: t.as_dict() for role, t in roles.items()},
        "failure": failure,
        "error": error,
    }
    if spent is not None:
        record.update(usage=spent.get("usage") or {}, faults=spent.get("faults") or {}, retries=spent.get("retries") or {})
    return record


def _mean_std_keyed(values: list[dict[str, float | None]]) -> tuple[dict[str, float | None], dict[str, float | None]]:
    means, stds = {}, {}
    for key in values[0]:
        column = [v[key] for v in values]
        if any(c is None for c in column):
            means[key] = stds[key] = None
        else:
            means[key], stds[key] = mean_std(column)
    return means, stds


def _run_scores(records: list[dict[str, Any]], retries: int) -> dict[str, Any]:
    """One run's scores: each task's scores averaged over tasks."""
    def avg(get):
        values = [get(r) for r in records]
        return None if any(v is None for v in values) else sum(values) / len(values)

    def summary(get_scores):
        return {
            "oracle_at_k": {str(k): avg(lambda r: get_scores(r)["oracle_at_k"][str(k)]) for k in KS},
            "official_score": avg(lambda r: get_scores(r)["official_score"]),
            "strict_score": avg(lambda r: get_scores(r)["strict_score"]),
            "strict_at_k": {str(k): avg(lambda r: get_scores(r)["strict_at_k"][str(k)]) for k in KS},
        }

    out = summary(lambda r: r["scores"])
    out["by_retries"] = {str(n): summary(lambda r, n=n: r["scores"]["by_retries"][str(n)]) for n in range(retries + 1)}
    out["score_by_retries"] = {n: s["official_score"] for n, s in out["by_retries"].items()}
    out["passed_train"] = avg(lambda r: float(r["passed_train"]))
    return out


def _aggregate(per_run_scores: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean and sample std over runs of every score (std keys end in ``_std``)."""
    out: dict[str, Any] = {}
    for key in ("oracle_at_k", "strict_at_k", "score_by_retries"):
        out[key], out[f"{key}_std"] = _mean_std_keyed([s[key] for s in per_run_scores])
    for key in ("official_score", "strict_score", "passed_train"):
        out[key], out[f"{key}_std"] = mean_std([s[key] for s in per_run_scores])
    return out




def summarise(config: ArcConfig, tasks: Sequence[ArcTask], per_run: list[list[dict[str, Any]]],
              writes: list[list[dict[str, Any]]], task: LMChoice, memory: LMChoice) -> dict[str, Any]:
    """The results of a run from its task records and memory writes (per run) alone."""
    run_scores = [_run_scores(records, config.retries) for records in per_run]
    by_retries = {}
    for r in range(config.retries + 1):
        by_retries[str(r)] = _aggregate([{**s["by_retries"][str(r)], "score_by_retries": {}, "passed_train": 0.0}
                                         for s in run_scores])
        for key in ("score_by_retries", "score_by_retries_std", "passed_train", "passed_train_std"):
            by_retries[str(r)].pop(key)
    pooled_n = config.attempts * config.runs
    pooled = {}
    for k in KS:
        if k > pooled_n:
            pooled[str(k)] = None
            continue
        values = []
        for i, item in enumerate(tasks):
            verify = [row for records in per_run for row in records[i]["verify"]]
            values.append(oracle_at_k(verify, k) if len(verify) >= k else 0.0)
        pooled[str(k)] = sum(values) / len(values) if values else None
    errors, program_failures, failures, faults, retries = Counter(), Counter(), Counter(), Counter(), Counter()
    usage: dict[str, dict[str, Tokens]] = {}
    hallucinated = selected = 0
    for records in per_run:
        for r in records:
            if r.get("failure"):
                failures[r["failure"]["kind"]] += 1
            if r["error"]:
                errors[r["error"].split(":")[0]] += 1
            for attempt in r["attempts"]:
                for step in attempt["steps"]:
                    if step["error"]:
                        errors["LM: " + step["error"].split(":")[0]] += 1
                    for check in step["train"] + step["test"]:
                        if check["failure"]:
                            program_failures[check["failure"]] += 1
            hallucinated += len(r["read"].get("hallucinated", []))
            picked = r["read"].get("selected")
            selected += len(picked) if isinstance(picked, list) else 0
            _add_usage(usage, r, "task")
            faults.update(r.get("faults") or {})
            retries.update(r.get("retries") or {})
    written = 0
    for entry in (e for run_writes in writes for e in run_writes):
        for record in entry["records"]:
            if record.get("error"):
                errors["write: " + record["error"].split(":")[0]] += 1
            else:
                written += 1
        _add_usage(usage, entry, "memory")
        faults.update(entry.get("faults") or {})
        retries.update(entry.get("retries") or {})
    roles = {role: sum(usage.get(role, {}).values(), Tokens()) for role in ("memory", "task")}
    return {
        "task": "arc",
        "program": config.program,
        "split": config.split,
        "lm": task.spec,
        "memory_lm": memory.spec,
        "examples": len(tasks),
        "runs": config.runs,
        "attempts": config.attempts,
        "retries": config.retries,
        **_aggregate(run_scores),
        "oracle_at_k_pooled": pooled,
        "by_retries": by_retries,
        "per_run": run_scores,
        "failures": dict(sorted(failures.items())),  # tasks scored 0 because their LM calls failed, by kind
        "faults": dict(sorted(faults.items())),  # every failed LM answer, by kind
        "lm_retries": dict(sorted(retries.items())),  # the faults asked again (``retries`` is the solver's depth)
        "errors": dict(sorted(errors.items())),
        "program_failures": dict(sorted(program_failures.items())),
        "selection": {"selected": selected, "hallucinated": hallucinated},
        "memory_writes": sum(len(w) for w in writes),  # write points (every k problems), with or without a verified solution
        "memory_solutions_written": written,
        "tokens": {role: t.as_dict() for role, t in roles.items()},
        "tokens_by_step": {role: {s: t.as_dict() for s, t in sorted(steps.items())} for role, steps in sorted(usage.items())},
        "cost": role_costs({"memory": (memory.spec, roles["memory"]), "task": (task.spec, roles["task"])}),
        "config": {k: v for k, v in asdict(config).items() if k != "threads"},
    }


def _add_usage(usage: dict[str, dict[str, Tokens]], record: dict[str, Any], role: str) -> None:
    """Add a record's tokens by role and step (``role``'s ``all`` for a record metered before steps were)."""
    if "usage" in record:
        for name, steps in (record["usage"] or {}).items():
            for step, tokens in steps.items():
                usage.setdefault(name, {})
                usage[name][step] = usage[name].get(step, Tokens()) + Tokens.of(tokens)
        return
    if role == "task":  # an older task record: {"memory": {...}, "task": {...}}
        for name, tokens in (record.get("tokens") or {}).items():
            usage.setdefault(name, {})
            usage[name]["all"] = usage[name].get("all", Tokens()) + Tokens.of(tokens)
    else:  # an older write entry: its records' own counts
        for item in record.get("records") or []:
            usage.setdefault("memory", {})
            usage["memory"]["all"] = usage["memory"].get("all", Tokens()) + Tokens.of(item.get("tokens"))


# -- seeding memory ---------------------------------------------------------------------------------


@dataclass
class BuildConfig:
    """What ``build_memory`` asks for (written to ``config.json``)."""

    format: str
    out: str
    split: str = "barc_seeds"
    tasks: list[str] | None = None
    limit: int | None = None
    solutions: str | None = None
    unverified: bool = False
    attempts: int = 2
    retries: int = 1
    cot: bool = False
    temperature: float = 0.7
    threads: int = 1

    def load(self) -> tuple[list[ArcTask], dict[str, str]]:
        """The tasks to seed from and, with ``solutions``, each task's user program (by task id)."""
        if not self.solutions:
            return load_split(self.split, ids=self.tasks, limit=self.limit), {}
        folder = Path(self.solutions).expanduser()
        if not folder.is_dir():
            raise ArcDataError(f"--solutions {folder} is not a directory")
        files = sorted(folder.glob("*.py"))
        if not files:
            raise ArcDataError(f"no solutions (<task_id>.py) in {folder}")
        wanted = [f.stem for f in files]
        if self.tasks is not None:
            wanted = [t for t in wanted if t in set(self.tasks)]
        tasks = load_split(self.split, ids=wanted, limit=self.limit)
        return tasks, {t.id: (folder / f"{t.id}.py").read_text() for t in tasks}


def passes_all(task: ArcTask, program: str, sandbox) -> bool:
    """Whether ``program`` reproduces every train and test output of ``task``."""
    pairs = list(task.train) + list(task.test)
    outcomes = sandbox.run(program, [p.input for p in pairs])
    return all(o.output is not None and o.output == p.output for o, p in zip(outcomes, pairs))




def build_memory(config: BuildConfig, *, task: LMChoice, memory: LMChoice, run_dir: Path, sandbox,
                 progress: bool = True, policy: RetryPolicy | None = None, max_errors: int | None = None) -> dict[str, Any]:
    """Seed a memory file from verified solutions (solved here, or the user's); returns the results.

    Continues what ``run_dir`` holds: tasks already recorded are not solved again and the memory
    is restored from the snapshot taken after the last of them that was written."""
    started = time.perf_counter()
    tasks, given = config.load()
    policy = policy or RetryPolicy()
    session = _Session.start(task, memory, policy, max_errors)
    writer_program = build_program({"oe": "arcmemo_oe", "ps": "arcmemo_ps", "cheatsheet": "cheatsheet"}[config.format],
                                   sandbox=sandbox)
    writer_program.set_memory_lm(session.memory_lm)
    solver = build_program("baseline", attempts=config.attempts, retries=config.retries, cot=config.cot,
                           temperature=config.temperature, sandbox=sandbox)
    solver.solver.parallel = config.threads > 1
    run_dir.mkdir(parents=True, exist_ok=True)
    finished = read_examples(run_dir / "examples.jsonl")
    kept: list[dict[str, Any]] = []
    for item in tasks:  # records are written in task order: keep the finished prefix
        if (0, item.id) not in finished:
            break
        kept.append(finished[(0, item.id)])
    snapshot = max((i for i in range(1, len(kept) + 1) if (run_dir / "memory" / f"step-{i:04d}.json").exists()), default=0)
    writer_program.use_memory(load_memory(run_dir / "memory" / f"step-{snapshot:04d}.json") if snapshot
                              else empty_memory(config.format))
    out = Path(config.out)
    save_memory(writer_program.memory, out)
    writer = JsonlWriter(run_dir / "examples.jsonl")
    records = list(kept)

    def solve(item: ArcTask, meter: Meter) -> dict[str, Any]:
        if session.errors.stopping:
            return {"skipped": True}
        if item.id in given:
            ok = passes_all(item, given[item.id], sandbox)
            return {"run": 0, "id": item.id, "source": "user", "solution": given[item.id], "verified": ok, "attempts": []}
        with dspy.context(lm=session.task_lm, adapter=session.adapter), metering(meter):
            try:
                attempts = solver(task=item).attempts
            except Exception as exc:
                failure = failure_of(exc)
                return {"run": 0, "id": item.id, "source": "solved", "solution": None, "verified": False, "attempts": [],
                        "failure": failure, "error": f"{failure['kind']}: {failure['reason']}"}
        solution = next((a.final.program for a in attempts
                         if a.final.passed_train and all(verify_matrix(item, [a])[0])), None)
        failure = lm_failure(attempts)
        return {"run": 0, "id": item.id, "source": "solved", "solution": solution, "verified": solution is not None,
                "attempts": [a.to_json() for a in attempts], "failure": failure,
                "error": f"{failure['kind']}: {failure['reason']}" if failure else None}

    todo = tasks[len(kept):]
    try:
        with ThreadPoolExecutor(max_workers=config.threads) as pool, \
                tqdm(total=len(tasks), initial=len(kept), desc=f"build_memory {config.format}", disable=not progress,
                     unit="task") as bar:
            meters = [Meter(root=solver) for _ in todo]
            futures = [pool.submit(solve, item, meter) for item, meter in zip(todo, meters)]
            for i, (item, future, meter) in enumerate(zip(todo, futures, meters), len(kept) + 1):
                record = future.result()  # abstraction in task order: memory grows
                if record.get("skipped"):
                    break
                if record.get("failure"):
                    session.errors.fail(record["failure"])
                if record["verified"] and record["source"] == "solved":  # reusable: --solutions <run>/solutions
                    (run_dir / "solutions").mkdir(exist_ok=True)
                    (run_dir / "solutions" / f"{item.id}.py").write_text(record["solution"])
                if record["verified"] or (config.unverified and record["solution"]):
                    with dspy.context(lm=session.task_lm, adapter=session.adapter), metering(meter):
                        try:
                            record["write"] = writer_program.write(item, record["solution"])
                        except Exception as exc:
                            record["write_error"] = error_text(exc)
                    save_memory(writer_program.memory, run_dir / "memory" / f"step-{i:04d}.json")
                    save_memory(writer_program.memory, out)
                record.update(meter.record())
                writer.write(record)
                records.append(record)
                bar.update()
            if session.errors.stopping:
                for future in futures:
                    future.cancel()
                raise RunAborted(session.errors.why())
    finally:
        writer.close()
    return _build_results(config, tasks, records, writer_program, out, task, memory, time.perf_counter() - started,
                          len(kept), policy, max_errors)


def _build_results(config, tasks, records, writer_program, out, task, memory, seconds, kept, policy, max_errors):
    errors, failures, faults, retries = Counter(), Counter(), Counter(), Counter()
    usage: dict[str, dict[str, Tokens]] = {}
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
        for name, steps in (record.get("usage") or {}).items():
            for step, tokens in steps.items():
                usage.setdefault(name, {})
                usage[name][step] = usage[name].get(step, Tokens()) + Tokens.of(tokens)
        faults.update(record.get("faults") or {})
        retries.update(record.get("retries") or {})
    roles = {role: sum(usage.get(role, {}).values(), Tokens()) for role in ("memory", "task")}
    return {
        "task": "arc",
        "command": "build_memory",
        "program": "build_memory",
        "format": config.format,
        "split": config.split,
        "lm": task.spec,
        "memory_lm": memory.spec,
        "examples": len(tasks),
        "verified": verified,
        "written": written,
        "concepts": len(writer_program.memory),
        "memory_file": str(out),
        "failures": dict(sorted(failures.items())),
        "faults": dict(sorted(faults.items())),
        "lm_retries": dict(sorted(retries.items())),
        "errors": dict(sorted(errors.items())),
        "tokens": {role: t.as_dict() for role, t in roles.items()},
        "tokens_by_step": {role: {s: t.as_dict() for s, t in sorted(steps.items())} for role, steps in sorted(usage.items())},
        "cost": role_costs({"memory": (memory.spec, roles["memory"]), "task": (task.spec, roles["task"])}),
        "wall_seconds": round(seconds, 2),
        "execution": {"wall_seconds": round(seconds, 2), "threads": config.threads, "resumed_examples": kept,
                      "answered_examples": len(records) - kept, "retry_policy": asdict(policy), "max_errors": max_errors},
        "config": {k: v for k, v in asdict(config).items() if k != "threads"},
    }
