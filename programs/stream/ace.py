"""``ace``: Agentic Context Engineering (Zhang et al. 2025) over a stream of problems: a playbook of itemised
bullets, grown and pruned by delta operations rather than rewritten whole.

    read:   B <- the bullets not written from this item (at most k: those most like the problem)
            memory <- B by section, each bullet as "[id] text"
    solve:  ids, answer <- Generate(memory, problem)                 # the generator names the bullets it used
    write:  tags, insight <- Reflect(problem, attempt, outcome, the bullets used)
            count each tag on its bullet (helpful / harmful / neutral)
            ops <- Curate(playbook, problem, reflection)             # ADD, UPDATE, MERGE, DELETE
            apply ops in code: unknown ids ignored, an ADD nearly equal to a bullet of its section an UPDATE of it
            while the playbook is over max_tokens: delete the bullet with the lowest helpful - harmful (then the oldest)

The playbook is an :class:`EntryMemory` of :class:`Entry` bullets: the entry's id is the bullet's id (``e1``,
``e2``, ... never given twice, even after a DELETE), ``extra["section"]`` one of :data:`SECTIONS`,
``extra["tags"]`` the reflector's counts ``{"helpful": n, "harmful": n, "neutral": n}``. Those counts are the
reflector's opinion; an entry's measured ``record`` belongs to verified writes (``--verify``), which give every
bullet they admit the probes it turned right and wrong, and reads then rank by it.

How the used ids reach the write: the solver appends a line ``Bullets used: e3, e5`` to the reasoning each attempt
records (:class:`PlaybookSolver`), and :meth:`Ace.learn` reads it back from :attr:`Lesson.reasoning`. The ids thus
travel with the attempt they belong to: nothing is kept in the program between a solve and its write, so items
answered in threads, probe answers of verified writes and a resumed run (which reads the reasoning back from the
run's records) cannot mix one item's ids with another's. With ``--lesson answer`` a write reads no reasoning, so
the reflector is told no bullet was used and no tag is counted.

The guard: a new bullet's sources are the lesson's item; an UPDATE adds the lesson's item to the bullet's sources
(unless it leaves the text as it was); a MERGE's bullet has the union of its parts' sources and the lesson's item.
An item is never shown a bullet any of whose text came from it.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, get_args

import dspy

from memreason.signatures.stream import (
    CuratePlaybook,
    FunctionWithPlaybook,
    PlaybookOperation,
    PlaybookSection,
    ProgramWithPlaybook,
    ReflectOnPlaybookUse,
    RetryWithPlaybook,
    SolveWithPlaybook,
)

from ..registry import register_program
from .base import Lesson, Read, StreamProgram
from .entries import Entry, EntryMemory, FreshLock, similarity
from .solver import StreamSolver

__all__ = ["CITED", "DUPLICATE_SIMILARITY", "SECTIONS", "TAGS", "Ace", "PlaybookSolver", "cited_ids"]

#: A playbook's sections, in the order a read shows them.
SECTIONS: tuple[str, ...] = get_args(PlaybookSection)
#: The reflector's tags, counted on each bullet.
TAGS = ("helpful", "harmful", "neutral")
#: An ADD at least this similar (:func:`similarity`) to a bullet of its section updates that bullet instead.
DUPLICATE_SIMILARITY = 0.9
#: The line an attempt's reasoning ends with: the ids of the bullets it used.
CITED = "Bullets used:"
EMPTY = "(empty)"


class PlaybookSolver(StreamSolver):
    """:class:`StreamSolver` asking with the playbook's signatures (each names the bullet ids it used, before the
    answer); every attempt's reasoning ends with a line ``Bullets used: ...`` (``none`` when none)."""

    signatures = {"text": SolveWithPlaybook, "program": ProgramWithPlaybook, "function": FunctionWithPlaybook}
    retry_signature = RetryWithPlaybook

    def reasoning_of(self, out: dspy.Prediction) -> str:
        ids = _normalised(out.get("bullet_ids") or [])
        line = f"{CITED} {', '.join(ids) if ids else 'none'}"
        said = super().reasoning_of(out)
        return f"{said}\n{line}" if said else line


def cited_ids(reasoning: str) -> list[str]:
    """The bullet ids an attempt's reasoning says it used (its last ``Bullets used:`` line; none without one)."""
    lines = [line for line in reasoning.splitlines() if line.strip().startswith(CITED)]
    return _normalised(lines[-1].strip()[len(CITED) :].split(",")) if lines else []


def _normalised(ids: Iterable[Any]) -> list[str]:
    """Ids as ``e<n>``, each once, in order: ``"e3"``, ``"[e3]"`` and ``"3"`` are all ``e3``; anything else dropped."""
    out: list[str] = []
    for raw in ids:
        found = re.fullmatch(r"\s*\[?\s*[eE]?(\d+)\s*\]?\s*", str(raw))
        if found and f"e{int(found.group(1))}" not in out:
            out.append(f"e{int(found.group(1))}")
    return out


@register_program
class Ace(StreamProgram):
    """A playbook of bullets in sections: cited by the generator, tagged by a reflector, curated by deltas."""

    name = "ace"
    summary = (
        "stream tasks: ACE, a playbook of bullets in sections; the solver names the bullets it used, a reflector "
        "tags them helpful / harmful / neutral, a curator's ADD / UPDATE / MERGE / DELETE applied in code "
        "(knobs: k, max_tokens)"
    )

    memory_format = "playbook"
    space = {"k": ("int", 5, 40)}  # its knob's Optuna search space
    reads_attempts = True
    solver_class = PlaybookSolver

    def __init__(self, *, k: int = 20, max_tokens: int = 2000, **solver: Any):
        """
        Args:
            k: the most bullets a read shows (when more may be shown: the ``k`` most like the problem, by
                :meth:`EntryMemory.nearest`, which adds measured utility where verified writes recorded it).
            max_tokens: the playbook's budget in tokens (characters / 4); over it, the bullets with the lowest
                helpful - harmful count are deleted, the oldest first among equals. 0: no budget.
            **solver: :class:`StreamProgram`'s (answer, retries, cot, memory_first).
        """
        super().__init__(**solver)
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if max_tokens < 0:
            raise ValueError(f"max_tokens must be >= 0, got {max_tokens}")
        self.k, self.max_tokens = k, max_tokens
        self.reflect = dspy.Predict(ReflectOnPlaybookUse)
        self.curate = dspy.Predict(CuratePlaybook)
        self.playbook = EntryMemory()
        self.issued = 0  # the highest bullet number ever given: a deleted bullet's id is never given again
        self._writing = FreshLock()

    # -- read ------------------------------------------------------------------------------------

    def read(self, problem: str, item_id: str = "", check: Any = None) -> Read:
        shown, withheld = self.playbook.visible(item_id)
        if len(shown) > self.k:  # the k most like the problem, still shown in the playbook's order
            nearest = {e.id for e in self.playbook.nearest(problem, k=self.k, among=shown)}
            shown = [e for e in shown if e.id in nearest]
        record = {"ids": [e.id for e in shown], "withheld": withheld, "shown": [e.sources for e in shown]}
        return Read(_rendered(shown), record)

    # -- write -----------------------------------------------------------------------------------

    def learn(self, lesson: Lesson) -> dict[str, Any]:
        with self._writing:
            cited = cited_ids(lesson.reasoning)
            used = [e for e in map(self._bullet, cited) if e is not None]
            reflection = self.reflect(
                problem=lesson.problem,
                attempt=lesson.attempt(),
                outcome=lesson.outcome(),
                used_bullets="\n".join(f"[{e.id}] ({_section(e)}) {e.text}" for e in used) or "(none)",
            )
            tags = self._count(reflection.bullet_tags, used)
            said = ", ".join(f"{i} {t}" for i, t in tags.items()) or "none"
            notes = f"{reflection.diagnosis}\nBullets used: {said}\nKey insight: {reflection.key_insight}"
            operations = self.curate(playbook=self._curator_view(), problem=lesson.problem, reflection=notes).operations
            applied = [self._apply(op, lesson) for op in operations]
            cut = self._fit()
        return {
            "cited": cited,
            "unknown_cited": [i for i in cited if i not in {e.id for e in used}],
            "tags": tags,
            "insight": str(reflection.key_insight),
            "operations": applied,
            "budget_deleted": cut,
            "bullets": len(self.playbook),
        }

    def _bullet(self, bullet_id: str) -> Entry | None:
        """The bullet ``bullet_id`` where it is in the playbook and not retired; else None."""
        entry = self.playbook.find(bullet_id)
        return entry if entry is not None and not entry.retired else None

    def _count(self, tagged: list[Any], used: list[Entry]) -> dict[str, str]:
        """Count the reflector's tags on the bullets used (a tag on any other id is ignored); {id: tag} counted."""
        counted: dict[str, str] = {}
        by_id = {e.id: e for e in used}
        for tag in tagged:
            ids = _normalised([tag.id])
            if not ids or ids[0] not in by_id or ids[0] in counted:
                continue
            entry = by_id[ids[0]]
            entry.extra["tags"] = {**_tags(entry), tag.tag: _tags(entry)[tag.tag] + 1}
            counted[ids[0]] = tag.tag
        return counted

    def _curator_view(self) -> str:
        """The whole playbook as the curator reads it: each bullet's id, counts and text, by section."""
        bullets = self.playbook.active()
        if not bullets:
            return EMPTY

        def line(e: Entry) -> str:
            counts = _tags(e)
            return f"[{e.id}] (helpful {counts['helpful']}, harmful {counts['harmful']}) {e.text}"

        return _by_section(bullets, line)

    # -- the four operations, in code ---------------------------------------------------------------

    def _apply(self, op: PlaybookOperation, lesson: Lesson) -> dict[str, Any]:
        """Apply one operation; what it did (``result``: added, updated, duplicate, merged, deleted, ignored)."""
        content = op.content.strip()
        ids = _normalised(op.ids)
        known = [i for i in ids if self._bullet(i) is not None]
        done: dict[str, Any] = {"op": op.op, "ids": ids, "unknown": [i for i in ids if i not in known]}
        if op.op in ("ADD", "UPDATE", "MERGE") and not content:
            return {**done, "result": "ignored", "why": "no content"}
        if op.op != "ADD" and not known:
            return {**done, "result": "ignored", "why": "no known id"}
        if op.op == "ADD":
            return {**done, **self._add(op.section, content, lesson)}
        if op.op == "UPDATE":
            self._rewrite(self._bullet(known[0]), content, lesson, sources=[])
            return {**done, "result": "updated", "id": known[0]}
        if op.op == "MERGE":
            return {**done, "result": "merged", "id": self._merge(known, content, lesson)}
        self.playbook.remove(known)
        return {**done, "result": "deleted", "deleted": known}

    def _add(self, section: str, content: str, lesson: Lesson) -> dict[str, Any]:
        section = section if section in SECTIONS else SECTIONS[0]
        same = [e for e in self.playbook.active() if _section(e) == section]
        twin = max(same, key=lambda e: similarity(content, e.text), default=None)
        if twin is not None and similarity(content, twin.text) >= DUPLICATE_SIMILARITY:
            self._rewrite(twin, content, lesson, sources=[])
            return {"result": "duplicate", "id": twin.id}
        self.issued = max(self.issued, _highest(self.playbook)) + 1
        extra = {"section": section, "tags": dict.fromkeys(TAGS, 0)}
        entry = Entry(content, [lesson.item_id], "bullet", _key(content, lesson), extra, f"e{self.issued}")
        self.playbook.add(entry)
        return {"result": "added", "id": entry.id, "section": section}

    def _merge(self, ids: list[str], content: str, lesson: Lesson) -> str:
        """Merge bullets ``ids`` into the first: its text ``content``, the union of their sources and tag counts."""
        parts = [self._bullet(i) for i in ids]
        kept = parts[0]
        sources = [s for part in parts for s in part.sources]
        kept.extra["tags"] = {t: sum(_tags(part)[t] for part in parts) for t in TAGS}
        self._rewrite(kept, content, lesson, sources=sources)
        self.playbook.remove(ids[1:])
        return kept.id

    @staticmethod
    def _rewrite(entry: Entry, content: str, lesson: Lesson, *, sources: list[str]) -> None:
        """``entry`` with the text ``content``, written (also) from the lesson's item and from ``sources``; a text
        left as it was (and no sources to add) leaves the bullet as it was: nothing of the lesson's item is in it."""
        if content == entry.text and not sources:
            return
        entry.text, entry.key = content, _key(content, lesson)
        entry.sources = list(dict.fromkeys([*entry.sources, *sources, lesson.item_id]))

    def _fit(self) -> list[str]:
        """Delete bullets until the playbook fits in ``max_tokens``: the lowest helpful - harmful first, then the oldest."""
        if not self.max_tokens:
            return []
        bullets = self.playbook.active()
        order = sorted(range(len(bullets)), key=lambda i: (_net(bullets[i]), i))
        total, cut = self.playbook.tokens(), []
        for i in order:
            if total <= self.max_tokens:
                break
            total -= bullets[i].tokens()
            cut.append(bullets[i].id)
        self.playbook.remove(cut)
        return cut

    # -- the state ---------------------------------------------------------------------------------

    def memory_state(self) -> dict[str, Any]:
        return {"format": self.memory_format, "entries": self.playbook.to_json(), "issued": self.issued}

    def load_memory(self, state: dict[str, Any]) -> None:
        self.playbook.load(state.get("entries", []))
        self.issued = max(int(state.get("issued", 0)), _highest(self.playbook))

    def memory_size(self) -> int:
        return len(self.playbook)

    def entry_memory(self) -> EntryMemory:
        return self.playbook


def _section(entry: Entry) -> str:
    return str(entry.extra.get("section") or SECTIONS[0])


def _tags(entry: Entry) -> dict[str, int]:
    counts = entry.extra.get("tags") or {}
    return {t: int(counts.get(t, 0)) for t in TAGS}


def _net(entry: Entry) -> int:
    counts = _tags(entry)
    return counts["helpful"] - counts["harmful"]


def _key(content: str, lesson: Lesson) -> str:
    """What a read ranks a bullet by: its text and the problem it was last written from."""
    return f"{content}\n{lesson.problem}"


def _highest(memory: EntryMemory) -> int:
    return max((int(e.id[1:]) for e in memory.entries if re.fullmatch(r"e\d+", e.id)), default=0)


def _by_section(bullets: list[Entry], line: Any) -> str:
    """``bullets`` grouped under their sections' headings (:data:`SECTIONS` first, in order), in playbook order."""
    sections = [*SECTIONS, *sorted({_section(e) for e in bullets} - set(SECTIONS))]
    blocks = []
    for section in sections:
        inside = [line(e) for e in bullets if _section(e) == section]
        if inside:
            blocks.append("\n".join([f"## {section}", *inside]))
    return "\n\n".join(blocks)


def _rendered(bullets: list[Entry]) -> str:
    """The playbook as the solver reads it: by section, each bullet as ``[id] text``, in playbook order."""
    return _by_section(bullets, lambda e: f"[{e.id}] {e.text}")
