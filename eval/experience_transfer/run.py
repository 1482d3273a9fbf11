"""Evaluate an Experience-Transfer program: consolidate memory once per run, answer every scene.

For each of ``runs`` repetitions: build the program, let it memorize the episodes
under the memory LM (or restore the memory a previous process saved), then answer the
test scenes under the task LM (in parallel when ``threads`` > 1), appending one JSONL
line per scene as it finishes (after the trace of its LM calls, ``traces/run<r>/<id>.json.gz``;
the memory build's calls go to ``traces/memory-run<r>.json.gz``). Scenes already in
``examples.jsonl`` are not answered again, so a crashed or stopped run continues where it was.

LM faults are retried (:mod:`memreason.lm.faults`); a scene that still fails is recorded with
the kind and reason of its failure and scored wrong, and the run goes on, unless more
than ``max_errors`` scenes fail in this process, or the provider refuses the key or the
bill, which stops it (:class:`RunAborted`).

Results hold accuracy (mean and std over runs, 95% CI over the scenes), accuracy by object count, failures,
faults and retries by kind, tokens by role and by program step, and dollar cost. Every
number outside ``execution`` (and the ``wall_seconds`` kept beside it) is computed from
the run directory's files, so a resumed run reports what an uninterrupted one does.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import dspy
from tqdm import tqdm

from memreason.datasets.experience_transfer import ExperienceTransferLevel, Scene, load_rules, make_level
from memreason.lm import LMChoice
from memreason.lm.faults import RetryPolicy, RunAborted, failure_of
from memreason.lm.spend import Spend
from memreason.lm.tokens import Meter, metering
from memreason.programs import PROGRAMS, build_program
from memreason.signatures import Episode

from ..harness.budget import STOPPED_BY_BUDGET, answered_so_far
from ..harness.loop import finish_example, run_each
from ..harness.resume import identity_field, read_examples
from ..harness.runs import JsonlWriter, read_json, write_json
from ..harness.session import RunSession
from ..harness.traces import TraceStore, example_unit, memory_unit
from ..harness.usage import UsageTally
from ..metrics import accuracy, mean_std
from ..stats import ci_method, intervals
from .hypothesis_scoring import masked_coverage, memory_score, score_mode
from .masked import masked_results

MODALITIES = ("text", "image")


@dataclass
class ExperienceTransferConfig:
    """What one evaluation asks for (written to ``config.json``)."""

    program: str = identity_field()
    level: int = identity_field()
    modality: str = identity_field("text")
    limit: int | None = identity_field(None)
    runs: int = identity_field(1)
    threads: int = 1
    seed: int = identity_field(0)
    rules: str | None = identity_field(None)
    knobs: dict[str, Any] = identity_field(default_factory=dict)
    program_state: str | None = None  # a DSPy state file (``program.save``) loaded into each run's program

    def load_data(self) -> ExperienceTransferLevel:
        rules = load_rules(self.rules)
        return make_level(self.level, seed=self.seed, rules=rules)


def observation(item, modality: str):
    """An episode's or scene's observation in the requested modality."""
    return item.text() if modality == "text" else dspy.Image(item.image)


def level_episodes(items, modality: str) -> list[Episode]:
    """The level's episodes as memory: observation and label, and in text modality the attributes the text states.

    The attributes (shape, colour, background: the categorical part of the structured
    description) are never shown to the LM; ``hdr_grounded`` checks its rules against them.
    An image carries none: a program that needs them perceives them.
    """
    return [
        Episode(observation=observation(e, modality), label=e.label, attributes=e.attributes() if modality == "text" else None)
        for e in items
    ]


def evaluate_experience_transfer(
    config: ExperienceTransferConfig,
    *,
    task: LMChoice,
    memory: LMChoice,
    run_dir: Path,
    progress: bool = True,
    data: ExperienceTransferLevel | None = None,
    policy: RetryPolicy | None = None,
    max_errors: int | None = None,
    retry_failed: bool = False,
    spend: Spend | None = None,
) -> dict[str, Any]:
    """Evaluate ``config`` into ``run_dir``, continuing whatever that directory already holds.

    ``data`` is the level ``config`` describes, when the caller already built it;
    ``retry_failed`` answers again the scenes recorded as failures. ``spend``: the spending limit; once it is
    reached no scene or memory build starts, and the results are those of the scenes every started run answered
    (``execution["stopped"] == "budget"``).
    """
    data = data or config.load_data()
    scenes = data.test[: config.limit] if config.limit is not None else data.test
    episodes = level_episodes(data.episodes, config.modality)
    run_dir.mkdir(parents=True, exist_ok=True)
    finished = read_examples(run_dir / "examples.jsonl")
    if retry_failed:
        finished = {key: r for key, r in finished.items() if not r.get("error")}
    resumed = sum((run, s.id) in finished for run in range(config.runs) for s in scenes)
    session = RunSession.start(task, memory, policy=policy, max_errors=max_errors, unit="scenes", spend=spend, run_dir=run_dir)
    writer = JsonlWriter(run_dir / "examples.jsonl")
    stopped = answered = None  # a stop at the spending limit, and the scenes then answered in this process
    per_run: list[list[dict[str, Any]]] = []
    memories: list[dict[str, Any]] = []
    try:
        for run in range(config.runs):
            program = build_program(config.program, **config.knobs)
            if config.program_state:
                program.load(config.program_state)
            session.note_program(program)  # its instructions, for the run's manifest
            repetition = session.for_run(run)  # its own samples from the second run on
            memories.append(_memory(program, episodes, data, run, run_dir, repetition))
            todo = [s for s in scenes if (run, s.id) not in finished]
            new = _answer_all(program, data, todo, len(scenes), config, repetition, run, writer, progress)
            if session.errors.stopping:
                raise RunAborted(session.errors.why())
            done = {r["id"]: r for r in new} | {i: r for (r_, i), r in finished.items() if r_ == run}
            per_run.append([done[s.id] for s in scenes])
    except RunAborted:
        if not session.errors.budget_reached:
            raise
        per_run, answered = _answered_so_far(config, scenes, run_dir, finished)  # the spending limit: keep what is done
        if not per_run:
            raise  # nothing answered: no results to write
        stopped = STOPPED_BY_BUDGET if answered is not None else None
    finally:
        writer.close()
        session.note_process()
    return session.finish(
        summarise(config, per_run, memories, task, memory, data),
        threads=config.threads,
        resumed=resumed,
        answered=answered if stopped else sum(len(r) for r in per_run) - resumed,
        stopped=stopped,
    )


def _answered_so_far(config, scenes: list[Scene], run_dir: Path, finished) -> tuple[list[list[dict[str, Any]]], int | None]:
    """A run stopped at its spending limit: the records of the scenes every started run answered, and how many
    scenes this process answered (None when every scene of every run is done after all: no stop)."""
    now = read_examples(run_dir / "examples.jsonl", repair=False)
    per_run = answered_so_far(now, config.runs, [s.id for s in scenes])
    if per_run and len(per_run) == config.runs and len(per_run[0]) == len(scenes):
        return per_run, None
    return per_run, sum(finished.get(key) != record for key, record in now.items())


def memorize(
    program_name: str,
    data: ExperienceTransferLevel,
    memory: LMChoice,
    run_dir: Path,
    runs: list[int],
    *,
    modality: str = "text",
    policy: RetryPolicy | None = None,
    program_state: str | None = None,
    spend: Spend | None = None,
) -> list[dict[str, Any]]:
    """Build the memory of each of ``runs`` into ``run_dir/memory-run<N>.json`` and answer no scene.

    The same guarded, metered step an evaluation runs first (Table 5 scores memories alone);
    ``program_state`` is a DSPy state loaded into the program first (a compiled consolidator);
    ``spend``: the spending limit (no memory build starts once it is reached: :class:`RunAborted`)."""
    session = RunSession.start(memory, memory, policy=policy, spend=spend)
    episodes = level_episodes(data.episodes, modality)
    run_dir.mkdir(parents=True, exist_ok=True)
    records = []
    for run in runs:
        program = build_program(program_name)
        if program_state:
            program.load(program_state)
        records.append(_memory(program, episodes, data, run, run_dir, session))
    return records


def _memory(program, episodes, data, run: int, run_dir: Path, session: RunSession) -> dict[str, Any]:
    """Restore run ``run``'s saved memory into ``program``, or build it and save it."""
    path = run_dir / f"memory-run{run}.json"
    if path.exists() and hasattr(program, "restore"):
        record = read_json(path)
        program.restore(episodes, record)
        return record
    if session.errors.stopping:  # the spending limit reached: no memory build starts
        raise RunAborted(session.errors.why())
    meter = Meter(root=program, trace=True)
    started = time.perf_counter()
    try:
        with session.memory_context(), metering(meter):
            record = program.memorize(episodes, data.oracle_hypotheses)
    except Exception as exc:
        TraceStore(run_dir).write(memory_unit(run), meter.take_calls())  # how far it got
        failure = failure_of(exc)
        raise RunAborted(
            f"building the memory of run {run + 1} failed ({failure['kind']}: {failure['reason']}). "
            "Calls that succeeded are cached: rerun the same command to continue"
        ) from exc
    spent = meter.record()
    record = {**record, **spent, "tokens": meter.tokens().as_dict(), "wall_seconds": round(time.perf_counter() - started, 2)}
    calls = meter.take_calls()
    if calls:  # programs that keep raw episodes only build nothing
        TraceStore(run_dir).write(memory_unit(run), calls)
    write_json(path, record)
    return record


def _answer_all(
    program, data, scenes: list[Scene], total: int, config, session: RunSession, run: int, writer: JsonlWriter, progress: bool
) -> list[dict[str, Any]]:
    traces = TraceStore(writer.path.parent)

    def answer(scene: Scene) -> dict[str, Any] | None:
        if session.errors.stopping:
            return None
        meter = Meter(root=program, trace=True)
        prediction, failure, objects = None, None, None
        with session.task_context(), metering(meter):
            try:
                out = program(query=data.query, scene=observation(scene, config.modality))
            except Exception as exc:  # one bad answer must not stop the run
                failure = failure_of(exc)
        if failure is None:
            objects = out.get("objects")  # a per-object reasoner's labels, one per object
            try:
                prediction = int(out.count)
            except (TypeError, ValueError) as exc:
                failure = {"kind": "invalid_answer", "reason": f"count {getattr(out, 'count', None)!r}: {exc}"}
        spent = meter.record()
        record = {
            "run": run,
            "id": scene.id,
            "objects": len(scene.objects),
            "target": scene.target,
            "prediction": prediction,
            "correct": prediction == scene.target,
            **({"object_labels": objects, "true_labels": scene.labels} if objects is not None else {}),
        }
        return finish_example(
            record,
            spent,
            failure,
            unit=example_unit(run, scene.id),
            calls=meter.take_calls(),
            traces=traces,
            writer=writer,
            session=session,
        )

    bar = tqdm(
        total=total,
        initial=total - len(scenes),
        desc=f"{config.program} L{config.level} run {run + 1}/{config.runs}",
        disable=not progress,
        unit="scene",
        dynamic_ncols=True,
    )
    share_prefix = getattr(session.task_lm, "share_prefix", None)  # only local servers have it
    with bar:
        return [
            record
            for _, record in run_each(
                scenes,
                answer,
                threads=config.threads,
                bar=bar,
                errors=session.errors,
                after_first=share_prefix,
                postfix=lambda done: {"acc": f"{sum(r['correct'] for r in done) / len(done):.0%}"},
            )
        ]


# -- results: a function of the run directory's records alone ---------------------------------


def summarise(
    config: ExperienceTransferConfig,
    per_run: list[list[dict[str, Any]]],
    memories: list[dict[str, Any]],
    task: LMChoice,
    memory: LMChoice,
    data: ExperienceTransferLevel,
) -> dict[str, Any]:
    """The results of a run from its example records (per run) and memory records.

    ``hypothesis_f1`` scores each run's semantic memory with the deterministic parser
    (free and exact, each statement on its own, but strict: free wording it cannot read is never
    correct, and is left out of precision); the
    LM-read modes are in ``python -m eval table5 --f1 interpret|judge``.

    On a level with masked combinations (Level 3), ``masked`` holds the accuracy on the objects of those
    combinations apart from the others, per object where the reader labels each (and per scene for every row),
    and how many test objects are of a combination the memory records as undecidable
    (:func:`.masked.masked_results`); each run's ``hypothesis_f1`` says, per masked combination, which true rules
    cover it and whether the memory holds a right one (:func:`.hypothesis_scoring.masked_coverage`).

    ``accuracy_ci`` and ``accuracy_by_objects_ci`` are 95% CIs over the scenes (:func:`memreason.eval.stats.intervals`), each scene
    scored by its share of correct answers over the runs (``ci_method``; :mod:`memreason.eval.stats`).
    """
    run_accuracy = [accuracy([r["prediction"] for r in recs], [r["target"] for r in recs]) for recs in per_run]
    mean, std = mean_std(run_accuracy)
    by_objects: dict[str, float] = {}
    for n in sorted({r["objects"] for r in per_run[0]}):
        values = [accuracy(*zip(*[(r["prediction"], r["target"]) for r in recs if r["objects"] == n])) for recs in per_run]
        by_objects[str(n)] = mean_std(values)[0]
    scenes = list(zip(*per_run))  # each scene's records, one per run
    share = [sum(r["prediction"] is not None and r["prediction"] == r["target"] for r in recs) / len(recs) for recs in scenes]
    cis = intervals(
        {None: share} | {n: [s for s, recs in zip(share, scenes) if str(recs[0]["objects"]) == n] for n in by_objects}
    )
    tally = UsageTally()
    for record in memories:
        tally.add(record, role="memory")
    for record in (r for recs in per_run for r in recs):
        tally.add(record, role="task")
    failures = Counter(_failure_kind(r) for recs in per_run for r in recs if r.get("error"))
    config_record = {k: v for k, v in asdict(config).items() if k != "threads"}
    return {
        "program": config.program,
        "task": "experience_transfer",
        "level": config.level,
        "modality": config.modality,
        "lm": task.spec,
        "memory_lm": memory.spec,
        "examples": len(per_run[0]),
        "runs": config.runs,
        "accuracy": {"mean": mean, "std": std, "per_run": run_accuracy},
        "accuracy_ci": cis[None],  # 95% CI over scenes
        "accuracy_by_objects": by_objects,
        "accuracy_by_objects_ci": {n: cis[n] for n in by_objects},
        "ci_method": ci_method("scenes"),
        "failures": dict(sorted(failures.items())),
        "errors": dict(sorted(failures.items())),  # the older name of ``failures``
        "faults": dict(sorted(tally.faults.items())),
        "retries": dict(sorted(tally.retries.items())),
        **tally.results(task.spec, memory.spec),
        "hypothesis_f1": _hypothesis_f1(config.program, memories, data),
        **({"masked": masked_results(per_run, memories, data)} if data.masked else {}),
        "config": config_record,
    }


def _hypothesis_f1(program: str, memories: list[dict[str, Any]], data: ExperienceTransferLevel) -> dict[str, Any] | None:
    """Parser-read F1 of each run's hypotheses; None for programs that keep no semantic memory.

    A program that keeps one scores 0 for a run whose memory came out empty (it wrote no rule)."""
    if not reads_semantic_memory(program):
        return None
    scores = [memory_score(m, data) for m in memories]
    f1, std = mean_std([s.f1 for s in scores])
    mode = score_mode(memories[0]) if memories else "parse"
    per_run = [{**s.as_dict(), **({"masked": masked_coverage(m, data)} if data.masked else {})} for s, m in zip(scores, memories)]
    return {"mode": mode, "mean": f1, "std": std, "per_run": per_run}


def reads_semantic_memory(program: str) -> bool:
    """Whether the registered program ``program`` answers from a semantic memory (hypotheses, rules, reflections)."""
    reasoner = getattr(PROGRAMS[program].build(), "reasoner", None) if program in PROGRAMS else None
    return bool(getattr(reasoner, "semantic", False))


def _failure_kind(record: dict[str, Any]) -> str:
    failure = record.get("failure")
    if isinstance(failure, dict) and failure.get("kind"):
        return failure["kind"]
    return str(record.get("error", "error")).split(":")[0]
