"""Verified writes: a change a stream program's writer proposes is tried on problems already scored before it is kept.

    verifier = WriteVerifier(VerifySettings(probes=3, margin=1), answer=answer_items)
    decision = verifier.write(program, lesson, pool, learn=propose)      # memory is left as the decision says

One write (``--verify N``, ``--verify-margin m``, ``--candidates K``):

    before <- M
    C <- {Write_k(before, lesson) : k in 1..K}          # the writer's proposals (k > 1 sampled); unchanged ones dropped
    if C is empty: nothing to verify
    P <- N problems of pool, never the lesson's own item: half the most like the lesson's problem, half drawn
                                                        # pool: seed problems and items already scored, nothing else
    without <- answer(P, before)                        # shared by every proposal (and by later writes while M is unchanged)
    for c in C: with_c <- answer(P, c)
        helped_c, hurt_c <- probes c turns right, probes c turns wrong
    keep the c with the largest helped_c - hurt_c, if that is >= m; else M <- before
    the entries c added carry Record(helped_c, hurt_c, P)

A probe is answered as the stream answers an item: the program's read (never an entry written from that probe), then
its solver, scored by the run's ``learn_from`` (the reference, or the task's reference-free check). Answers are kept
per memory (a digest of its JSON state) and probe, so equal memories are never asked twice.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from memreason.datasets.gym import GymItem
from memreason.programs.stream import Lesson, similarity
from memreason.programs.stream.utility import Record

__all__ = ["Answer", "VerifySettings", "WriteVerifier", "choose_probes", "memory_digest"]


@dataclass(frozen=True)
class VerifySettings:
    """``probes``: problems each change is tried on (0: writes are not verified); ``margin``: how many more probes a
    change must turn right than wrong; ``candidates``: proposals asked of the writer for each write."""

    probes: int = 0
    margin: int = 1
    candidates: int = 1


@dataclass(frozen=True)
class Answer:
    """One probe's answer under one memory: right or not, and what was answered."""

    right: bool
    prediction: str | None

    def to_json(self) -> dict[str, Any]:
        return {"right": self.right, "prediction": self.prediction}


@dataclass
class Proposal:
    candidate: int
    state: dict[str, Any]
    answers: list[Answer] = field(default_factory=list)

    def effect(self, without: Sequence[Answer]) -> tuple[int, int]:
        """(probes turned right, probes turned wrong) against ``without``."""
        helped = sum(1 for w, a in zip(without, self.answers) if a.right and not w.right)
        hurt = sum(1 for w, a in zip(without, self.answers) if w.right and not a.right)
        return helped, hurt


def memory_digest(state: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(state, sort_keys=True, default=str).encode()).hexdigest()[:16]


def frozen(state: dict[str, Any]) -> dict[str, Any]:
    """A copy of a memory state that later writes cannot change (states may share the program's own lists)."""
    return json.loads(json.dumps(state, default=str))


def choose_probes(pool: Sequence[GymItem], lesson: Lesson, n: int) -> list[GymItem]:
    """``n`` problems of ``pool``, never the lesson's own item: the ``n - n // 2`` most like the lesson's problem
    (ties: pool order), then ``n // 2`` drawn from the rest (seeded by the lesson's item, so a run repeats).

    Likeness alone picks the problems a copied answer fits (a near-duplicate shares the answer): the drawn half is
    where a change that is not general turns right answers wrong."""
    others = [item for item in pool if item.id != lesson.item_id]
    ranked = sorted(range(len(others)), key=lambda i: (-similarity(lesson.problem, others[i].question), i))
    near = ranked[: n - n // 2]
    rest = sorted(ranked[len(near) :])
    drawn = random.Random(f"probes:{lesson.item_id}").sample(rest, min(n // 2, len(rest)))
    return [others[i] for i in [*near, *drawn]]


class WriteVerifier:
    """Keeps a change only when it turns more probes right than wrong; every decision, with its probes, recorded.

    ``answer(program, items)``: each item answered with the program's memory as it stands (the harness's own
    read-solve-score, metered apart), as :class:`Answer`, in the items' order."""

    def __init__(self, settings: VerifySettings, *, answer: Callable[[Any, list[GymItem]], list[Answer]]):
        self.settings = settings
        self.answer = answer
        self.known: dict[tuple[str, str], Answer] = {}  # (memory digest, probe id) -> its answer
        self.asked = 0  # probe answers the LM was asked for
        self.shared = 0  # probe answers read from an earlier answer under an equal memory

    def write(
        self, program: Any, lesson: Lesson, pool: Sequence[GymItem], *, learn: Callable[[int], dict[str, Any]]
    ) -> dict[str, Any]:
        """Make the write ``learn(candidate)`` verified; the decision's record (memory left as decided)."""
        started = time.perf_counter()
        before = frozen(program.memory_state())
        proposals, writes = self._proposals(program, before, learn)
        if not proposals:
            program.load_memory(before)
            return {"decision": "unchanged", "probes": [], "writes": writes, "wall_seconds": _since(started)}
        probes = choose_probes(pool, lesson, self.settings.probes)
        if not probes:
            program.load_memory(before)
            why = "no scored problem to try it on"
            return {"decision": "refused", "why": why, "probes": [], "writes": writes, "wall_seconds": _since(started)}
        without, *answers = self._answers(program, [before, *(p.state for p in proposals)], probes)
        for proposal, answered in zip(proposals, answers):
            proposal.answers = answered
        scored = [(proposal, *proposal.effect(without)) for proposal in proposals]
        best, helped, hurt = max(scored, key=lambda s: (s[1] - s[2], -s[0].candidate))
        kept = helped - hurt >= self.settings.margin
        program.load_memory(best.state if kept else before)
        added = _mark(program, before, helped=helped, hurt=hurt, probes=[p.id for p in probes]) if kept else []
        return {
            "decision": "kept" if kept else "refused",
            "candidate": best.candidate,
            "helped": helped,
            "hurt": hurt,
            "added": added,
            "probes": [
                {"id": item.id, "without": w.to_json(), "with": [p.answers[i].to_json() for p in proposals]}
                for i, (item, w) in enumerate(zip(probes, without))
            ],
            "candidates": [{"candidate": p.candidate, "helped": h, "hurt": x} for p, h, x in scored],
            "writes": writes,
            "wall_seconds": _since(started),
        }

    def _proposals(
        self, program: Any, before: dict[str, Any], learn: Callable[[int], dict[str, Any]]
    ) -> tuple[list[Proposal], list[dict[str, Any]]]:
        """(the proposals that change memory, each distinct; the record of every write asked, with what it spent)."""
        proposals: list[Proposal] = []
        records = []
        for candidate in range(self.settings.candidates):
            if candidate:
                program.load_memory(frozen(before))
            records.append(learn(candidate))
            state = frozen(program.memory_state())
            if state != before and all(state != p.state for p in proposals):
                proposals.append(Proposal(candidate, state))
        return proposals, records

    def _answers(self, program: Any, states: list[dict[str, Any]], probes: list[GymItem]) -> list[list[Answer]]:
        """The probes' answers under each memory state, those not known yet asked together: each state on a copy
        of the program (memory is the program's own), so the slowest answer of one state waits for no other."""
        digests = [memory_digest(state) for state in states]
        todo = {}  # digest -> (state, the probes it has no answer for)
        for digest, state in zip(digests, states):
            missing = [item for item in probes if (digest, item.id) not in self.known]
            self.shared += len(probes) - len(missing)
            if missing and digest not in todo:
                todo[digest] = (state, missing)

        def answer(state: dict[str, Any], missing: list[GymItem]) -> list[Answer]:
            copy = program if len(todo) == 1 else program.deepcopy()
            copy.load_memory(frozen(state))
            return self.answer(copy, missing)

        with ThreadPoolExecutor(max_workers=max(1, len(todo))) as pool:
            futures = {digest: pool.submit(answer, state, missing) for digest, (state, missing) in todo.items()}
        for digest, (_, missing) in todo.items():
            for item, got in zip(missing, futures[digest].result()):
                self.known[(digest, item.id)] = got
            self.asked += len(missing)
        return [[self.known[(digest, item.id)] for item in probes] for digest in digests]


def _mark(program: Any, before: dict[str, Any], *, helped: int, hurt: int, probes: list[str]) -> list[str]:
    """Give the entries the kept change added (those whose ids were not in ``before``) their admission record."""
    memory = program.entry_memory()
    if memory is None:
        return []
    old = {entry.get("id") for entry in before.get("entries", []) if isinstance(entry, dict)}
    added = [entry for entry in memory.entries if entry.id not in old]
    for entry in added:
        entry.record = Record.admitted(helped=helped, hurt=hurt, probes=probes)
    return [entry.id for entry in added]


def _since(started: float) -> float:
    return round(time.perf_counter() - started, 2)
