"""Evaluate an ARC program (ArcMemo paper, section 4 and Appendix B), and seed memories.

For each of ``runs`` repetitions: build the program (its sampling seed is the run
number), give it a fresh copy of the memory file, and run Algorithm 1 over the
tasks (``ArcProgram.solve_all``): tasks are solved ``threads`` at a time under
the task LM, memory reads and writes run on the memory LM, and every task's
attempts, retries, programs, outputs, failures, tokens and scores are written to
``examples.jsonl`` as it finishes. Memory snapshots go to ``memory/run<r>/``:
``step-0000.json`` as loaded, ``step-<i>.json`` after the write following problem i,
``final.json`` (with usage counts) at the end; what each write did goes to
``memory/run<r>/writes.jsonl``.

Scores per task (``eval.metrics``): ``oracle_at_k`` for k = 1..3 (k <= attempts;
otherwise null, see ``oracle_at_k_pooled`` which pools the attempts of all runs),
the official score (first two attempts, any match per test pair, fraction of
pairs), the strict score (one program passes every test pair), and the official
score had every attempt stopped after r retries (``score_by_retries``). Each is
averaged over tasks, then mean and sample std over runs.

``build_memory`` solves training tasks with the baseline solver (or reads a
directory of user solutions, ``<task_id>.py`` defining ``transform``), keeps the
programs that reproduce every train and test output, and abstracts them into a
memory file, saved atomically after every write. Solutions it found itself are
kept in ``<run dir>/solutions/``, so another format can be built from them
without solving again (``--solutions``).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

import dspy
from tqdm import tqdm

from datasets.arc import ArcDataError, ArcTask, load_split
from programs import PROGRAMS, build_program
from programs.arc_solver import Attempt
from programs.memory_file import Memory, empty_memory, load_memory, save_memory

from .lm import LMChoice
from .metrics import mean_std, official_score, oracle_at_k, strict_at_k, strict_score
from .runs import JsonlWriter
from .tokens import Tokens

KS = (1, 2, 3)
MEMORY_FORMAT = {"baseline": None, "cheatsheet": "cheatsheet", "arcmemo_oe": "oe", "arcmemo_ps": "ps",
                 "arcmemo_ps_noselect": "ps"}


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
    """Grammar-constrained JSON when either LM runs in-process (JSON works for remote models too)."""
    return dspy.JSONAdapter() if task.local or memory.local else dspy.ChatAdapter()


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
) -> dict[str, Any]:
    """Evaluate ``config`` on ``tasks`` (default: the config's split) with programs run in ``sandbox``."""
    tasks = list(tasks) if tasks is not None else config.load_tasks()
    initial = initial_memory if initial_memory is not None else config.load_memory()
    started = time.perf_counter()
    run_dir.mkdir(parents=True, exist_ok=True)
    writer = JsonlWriter(run_dir / "examples.jsonl")
    adapter = adapter_for(task, memory)
    per_run: list[list[dict[str, Any]]] = []
    memory_tokens, task_tokens = Tokens(), Tokens()
    writes = written = 0
    write_errors: dict[str, int] = {}
    try:
        for run in range(config.runs):
            program = build_program(config.program, **config.program_knobs(run), sandbox=sandbox)
            snapshots = run_dir / "memory" / f"run{run}"
            if initial is not None:
                program.use_memory(type(initial).from_json(initial.to_json()))  # a fresh copy per run
                save_memory(program.memory, snapshots / "step-0000.json")
            if memory.lm is not task.lm:
                program.set_memory_lm(memory.lm)
            bar = tqdm(total=len(tasks), desc=f"{config.program} run {run + 1}/{config.runs}", disable=not progress,
                       unit="task", dynamic_ncols=True)
            done: list[dict[str, Any]] = []

            def solve_batch(batch: list[ArcTask]) -> list[dspy.Prediction]:
                indices = list(range(len(done), len(done) + len(batch)))  # batches come in task order
                return _solve_batch(program, batch, indices, run, config, task, adapter, writer, bar, done)

            def on_write(i: int, records: list[dict[str, Any]]) -> None:
                nonlocal memory_tokens, writes, written
                writes += 1
                written += sum(1 for r in records if not r.get("error"))
                for record in records:
                    memory_tokens += as_tokens(record.get("tokens"))
                    if record.get("error"):
                        kind = "write: " + record["error"].split(":")[0]
                        write_errors[kind] = write_errors.get(kind, 0) + 1
                save_memory(program.memory, snapshots / f"step-{i:04d}.json")
                log = JsonlWriter(snapshots / "writes.jsonl")
                try:
                    log.write({"after_problem": i, "records": records})
                finally:
                    log.close()

            with bar, dspy.context(lm=task.lm, adapter=adapter):
                solved = program.solve_all(tasks, solve_batch=solve_batch, on_write=on_write)
            if initial is not None:
                save_memory(program.memory, snapshots / "final.json")
            records = [s.record for s in solved]
            for r in records:
                memory_tokens += as_tokens(r["tokens"]["memory"])
                task_tokens += as_tokens(r["tokens"]["task"])
            per_run.append(records)
    finally:
        writer.close()
    seconds = time.perf_counter() - started
    results = _results(config, tasks, per_run, task, memory, memory_tokens, task_tokens, (writes, written), seconds)
    for kind, count in write_errors.items():
        results["errors"][kind] = results["errors"].get(kind, 0) + count
    return results


def _solve_batch(program, batch, indices, run, config, task_lm: LMChoice, adapter, writer, bar, done):
    """Solve a batch in parallel (``config.threads``), writing each record as it finishes; records in batch order."""

    def solve(item: ArcTask, index: int) -> dict[str, Any]:
        started = time.perf_counter()
        attempts: list[Attempt] = []
        read: dict[str, Any] = {}
        error = None
        with dspy.context(lm=task_lm.lm, adapter=adapter):
            try:
                out = program(task=item)
                attempts, read = out.attempts, out.read
            except Exception as exc:  # one bad task must not stop the run
                error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        record = task_record(item, attempts, read, error, run=run, index=index, retries=config.retries)
        record["seconds"] = round(time.perf_counter() - started, 2)
        writer.write(record)
        return dspy.Prediction(attempts=attempts, record=record)  # attempts for the program's GETFEEDBACK

    with ThreadPoolExecutor(max_workers=config.threads) as pool:
        futures = {pool.submit(solve, item, index): index for item, index in zip(batch, indices)}
        finished = {}
        for future in as_completed(futures):
            solved = future.result()
            finished[futures[future]] = solved
            done.append(solved.record)
            bar.set_postfix(official=f"{sum(r['scores']['official_score'] for r in done) / len(done):.0%}")
            bar.update()
    return [finished[index] for index in indices]


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
                run: int, index: int, retries: int) -> dict[str, Any]:
    """One line of ``examples.jsonl``: everything about one task in one run."""
    verify = verify_matrix(item, attempts)
    scores = task_scores(verify)
    scores["score_by_retries"] = {
        str(r): task_scores(verify_matrix(item, attempts, r))["official_score"] for r in range(retries + 1)}
    scores["by_retries"] = {str(r): task_scores(verify_matrix(item, attempts, r)) for r in range(retries + 1)}
    task_tokens = Tokens()
    for attempt in attempts:
        for step in attempt.steps:
            task_tokens += as_tokens(step.tokens)
    memory_tokens = as_tokens(read.get("tokens"))
    return {
        "run": run,
        "index": index,
        "id": item.id,
        "read": read,
        "attempts": [a.to_json() for a in attempts],
        "predictions": [a.final.test_outputs for a in attempts],
        "verify": verify,
        "passed_train": any(a.final.passed_train for a in attempts),
        "scores": scores,
        "tokens": {"memory": memory_tokens.as_dict(), "task": task_tokens.as_dict()},
        "error": error,
    }


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


def _results(config, tasks, per_run, task, memory, memory_tokens, task_tokens, writes, seconds) -> dict[str, Any]:
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
    errors: dict[str, int] = {}
    failures: dict[str, int] = {}
    hallucinated = selected = 0
    for records in per_run:
        for r in records:
            if r["error"]:
                kind = r["error"].split(":")[0]
                errors[kind] = errors.get(kind, 0) + 1
            for attempt in r["attempts"]:
                for step in attempt["steps"]:
                    if step["error"]:
                        kind = "LM: " + step["error"].split(":")[0]
                        errors[kind] = errors.get(kind, 0) + 1
                    for check in step["train"] + step["test"]:
                        if check["failure"]:
                            failures[check["failure"]] = failures.get(check["failure"], 0) + 1
            hallucinated += len(r["read"].get("hallucinated", []))
            picked = r["read"].get("selected")
            selected += len(picked) if isinstance(picked, list) else 0
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
        "errors": errors,
        "program_failures": failures,
        "selection": {"selected": selected, "hallucinated": hallucinated},
        "memory_writes": writes[0],  # write points (every k problems), with or without a verified solution
        "memory_solutions_written": writes[1],
        "tokens": {"memory": memory_tokens.as_dict(), "task": task_tokens.as_dict()},
        "wall_seconds": round(seconds, 2),
        "config": asdict(config),
    }


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
                 progress: bool = True) -> dict[str, Any]:
    """Seed a memory file from verified solutions (solved here, or the user's); returns the results."""
    started = time.perf_counter()
    tasks, given = config.load()
    writer_program = build_program({"oe": "arcmemo_oe", "ps": "arcmemo_ps", "cheatsheet": "cheatsheet"}[config.format],
                                   sandbox=sandbox)
    writer_program.use_memory(empty_memory(config.format))
    if memory.lm is not task.lm:
        writer_program.set_memory_lm(memory.lm)
    solver = build_program("baseline", attempts=config.attempts, retries=config.retries, cot=config.cot,
                           temperature=config.temperature, sandbox=sandbox)
    adapter = adapter_for(task, memory)
    run_dir.mkdir(parents=True, exist_ok=True)
    writer = JsonlWriter(run_dir / "examples.jsonl")
    memory_tokens, task_tokens = Tokens(), Tokens()
    errors: dict[str, int] = {}
    verified = written = 0
    out = Path(config.out)
    save_memory(writer_program.memory, out)

    def solve(item: ArcTask) -> dict[str, Any]:
        if item.id in given:
            ok = passes_all(item, given[item.id], sandbox)
            return {"id": item.id, "source": "user", "solution": given[item.id], "verified": ok, "attempts": []}
        with dspy.context(lm=task.lm, adapter=adapter):
            try:
                attempts = solver(task=item).attempts
            except Exception as exc:
                return {"id": item.id, "source": "solved", "solution": None, "verified": False, "attempts": [],
                        "error": f"{type(exc).__name__}: {exc}"}
        solution = next((a.final.program for a in attempts
                         if a.final.passed_train and all(verify_matrix(item, [a])[0])), None)
        spent = Tokens()
        for a in attempts:
            for s in a.steps:
                spent += as_tokens(s.tokens)
        return {"id": item.id, "source": "solved", "solution": solution, "verified": solution is not None,
                "attempts": [a.to_json() for a in attempts], "tokens": spent.as_dict()}

    try:
        with ThreadPoolExecutor(max_workers=config.threads) as pool, \
                tqdm(total=len(tasks), desc=f"build_memory {config.format}", disable=not progress, unit="task") as bar:
            futures = [pool.submit(solve, item) for item in tasks]
            for i, (item, future) in enumerate(zip(tasks, futures), 1):  # abstraction in task order: memory grows
                record = future.result()
                task_tokens += as_tokens(record.get("tokens"))
                if record.get("error"):
                    errors[record["error"].split(":")[0]] = errors.get(record["error"].split(":")[0], 0) + 1
                if record["verified"] and record["source"] == "solved":  # reusable: --solutions <run>/solutions
                    (run_dir / "solutions").mkdir(exist_ok=True)
                    (run_dir / "solutions" / f"{item.id}.py").write_text(record["solution"])
                if record["verified"] or (config.unverified and record["solution"]):
                    verified += record["verified"]
                    with dspy.context(lm=task.lm, adapter=adapter):
                        try:
                            record["write"] = writer_program.write(item, record["solution"])
                            written += 1
                            memory_tokens += as_tokens(record["write"].get("tokens"))
                        except Exception as exc:
                            record["write_error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                            kind = record["write_error"].split(":")[0]
                            errors[kind] = errors.get(kind, 0) + 1
                    save_memory(writer_program.memory, run_dir / "memory" / f"step-{i:04d}.json")
                    save_memory(writer_program.memory, out)
                writer.write(record)
                bar.update()
    finally:
        writer.close()
    return {
        "task": "arc",
        "command": "build_memory",
        "format": config.format,
        "split": config.split,
        "lm": task.spec,
        "memory_lm": memory.spec,
        "examples": len(tasks),
        "verified": verified,
        "written": written,
        "concepts": len(writer_program.memory),
        "memory_file": str(out),
        "errors": errors,
        "tokens": {"memory": memory_tokens.as_dict(), "task": task_tokens.as_dict()},
        "wall_seconds": round(time.perf_counter() - started, 2),
        "config": asdict(config),
    }
