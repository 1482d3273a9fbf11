"""Evaluate a program on an inductive task: each problem builds its own memory from its own episodes.

For each of ``runs`` repetitions and each problem (``threads`` at a time): build the program
for the task, let it memorize the problem's episodes under the memory LM (or restore the
memory a previous process saved in ``memory/run<r>/<problem>.json``), then answer the
problem's queries under the task LM, appending one JSONL line per query (after the trace of
the problem's answering calls, ``traces/run<r>/<query>.json.gz``; the memory build's calls go
to ``traces/run<r>/memory-<problem>.json.gz``). Queries already in ``examples.jsonl`` are not
answered again and saved memories are not rebuilt, so a stopped run continues where it was.
Problems whose episodes are the same (ACRE asks four queries of each set of experiments)
share one memory: the first builds it while the others wait, and each of theirs is saved as
a copy that names the first (``same_episodes_as``) and counts none of its calls.

The harness is the Experience-Transfer one's (:mod:`memreason.eval.harness`: session, loop,
records, traces, resume); only the unit differs: a problem with its own episodes, not one
memory shared by every scene. Results hold accuracy (mean and std over runs, 95% bootstrap CI
over the queries), the share of problems whose checked program kept a hypothesis, failures,
faults, retries and tokens by role and step.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from memreason.datasets.inductive import Problem
from memreason.lm import LMChoice
from memreason.lm.faults import RetryPolicy, RunAborted, failure_of
from memreason.lm.spend import Spend
from memreason.lm.tokens import Meter, metering
from memreason.programs import build_program
from memreason.signatures import Episode

from ..harness.loop import finish_example, run_each
from ..harness.resume import identity_field, read_examples
from ..harness.runs import JsonlWriter, read_json, write_json
from ..harness.session import RunSession
from ..harness.traces import TraceStore, example_unit
from ..harness.usage import UsageTally
from ..metrics import mean_std
from ..stats import ci_method, intervals

__all__ = ["InductiveConfig", "evaluate_inductive", "problem_episodes"]


@dataclass
class InductiveConfig:
    """What one evaluation on an inductive task asks for (written to ``config.json``)."""

    program: str = identity_field()
    task: str = identity_field()
    limit: int | None = identity_field(None)
    runs: int = identity_field(1)
    threads: int = 1
    seed: int = identity_field(0)
    knobs: dict[str, Any] = identity_field(default_factory=dict)
    # the temperature of a checked program's sampled rounds (knob samples > 1), fitted to the memory LM: None, its own
    sample_temperature: float | None = None

    def build(self, task: Any) -> Any:
        """The program with its knobs (and the sampled rounds' temperature, where the run sends one)."""
        extra = {} if self.sample_temperature is None else {"sample_temperature": self.sample_temperature}
        return build_program(self.program, task=task, **{**self.knobs, **extra})


def problem_episodes(problem: Problem) -> list[Episode]:
    """A problem's episodes as memory: each observation's text, labelled with its outcome's text."""
    return [Episode(observation=e.text, label=e.label) for e in problem.episodes]


def oracle_hypotheses(problem: Problem) -> list[str]:
    """A problem's true rule as the statements an oracle row reads (none where the task gives no true rule)."""
    return list((problem.oracle or {}).get("hypotheses", []))


def evaluate_inductive(
    config: InductiveConfig,
    benchmark: Any,
    *,
    task: LMChoice,
    memory: LMChoice,
    run_dir: Path,
    progress: bool = True,
    policy: RetryPolicy | None = None,
    max_errors: int | None = None,
    retry_failed: bool = False,
    spend: Spend | None = None,
) -> dict[str, Any]:
    """Evaluate ``config`` on ``benchmark`` (a :class:`memreason.eval.tasks.ProblemTask`) into ``run_dir``,
    continuing whatever that directory already holds."""
    inductive, problems = benchmark, benchmark.problems(seed=config.seed, limit=config.limit)
    run_dir.mkdir(parents=True, exist_ok=True)
    finished = read_examples(run_dir / "examples.jsonl")
    if retry_failed:
        finished = {key: r for key, r in finished.items() if not r.get("error")}
    queries = [q.id for p in problems for q in p.queries]
    resumed = sum((run, q) in finished for run in range(config.runs) for q in queries)
    session = RunSession.start(task, memory, policy=policy, max_errors=max_errors, unit="queries", spend=spend, run_dir=run_dir)
    session.note_program(config.build(inductive))  # for the run's manifest
    writer = JsonlWriter(run_dir / "examples.jsonl")
    per_run: list[list[dict[str, Any]]] = []
    memories: list[dict[str, Any]] = []
    try:
        for run in range(config.runs):
            repetition = session.for_run(run)
            todo = _distinct_first([p for p in problems if any((run, q.id) not in finished for q in p.queries)])
            solve = _solver(config, inductive, repetition, run, run_dir, writer, finished)
            bar = tqdm(
                total=len(problems),
                initial=len(problems) - len(todo),
                desc=f"{config.program} {config.task} run {run + 1}/{config.runs}",
                disable=not progress,
                unit="problem",
                dynamic_ncols=True,
            )
            with bar:
                run_each(todo, solve, threads=config.threads, bar=bar, errors=session.errors)
            if session.errors.stopping:
                raise RunAborted(session.errors.why())
            done = read_examples(run_dir / "examples.jsonl", repair=False)
            per_run.append([done[(run, q)] for q in queries])
            memories.extend(r for p in problems if (r := _saved_memory(run_dir, run, p)) is not None)
    finally:
        writer.close()
        session.note_process()
    return session.finish(
        summarise(config, per_run, memories, task, memory),
        threads=config.threads,
        resumed=resumed,
        answered=sum(len(r) for r in per_run) - resumed,
    )


def _memory_path(run_dir: Path, run: int, problem: Problem) -> Path:
    return run_dir / "memory" / f"run{run}" / f"{problem.id}.json"


def _saved_memory(run_dir: Path, run: int, problem: Problem) -> dict[str, Any] | None:
    path = _memory_path(run_dir, run, problem)
    return read_json(path) if path.exists() else None


def _distinct_first(problems: list[Problem]) -> list[Problem]:
    """``problems`` with the first of each set of episodes before any repeat, so threads build distinct memories."""
    seen: Counter[str] = Counter()
    rank = []
    for p in problems:
        key = _episodes_key(problem_episodes(p))
        rank.append(seen[key])
        seen[key] += 1
    return [p for _, _, p in sorted(zip(rank, range(len(problems)), problems), key=lambda t: t[:2])]


def _episodes_key(episodes: list[Episode]) -> str:
    return json.dumps([[str(e.observation), str(e.label)] for e in episodes])


def _copy_of(record: dict[str, Any], first: str) -> dict[str, Any]:
    """A memory record for a problem whose episodes are those of problem ``first``: its memory, none of its spend."""
    spend = {"usage": {}, "tokens": {}, "faults": {}, "retries": {}, "wall_seconds": 0.0}
    return {**record, **spend, "same_episodes_as": record.get("same_episodes_as", first)}


def _solver(config, inductive, session: RunSession, run: int, run_dir: Path, writer: JsonlWriter, finished):
    traces = TraceStore(run_dir)
    guard = threading.Lock()
    locks: dict[str, threading.Lock] = {}
    built: dict[str, tuple[str, dict[str, Any]]] = {}  # episodes -> the first problem that holds their memory

    def solve(problem: Problem) -> list[dict[str, Any]] | None:
        if session.errors.stopping:
            return None
        episodes = problem_episodes(problem)
        key = _episodes_key(episodes)
        with guard:
            lock = locks.setdefault(key, threading.Lock())
        program = config.build(inductive)
        with lock:  # problems with the same episodes build one memory, the others wait for it
            memory_failure = _memory(program, problem, episodes, key)
        records = []
        for query in problem.queries:
            if (run, query.id) in finished:
                continue
            records.append(_answer(program, inductive, problem, query, session, run, traces, writer, memory_failure))
        return records

    def _memory(program, problem: Problem, episodes: list[Episode], key: str) -> dict[str, str] | None:
        """Restore, copy or build ``problem``'s memory; its failure, if building it failed."""
        path = _memory_path(run_dir, run, problem)
        memory_failure = None
        if path.exists():
            saved = read_json(path)
            program.restore(episodes, saved)
            built.setdefault(key, (problem.id, saved))
        elif key in built:
            first, record = built[key]
            copy = _copy_of(record, first)
            program.restore(episodes, copy)
            path.parent.mkdir(parents=True, exist_ok=True)
            write_json(path, copy)
        else:
            meter = Meter(root=program, trace=True)
            started = time.perf_counter()
            try:
                with session.memory_context(), metering(meter):
                    record = program.memorize(episodes, oracle_hypotheses(problem))
            except Exception as exc:  # this problem's memory failed: its queries are scored wrong, the run goes on
                memory_failure = failure_of(exc)
            spent = meter.record()
            calls = meter.take_calls()
            if calls:
                traces.write(example_unit(run, f"memory-{problem.id}"), calls)
            if memory_failure is None:
                record = {**record, **spent, "tokens": meter.tokens().as_dict()}
                record["wall_seconds"] = round(time.perf_counter() - started, 2)
                path.parent.mkdir(parents=True, exist_ok=True)
                write_json(path, record)
                built[key] = (problem.id, record)
        return memory_failure

    return solve


def _answer(program, inductive, problem, query, session, run, traces, writer, memory_failure) -> dict[str, Any]:
    meter = Meter(root=program, trace=True)
    out, failure = None, memory_failure
    if failure is None:
        with session.task_context(), metering(meter):
            try:
                out = program(**inductive.query_inputs(query))
            except Exception as exc:  # one bad answer must not stop the run
                failure = failure_of(exc)
    prediction = None
    if out is not None:
        try:
            prediction = inductive.answer_text(out.answer)
        except (TypeError, ValueError, AttributeError) as exc:
            failure = {"kind": "invalid_answer", "reason": f"answer {getattr(out, 'answer', None)!r}: {exc}"}
    score = inductive.score(query, prediction) if prediction is not None else 0.0
    spent = meter.record()
    record = {
        "run": run,
        "id": query.id,
        "problem": problem.id,
        "query": query.text,
        "target": query.answer,
        "prediction": prediction,
        "score": score,
        "correct": score >= 1.0,
        "source": out.get("source") if out is not None else None,  # a checked program: "hypothesis" or "reasoner"
        "note": out.get("note") if out is not None else None,
    }
    return finish_example(
        record,
        spent,
        failure,
        unit=example_unit(run, query.id),
        calls=meter.take_calls(),
        traces=traces,
        writer=writer,
        session=session,
    )


def summarise(
    config: InductiveConfig,
    per_run: list[list[dict[str, Any]]],
    memories: list[dict[str, Any]],
    task: LMChoice,
    memory: LMChoice,
) -> dict[str, Any]:
    """The results of a run from its example records (per run) and memory records."""
    run_accuracy = [sum(r["correct"] for r in recs) / len(recs) for recs in per_run]
    mean, std = mean_std(run_accuracy)
    queries = list(zip(*per_run))
    share = [sum(bool(r["correct"]) for r in recs) / len(recs) for recs in queries]
    tally = UsageTally()
    for record in memories:
        tally.add(record, role="memory")
    for record in (r for recs in per_run for r in recs):
        tally.add(record, role="task")
    failures = Counter(str((r.get("failure") or {}).get("kind", "error")) for recs in per_run for r in recs if r.get("error"))
    kept = [m["kept"] is not None for m in memories if "kept" in m]
    narrowed = [bool(m.get("narrowed")) for m in memories if m.get("kept") is not None]
    sources = Counter(r["source"] for recs in per_run for r in recs if r.get("source"))
    return {
        "program": config.program,
        "task": config.task,
        "seed": config.seed,
        "lm": task.spec,
        "memory_lm": memory.spec,
        "examples": len(per_run[0]),
        "runs": config.runs,
        "accuracy": {"mean": mean, "std": std, "per_run": run_accuracy},
        "accuracy_ci": intervals({None: share})[None],  # 95% CI over the queries (Wilson's, or a bootstrap)
        "ci_method": ci_method("queries"),
        "hypothesis_kept": (sum(kept) / len(kept)) if kept else None,  # checked programs: problems with a kept one
        "hypothesis_narrowed": (sum(narrowed) / len(kept)) if kept else None,  # ... kept once code narrowed it
        "answered_by": dict(sorted(sources.items())),
        "failures": dict(sorted(failures.items())),
        "errors": dict(sorted(failures.items())),
        "faults": dict(sorted(tally.faults.items())),
        "retries": dict(sorted(tally.retries.items())),
        **tally.results(task.spec, memory.spec),
        "config": {k: v for k, v in asdict(config).items() if k != "threads"},
    }
