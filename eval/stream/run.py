"""The stream protocol: memory seeded from solved seed problems, then a stream of test items in batches.

    seed:    M <- learn(s, reference answer of s) for each seed problem s        # memory/seed.json
    for order o in 1..orders:                                                    # the stream shuffled by order_seed + o
        M_o <- M
        for each batch B of the stream (batch items; 0: one batch, memory frozen):
            answer every x in B with read(M_o, x)        # never an entry written from x itself (the guard)
            score every x in B                           # examples.jsonl, one line an item
            M_o <- learn(x, verdict by learn_from) for x in B    # only now, after B was scored
            snapshot M_o                                 # memory/order<o>/batch<b>.json

A write learns from (``learn_from``): ``reference`` (the item's score, known once it was scored), ``check``
(the task's reference-free check of the final attempt), ``self`` (the memory LM's judgement of the answer)
or ``none`` (nothing: the attempt, not judged). What a write reads of an attempt (``lesson``): ``reasoning``
(the solver's reasoning then its answer) or ``answer`` (the answer alone). Seed problems are always written
from their reference answers (the papers' seed solutions); a test item's reference answer is never written.

A stopped run continues from the newest snapshot of each order: the items already in ``examples.jsonl``
are not answered again, and the writes of the batch it stopped in are made again (their LM calls come
from the run's response cache), so a crash loses at most one batch of work.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable

import dspy
from tqdm import tqdm

from memreason.datasets.gym import GymItem, disjoint
from memreason.lm import LMChoice
from memreason.lm.faults import RetryPolicy, RunAborted, failure_of
from memreason.lm.spend import Spend
from memreason.lm.tokens import Meter, Tokens, metering
from memreason.programs import build_program
from memreason.programs.stream import Lesson, SelfJudge
from memreason.programs.stream.utility import rate_without

from ..harness.loop import finish_example, run_each
from ..harness.resume import read_examples
from ..harness.runs import JsonlWriter, read_json, write_json
from ..harness.session import RunSession
from ..harness.traces import TraceStore, example_unit
from ..harness.usage import UsageTally
from ..metrics import mean_std
from ..stats import ci_method, intervals
from .config import StreamConfig
from .verify import Answer, VerifySettings, WriteVerifier

SAMPLING_TEMPERATURE = 0.7  # the writer's temperature for the proposals after the first (--candidates)

__all__ = ["StreamConfig", "evaluate_stream", "stream_order"]


def stream_order(items: list[GymItem], order_seed: int) -> list[GymItem]:
    """``items`` in the order of stream ``order_seed``."""
    shuffled = list(items)
    random.Random(order_seed).shuffle(shuffled)
    return shuffled


def evaluate_stream(
    config: StreamConfig,
    task: Any,
    *,
    lm: LMChoice,
    memory_lm: LMChoice,
    run_dir: Path,
    progress: bool = True,
    policy: RetryPolicy | None = None,
    max_errors: int | None = None,
    retry_failed: bool = False,
    spend: Spend | None = None,
) -> dict[str, Any]:
    """Run ``config`` on ``task`` (a :class:`memreason.eval.stream.task.GymTask`) into ``run_dir``, continuing what
    it holds."""
    data = task.data(json.loads(config.task_config))
    tests = data.items(config.seed, config.size, distinct=True)
    seeds = data.seed_items(config.seed, config.seed_size, avoid=tests)
    if not disjoint(seeds, tests):  # seed_items never returns one; checked again where it matters
        raise RuntimeError("a seed problem shares its question with a test item")
    run_dir.mkdir(parents=True, exist_ok=True)
    finished = read_examples(run_dir / "examples.jsonl")
    if retry_failed:
        finished = {key: r for key, r in finished.items() if not r.get("error")}
    resumed = sum((o, t.id) in finished for o in range(config.orders) for t in tests)
    session = RunSession.start(lm, memory_lm, policy=policy, max_errors=max_errors, unit="items", spend=spend, run_dir=run_dir)
    writer = JsonlWriter(run_dir / "examples.jsonl")
    stream = StreamRun(config, task, data, session, run_dir, writer, finished)
    per_order: list[list[dict[str, Any]]] = []
    try:
        seeded = stream.seed_memory(seeds)
        for order in range(config.orders):
            per_order.append(stream.run_order(order, tests, seeded, progress=progress, seeds=seeds))
            if session.errors.stopping:
                raise RunAborted(session.errors.why())
    finally:
        writer.close()
        session.note_process()
    results = summarise(config, per_order, stream, lm, memory_lm, seeds=seeds, tests=tests)
    return session.finish(results, threads=config.threads, resumed=resumed, answered=sum(map(len, per_order)) - resumed)


class StreamRun:
    """One run's stream: its seed memory, its orders, its writes and snapshots."""

    def __init__(self, config: StreamConfig, task: Any, data: Any, session: RunSession, run_dir: Path, writer, finished):
        self.config, self.task, self.data, self.session = config, task, data, session
        self.run_dir, self.writer, self.finished = run_dir, writer, finished
        self.traces = TraceStore(run_dir)
        self.writes: list[dict[str, Any]] = []  # every write record of this process and the snapshots read back
        self.final_sizes: list[int] = []
        self.judgements: list[dict[str, Any]] = []  # learn_from "self": each judgement's verdict and spend
        checker = task.checker
        self.check_of: Callable[[GymItem], Callable[[str], Any] | None] = (
            (lambda item: lambda answer: checker(item.metadata, answer)) if checker is not None else (lambda item: None)
        )
        settings = VerifySettings(config.verify, config.verify_margin, config.candidates)
        self.verifier = WriteVerifier(settings, answer=self._probe_answers) if config.verify else None
        self._probe_meter: Meter | None = None
        self.retired: list[dict[str, Any]] = []  # entries retired for harm by their use, with the item that showed it

    def build(self) -> Any:
        knobs = {"answer": self.config.answer, "retries": self.config.retries, **self.config.knobs}
        program = build_program(self.config.program, task=self.task, **knobs)
        self.session.note_program(program)  # its instructions, for the run's manifest
        return program

    # -- the seed memory -------------------------------------------------------------------------

    def seed_memory(self, seeds: list[GymItem]) -> dict[str, Any]:
        """The memory written from the seed problems' reference answers (built once, saved as ``memory/seed.json``)."""
        path = self.run_dir / "memory" / "seed.json"
        if path.exists():
            saved = read_json(path)
            self.writes.extend(saved.get("writes", []))
            return saved["memory"]
        program = self.build()
        writes = []
        for item in seeds:
            lesson = Lesson(item.id, item.question, item.answer, True, "", "reference")
            writes.append(self._write(program, lesson, unit=f"memory/seed-{item.id}", pool=seeds))
        saved = {"memory": program.memory_state(), "items": [s.id for s in seeds], "writes": writes}
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json(path, saved)
        self.writes.extend(writes)
        return saved["memory"]

    # -- one order of the stream -----------------------------------------------------------------

    def run_order(
        self, order: int, tests: list[GymItem], seeded: dict[str, Any], *, progress: bool, seeds: list[GymItem] = ()
    ) -> list[dict[str, Any]]:
        """Every test item answered in order ``order``; their records in the test items' own order."""
        config = self.config
        stream = stream_order(tests, config.order_seed + order)
        size = config.batch or len(stream)
        batches = [stream[i : i + size] for i in range(0, len(stream), size)]
        program = self.build()
        program.load_memory(seeded)
        start = next((i + 1 for i in range(len(batches) - 1, -1, -1) if self._snapshot_path(order, i).exists()), 0)
        for index in range(start):  # continue after the newest snapshot; the writes before it, read back
            saved = read_json(self._snapshot_path(order, index))
            self.writes.extend(saved.get("writes", []))
            self.judgements.extend(saved.get("judgements", []))
        if start:
            program.load_memory(saved["memory"])
        done = sum(len(b) for b in batches[:start])
        bar = tqdm(
            total=len(stream),
            initial=done,
            desc=f"{config.program} {config.task} order {order + 1}/{config.orders}",
            disable=not progress,
            unit="item",
            dynamic_ncols=True,
        )
        with bar:
            for index in range(start, len(batches)):
                batch = batches[index]
                todo = [item for item in batch if (order, item.id) not in self.finished]
                bar.update(len(batch) - len(todo))
                answered = run_each(
                    todo,
                    lambda item: self._answer(program, order, index, stream.index(item), item),
                    threads=config.threads,
                    bar=bar,
                    errors=self.session.errors,
                )
                for item, record in answered:
                    self.finished[(order, item.id)] = record
                if self.session.errors.stopping or any((order, item.id) not in self.finished for item in batch):
                    return []
                if config.batch:  # continual: learn from the batch, now that every item of it was scored
                    scored = [item for b in batches[: index + 1] for item in b]
                    if self.verifier is not None:
                        self._note_use(program, order, scored, batch)
                    pool = [*seeds, *scored]  # what a write may be tried on: nothing not yet answered
                    writes = [
                        self._write(
                            program,
                            self._lesson(item, self.finished[(order, item.id)], unit=f"run{order}/judge-{item.id}"),
                            unit=f"run{order}/write-{index:04d}-{item.id}",
                            pool=pool,
                        )
                        for item in batch
                    ]
                    path = self._snapshot_path(order, index)
                    path.parent.mkdir(parents=True, exist_ok=True)
                    ids = {i.id for i in batch}
                    judged = [j for j in self.judgements if j["item"] in ids and j.get("order", order) == order]
                    saved = {"memory": program.memory_state(), "items": [i.id for i in batch], "writes": writes}
                    write_json(path, {**saved, "judgements": judged})
                    self.writes.extend(writes)
        self.final_sizes.append(program.memory_size())
        return [self.finished[(order, item.id)] for item in tests]

    def _snapshot_path(self, order: int, index: int) -> Path:
        return self.run_dir / "memory" / f"order{order}" / f"batch{index:04d}.json"

    def _answer(self, program: Any, order: int, batch: int, position: int, item: GymItem) -> dict[str, Any] | None:
        if self.session.errors.stopping:
            return None
        meter = Meter(root=program, trace=True)
        out, read, failure, check = None, None, None, self.check_of(item)
        with metering(meter):
            try:
                with self.session.memory_context():
                    read = program.read(item.question, item.id, check)
                with self.session.task_context():
                    out = program.solve(item.question, read.text, check)
            except Exception as exc:  # one bad item must not stop the run
                failure = failure_of(exc)
        prediction = out.answer if out is not None else None
        score = self.task.score(self.data, item, prediction)  # the reference answer is read here, and only here
        record = {
            "run": order,
            "id": item.id,
            "order": order,
            "batch": batch,
            "position": position,
            "question": item.question,
            "target": item.answer,
            "prediction": prediction,
            "solution": out.solution if out is not None else None,
            "reasoning": out.reasoning if out is not None else None,
            "score": score,
            "correct": score >= 1.0,
            "checked": out.checked if out is not None else None,
            "attempts": len(out.attempts) if out is not None else 0,
            "feedback": [a["feedback"] for a in out.attempts if a["feedback"]] if out is not None else [],
            "memory": read.text if read is not None else None,
            "withheld": read.withheld if read is not None else 0,
            "read": read.record if read is not None else None,
        }
        return finish_example(
            record,
            meter.record(),
            failure,
            unit=example_unit(order, item.id),
            calls=meter.take_calls(),
            traces=self.traces,
            writer=self.writer,
            session=self.session,
        )

    # -- writes ----------------------------------------------------------------------------------

    def _lesson(self, item: GymItem, record: dict[str, Any], *, unit: str) -> Lesson:
        """What a write from a scored test item may learn, by ``learn_from``; never its reference answer. The
        model's own judgement (``self``) is made here, under the memory LM, metered and traced under ``unit``."""
        how = self.config.learn_from
        solution = record.get("solution") or record.get("prediction") or ""
        reasoning = (record.get("reasoning") or "") if self.config.lesson == "reasoning" else ""
        verdict, why = None, ""
        if how == "reference":
            verdict = bool(record.get("correct"))
        elif how == "check":
            verdict = record.get("checked")
            why = (record.get("feedback") or [""])[-1] if verdict is False else ""
        elif how == "self" and record.get("prediction") is not None:
            judge = SelfJudge()
            meter = Meter(root=judge, trace=True)
            with metering(meter), self.session.memory_context():
                try:
                    verdict = bool(judge(problem=item.question, answer=record["prediction"]).correct)
                except Exception as exc:  # no judgement: the write learns from the attempt, not judged
                    why = f"no judgement: {failure_of(exc)['reason']}"
            calls = meter.take_calls()
            if calls:
                self.traces.write(unit, calls)
            self.judgements.append({"item": item.id, "order": record["run"], "verdict": verdict, **meter.record()})
        return Lesson(item.id, item.question, solution, verdict, why, how, reasoning)

    def _write(self, program: Any, lesson: Lesson, *, unit: str, pool: list[GymItem]) -> dict[str, Any]:
        """One write: as the program makes it, or (``--verify``) kept only when it helps the probes; then memory cut
        to the token budget (``--memory-tokens``). Its record."""
        if self.verifier is None:
            record = self._learn(program, lesson, unit=unit)
        else:
            self._probe_meter = Meter(root=program, trace=True)
            decision = self.verifier.write(
                program,
                lesson,
                pool,
                learn=lambda k: self._learn(program, lesson, unit=f"{unit}/candidate{k}" if k else unit, candidate=k),
            )
            first, *others = decision.pop("writes") or [self._unwritten(lesson)]
            calls = self._probe_meter.take_calls()
            if calls:
                self.traces.write(f"{unit}/verify", calls)
            record = {**first, "verify": {**decision, "other_candidates": others}, "verification": self._probe_meter.record()}
            record["changed"] = decision["decision"] == "kept"  # a refused change left memory as it was
        if self.config.memory_tokens:
            record["budget_cut"] = program.fit_budget(self.config.memory_tokens)
        return record

    def _unwritten(self, lesson: Lesson) -> dict[str, Any]:
        return {
            "item": lesson.item_id,
            "verdict": lesson.verdict,
            "learned_from": lesson.learned_from,
            "changed": False,
            "failure": None,
        }

    def _probe_answers(self, program: Any, items: list[GymItem]) -> list[Answer]:
        """``items`` answered as the stream answers them (read, solve, scored by ``learn_from``), metered apart."""

        def answer(item: GymItem) -> Answer:
            check = self.check_of(item)
            with metering(self._probe_meter):
                try:
                    with self.session.memory_context():
                        read = program.read(item.question, item.id, check)
                    with self.session.task_context():
                        out = program.solve(item.question, read.text, check)
                except Exception:  # a probe that failed to answer counts as wrong, with memory and without
                    return Answer(False, None)
            return Answer(self._right(item, out.answer, out.checked), out.answer)

        with ThreadPoolExecutor(max_workers=max(1, min(self.config.threads, len(items)))) as pool:
            return list(pool.map(answer, items))

    def _right(self, item: GymItem, prediction: str | None, checked: bool | None) -> bool:
        """Whether an answer is right by what the run's writes learn from: the reference, or the reference-free check."""
        if self.config.learn_from == "check":
            return bool(checked)
        return prediction is not None and self.task.score(self.data, item, prediction) >= 1.0

    def _note_use(self, program: Any, order: int, scored: list[GymItem], batch: list[GymItem]) -> None:
        """Count each item of ``batch`` on the entries it was shown, each against how often the scored items not
        shown that entry were right (the stream's own accuracy would be lowered by the entry being judged)."""
        shown = {}  # item id -> (entry ids it was shown, whether it was right), for every scored item
        for item in scored:
            record = self.finished[(order, item.id)]
            ids = set((record.get("read") or {}).get("ids") or [])
            shown[item.id] = (ids, self._right(item, record.get("prediction"), record.get("checked")))
        entries = {entry_id for item in batch for entry_id in shown[item.id][0]}
        expected = {entry_id: rate_without(list(shown.values()), entry_id) for entry_id in entries}
        for item in batch:
            read = self.finished[(order, item.id)].get("read") or {}
            for entry_id in program.note_use(read, right=shown[item.id][1], expected=expected):
                self.retired.append({"order": order, "entry": entry_id, "item": item.id})

    def _learn(self, program: Any, lesson: Lesson, *, unit: str, candidate: int = 0) -> dict[str, Any]:
        """One write under the memory LM, metered and traced; its record (a failed write is recorded, not raised).
        ``candidate`` > 0: another proposal, sampled (its own rollout, at :data:`SAMPLING_TEMPERATURE`)."""
        meter = Meter(root=program, trace=True)
        started = time.perf_counter()
        failure = None
        before = json.dumps(program.memory_state(), sort_keys=True, default=str)
        with metering(meter), self.session.memory_context():
            try:
                if candidate:
                    sampled = self.session.memory_lm.copy(rollout_id=candidate, temperature=SAMPLING_TEMPERATURE)
                    with dspy.context(lm=sampled):
                        record = program.learn(lesson)
                else:
                    record = program.learn(lesson)
            except Exception as exc:  # a failed write leaves memory as it was; the stream goes on
                record, failure = {}, failure_of(exc)
        calls = meter.take_calls()
        if calls:
            self.traces.write(unit, calls)
        spent = meter.record()
        return {
            "item": lesson.item_id,
            "verdict": lesson.verdict,
            "learned_from": lesson.learned_from,
            **record,
            "changed": json.dumps(program.memory_state(), sort_keys=True, default=str) != before,
            "failure": failure,
            **spent,
            "wall_seconds": round(time.perf_counter() - started, 2),
        }


def summarise(
    config: StreamConfig,
    per_order: list[list[dict[str, Any]]],
    stream: StreamRun,
    lm: LMChoice,
    memory_lm: LMChoice,
    *,
    seeds: list[GymItem],
    tests: list[GymItem],
) -> dict[str, Any]:
    """The results of a run from its example records (per order) and its writes."""
    accuracy = [sum(r["correct"] for r in recs) / len(recs) for recs in per_order]
    scores = [sum(float(r["score"]) for r in recs) / len(recs) for recs in per_order]
    mean, std = mean_std(accuracy)
    share = [sum(bool(r["correct"]) for r in recs) / len(recs) for recs in zip(*per_order)]
    tally = UsageTally()
    for write in [*stream.writes, *stream.judgements]:
        tally.add(write, role="memory")
        for other in (write.get("verify") or {}).get("other_candidates", []):
            tally.add(other, role="memory")
    records = [r for recs in per_order for r in recs]
    for record in records:
        tally.add(record, role="task")
    failures = Counter(str((r.get("failure") or {}).get("kind", "error")) for r in records if r.get("error"))
    checked = [r["checked"] for r in records if r.get("checked") is not None]
    verdicts = Counter(str(w.get("verdict")) for w in stream.writes)
    return {
        "program": config.program,
        "task": config.task,
        "seed": config.seed,
        "lm": lm.spec,
        "memory_lm": memory_lm.spec,
        "examples": len(tests),
        "runs": config.orders,
        "orders": config.orders,
        "accuracy": {"mean": mean, "std": std, "per_run": accuracy},  # per order of the stream: mean and spread
        "accuracy_ci": intervals({None: share})[None],  # 95% CI over the items (Wilson's, or a bootstrap)
        "ci_method": ci_method("items"),
        "mean_score": {"mean": mean_std(scores)[0], "per_run": scores},  # the dataset's scores, partial credit kept
        "task_config": json.loads(config.task_config),
        "learn_from": config.learn_from,
        "lesson": config.lesson,
        "seed_solutions": "reference" if seeds else None,
        "seed_problems": len(seeds),
        "streams_disjoint": disjoint(seeds, tests),
        "batch": config.batch,
        "continual": bool(config.batch),
        "order_seeds": [config.order_seed + o for o in range(config.orders)],
        "guard": {
            "withheld_entries": sum(int(r.get("withheld") or 0) for r in records),
            "items_with_withheld": sum(1 for r in records if r.get("withheld")),
        },
        "writes": {
            "count": sum(1 for w in stream.writes if w.get("changed", True)),  # writes that changed memory
            "asked": len(stream.writes),  # every write made, those that left memory as it was included
            "failed": sum(1 for w in stream.writes if w.get("failure")),  # a failed write leaves memory as it was
            "verdicts": dict(sorted(verdicts.items())),
        },
        "verification": verification(config, stream),
        "memory_size": stream.final_sizes,
        "checked_share": (sum(checked) / len(checked)) if checked else None,
        "failures": dict(sorted(failures.items())),
        "errors": dict(sorted(failures.items())),
        "faults": dict(sorted(tally.faults.items())),
        "retries": dict(sorted(tally.retries.items())),
        **tally.results(lm.spec, memory_lm.spec),
        "config": {k: v for k, v in asdict(config).items() if k != "threads"},
    }


def verification(config: StreamConfig, stream: StreamRun) -> dict[str, Any] | None:
    """What verifying the writes decided and cost, counted apart from the solver's and the writer's spend (None:
    writes not verified)."""
    if not config.verify:
        return None
    decided = [w["verify"] for w in stream.writes if w.get("verify")]
    tally = UsageTally()
    for write in stream.writes:
        if write.get("verification"):
            tally.add(write["verification"], role="task")
    tokens = sum(tally.roles().values(), Tokens())
    probes = [p for d in decided for p in d.get("probes", [])]
    return {
        "probes": config.verify,
        "margin": config.verify_margin,
        "candidates": config.candidates,
        "decisions": dict(sorted(Counter(d["decision"] for d in decided).items())),
        "probe_answers": sum(1 + len(p["with"]) for p in probes),
        "tokens": tokens.as_dict(),
        "tokens_by_role": {role: t.as_dict() for role, t in tally.roles().items()},
        "wall_seconds": round(sum(float(d.get("wall_seconds") or 0) for d in decided), 2),
        "retired_for_harm": len(stream.retired),
    }
