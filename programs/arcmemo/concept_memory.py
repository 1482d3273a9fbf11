"""ArcMemo's concept memory: a flat collection of OE or PS concepts (paper section 3.2).

    memory = ConceptMemory("ps")
    memory.add(concepts, source="007bbfb7")   # PS: merge by title; OE: append, skipping exact repeats
    memory.add(concepts, source="007bbfb7", program=code)   # each concept also keeps the verified program
    memory.render(compressed=True)            # for abstraction and selection
    memory.shown(chars=8192)                  # the same, shortened to fit (a small model's context), and how
    memory.render(names=["sort objects"])     # the chosen concepts in full, for the solver
    memory.render_within(names, chars=8192)   # the same, shortened to fit, and how
    memory.use(names)                         # count a read

Every entry keeps how often it was selected (``uses``), the puzzles it came
from (``sources``) and the verified programs it was abstracted from (``programs``:
source code defining ``transform``, at most :data:`MAX_PROGRAMS`, the newest kept, no
repeats; a program longer than :data:`MAX_PROGRAM_CHARS` is not kept). The programs are
never rendered: no prompt shows them; an execution-ranked read runs them
(:mod:`memreason.programs.arcmemo.execution_ranking`). Revising a PS concept (same
title, compared on its letters and digits alone, :func:`title_key`) keeps every field: a field the revision
leaves empty keeps its old value; parameters (by name), relevance cues and implementation
notes are merged without duplicates. OE entries are named by their number, "1", "2", ...

Persisted as JSON by :mod:`memreason.programs.arcmemo.memory_file` (atomic writes, one snapshot per update),
and, being a DSPy parameter (:mod:`memreason.programs.shared.memory_parameter`), saved and loaded
with any program that holds it (``program.save`` / ``program.load``). It pickles too (its lock
is left out and made anew), so ``program.save(path, save_program=True)`` and MLflow's
``mlflow.dspy.log_model`` take a program holding it.
"""

from __future__ import annotations

import copy
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Iterable, Literal, Mapping, Sequence

from pydantic import ValidationError

from memreason.signatures import OEConcept, Parameter, PSConcept

from ..shared.memory_parameter import MemoryParameter
from ..shared.normalise import distinct, normalise

__all__ = [
    "MAX_PROGRAMS",
    "MAX_PROGRAM_CHARS",
    "ConceptMemory",
    "Entry",
    "cues_apart",
    "merge_ps",
    "render_oe",
    "render_ps",
    "require_memory",
    "title_key",
]

Format = Literal["oe", "ps"]
Concept = OEConcept | PSConcept

#: The most verified programs a concept keeps (the newest).
MAX_PROGRAMS = 3
#: A longer program is not kept (re-ARC's verifiers run with the whole DSL's source, some 35,000 characters).
MAX_PROGRAM_CHARS = 20_000


@dataclass
class Entry:
    concept: Concept
    uses: int = 0
    sources: list[str] = field(default_factory=list)
    programs: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            **self.concept.model_dump(),
            "uses": self.uses,
            "sources": list(self.sources),
            "programs": list(self.programs),
        }

    def keep_program(self, program: str | None) -> None:
        """Record ``program`` as the newest of :attr:`programs` (moved there if kept already), at most
        :data:`MAX_PROGRAMS` kept; nothing for ``None``, a blank program or one over :data:`MAX_PROGRAM_CHARS`."""
        if not program or not program.strip() or len(program) > MAX_PROGRAM_CHARS:
            return
        self.programs = [*(p for p in self.programs if p != program), program][-MAX_PROGRAMS:]


class ConceptMemory(MemoryParameter):
    """OE or PS concepts with usage counts and sources; thread-safe."""

    def __init__(self, format: Format, entries: Iterable[Entry] = ()):
        if format not in ("oe", "ps"):
            raise ValueError(f"concept memory format must be 'oe' or 'ps', got {format!r}")
        self.format = format
        self.entries: list[Entry] = list(entries)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.entries)

    def __deepcopy__(self, memo: dict) -> "ConceptMemory":
        """An independent memory with its own lock (DSPy deep-copies programs when it compiles them)."""
        return ConceptMemory(self.format, copy.deepcopy(self.entries, memo))

    def __getstate__(self) -> dict[str, Any]:
        """Everything but the lock, which cannot be pickled (``save_program=True``, MLflow, multiprocessing)."""
        with self._lock:
            return {k: v for k, v in self.__dict__.items() if k != "_lock"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    # -- names -------------------------------------------------------------------------

    def names(self) -> list[str]:
        """PS: titles; OE: "1", "2", ... in order."""
        if self.format == "ps":
            return [e.concept.title for e in self.entries]
        return [str(i) for i in range(1, len(self.entries) + 1)]

    def stored_programs(self) -> list[tuple[str, list[str]]]:
        """(name, verified programs) of every concept, in memory order (a copy, taken under the lock)."""
        with self._lock:
            return [(name, list(entry.programs)) for name, entry in zip(self.names(), self.entries)]

    def resolve(self, names: Iterable[str | int]) -> tuple[list[str], list[str]]:
        """(known names in memory's spelling, without repeats, in the order given; unknown names as given)."""
        index = {self._key(n): n for n in self.names()}
        known, unknown = [], []
        for name in names:
            hit = index.get(self._key(name))
            if hit is None:
                unknown.append(str(name))
            elif hit not in known:
                known.append(hit)
        return known, unknown

    def _key(self, name: str | int) -> str:
        return title_key(str(name)) if self.format == "ps" else str(name).strip().lstrip("#[").rstrip("]")

    # -- writes ------------------------------------------------------------------------

    def add(
        self, concepts: Sequence[Concept], source: str | None = None, *, revise: bool = True, program: str | None = None
    ) -> dict[str, list[str]]:
        """Add new concepts and revise existing ones; returns the names ``added`` and ``revised``. With ``revise``
        False a PS concept whose title is taken is added apart, as ``"<title> (2)"`` (the next number free).
        ``program``: the verified program the concepts were abstracted from, kept by each concept added or
        revised (:meth:`Entry.keep_program`); ``None`` when there is none (an unverified solution)."""
        added, revised = [], []
        with self._lock:
            for concept in concepts:
                concept = self._coerce(concept)
                if self.format == "ps":
                    concept = concept.model_copy(update={"relevance_cues": cues_apart(concept.relevance_cues)})
                if not revise and self.format == "ps":
                    concept = concept.model_copy(update={"title": self._free_title(concept.title)})
                existing = self._find(concept)
                if existing is None:
                    entry = Entry(concept, sources=[source] if source else [])
                    entry.keep_program(program)
                    self.entries.append(entry)
                    added.append(self._name(entry))
                else:
                    if self.format == "ps":
                        existing.concept = merge_ps(existing.concept, concept)
                    if source and source not in existing.sources:
                        existing.sources.append(source)
                    existing.keep_program(program)
                    name = self._name(existing)
                    if name not in added and name not in revised:
                        revised.append(name)
        return {"added": added, "revised": revised}

    def programs_from_sources(self, verified: Mapping[str, str]) -> None:
        """Give every concept the programs its writes would have kept: for each of its sources in order (the
        order of the writes), the verified program ``verified`` holds for it, if any, kept as :meth:`add` keeps
        one. What a concept kept before is replaced (a memory written before concepts kept programs)."""
        with self._lock:
            for entry in self.entries:
                entry.programs = []
                for source in entry.sources:
                    entry.keep_program(verified.get(source))

    def use(self, names: Iterable[str]) -> None:
        with self._lock:
            by_name = dict(zip(self.names(), self.entries))
            for name in names:
                by_name[name].uses += 1

    def _coerce(self, concept: Any) -> Concept:
        model = PSConcept if self.format == "ps" else OEConcept
        return concept if isinstance(concept, model) else model.model_validate(concept)

    def _find(self, concept: Concept) -> Entry | None:
        if self.format == "ps":
            key = title_key(concept.title)
            return next((e for e in self.entries if title_key(e.concept.title) == key), None)
        key = (normalise(concept.situation), normalise(concept.suggestion))
        return next((e for e in self.entries if (normalise(e.concept.situation), normalise(e.concept.suggestion)) == key), None)

    def _free_title(self, title: str) -> str:
        taken = {title_key(e.concept.title) for e in self.entries}
        if title_key(title) not in taken:
            return title
        return next(f"{title} ({n})" for n in range(2, len(taken) + 3) if title_key(f"{title} ({n})") not in taken)

    def _name(self, entry: Entry) -> str:
        return entry.concept.title if self.format == "ps" else str(self.entries.index(entry) + 1)

    # -- rendering ---------------------------------------------------------------------

    def render(self, names: Sequence[str] | None = None, *, compressed: bool = False) -> str:
        """The concepts named (all by default), in memory order, in full or compressed form."""
        chosen = set(names) if names is not None else None
        lines = []
        for name, entry in zip(self.names(), self.entries):
            if chosen is None or name in chosen:
                lines.append(
                    render_ps(entry.concept, compressed) if self.format == "ps" else render_oe(name, entry.concept, compressed)
                )
        return "\n".join(lines)

    def shown(self, chars: int | None = None) -> tuple[str, str]:
        """The compressed memory as abstraction and selection read it, within ``chars`` characters
        (``None``: no limit), and how it was shortened: ``"whole"``; ``"short"``, each concept on one
        short line (PS: title, kind and signature without the cues; OE: the situation's first 120
        characters); or ``"cut N"``, the short lines in memory order until the limit, the N left out
        counted on a last line. Every concept stays nameable as long as its short line fits."""
        whole = self.render(compressed=True)
        if chars is None or len(whole) <= chars:
            return whole, "whole"
        lines = [
            render_ps(e.concept, compressed=True, cues=False) if self.format == "ps" else _short_oe(name, e.concept)
            for name, e in zip(self.names(), self.entries)
        ]
        short = "\n".join(lines)
        if len(short) <= chars:
            return short, "short"
        return _cut(lines, chars)

    def render_within(
        self, names: Sequence[str] | None = None, chars: int | None = None, *, ranked: bool = False
    ) -> tuple[str, str]:
        """The concepts named (all by default) in full, as the solver reads them, within ``chars`` characters
        (``None``: no limit), and how they were shortened: ``"whole"``; ``"brief"``, each PS concept as its
        head line, description, first two cues and first two notes (a concept revised by many solutions gathers
        dozens; an OE concept stays whole); or ``"cut N"``, the brief concepts until the limit, the N left out counted on a last line.
        ``ranked``: in the order of ``names`` (best first), not memory order."""
        chosen = list(self.names()) if names is None else list(names)
        if not ranked:
            order = {name: i for i, name in enumerate(self.names())}
            chosen = sorted((n for n in chosen if n in order), key=order.__getitem__)
        by_name = dict(zip(self.names(), self.entries))
        entries = [(n, by_name[n]) for n in chosen if n in by_name]
        whole = "\n".join(self._full(n, e) for n, e in entries)
        if chars is None or len(whole) <= chars:
            return whole, "whole"
        brief = [self._full(n, e, brief=True) for n, e in entries]
        if len("\n".join(brief)) <= chars:
            return "\n".join(brief), "brief"
        return _cut(brief, chars)

    def _full(self, name: str, entry: Entry, brief: bool = False) -> str:
        if self.format == "oe":
            return render_oe(name, entry.concept)
        return render_ps(entry.concept, brief=brief)

    # -- JSON --------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {"format": self.format, "concepts": [e.to_json() for e in self.entries]}

    def dump_state(self, json_mode: bool = True) -> dict[str, Any]:
        return self.to_json()

    def load_state(self, state: dict[str, Any] | None) -> "ConceptMemory":
        """Take the concepts of ``state`` (a :meth:`to_json`; ``None`` keeps these); the formats must agree."""
        if state is not None:
            loaded = ConceptMemory.from_json(state)
            if loaded.format != self.format:
                raise ValueError(f"a {loaded.format} concept memory cannot be loaded into a {self.format} one")
            with self._lock:
                self.entries = loaded.entries
        return self

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "ConceptMemory":
        """Raises ``ValueError`` (one line, naming the concept and field) when the data is not a memory."""
        format = data.get("format")
        if format not in ("oe", "ps"):
            raise ValueError(f"unknown concept memory format {format!r}")
        items = data.get("concepts")
        if not isinstance(items, list):
            raise ValueError("'concepts' must be a list")
        model = PSConcept if format == "ps" else OEConcept
        entries = []
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise ValueError(f"concept {i} is not an object")
            uses, sources, programs = item.get("uses", 0), item.get("sources", []), item.get("programs", [])
            if not isinstance(uses, int) or not isinstance(sources, list):
                raise ValueError(f"concept {i}: 'uses' must be an int and 'sources' a list")
            if not isinstance(programs, list) or not all(isinstance(p, str) for p in programs):
                raise ValueError(f"concept {i}: 'programs' must be a list of strings")
            fields = {k: v for k, v in item.items() if k not in ("uses", "sources", "programs")}
            try:
                concept = model.model_validate(fields)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(part) for part in first["loc"])
                raise ValueError(f"concept {i}: {where}: {first['msg']}") from None
            entries.append(Entry(concept, uses, [str(s) for s in sources], list(programs)))
        return cls(format, entries)


def title_key(title: str) -> str:
    """What two PS titles share when they name the same concept: their letters and digits, lower-cased.

    A small model names a title as an identifier about as often as it copies it: the embedded model
    writes "count_number_of_1s" or "setits_value_to_..." for "count number of 1s" or "set its value
    to ...". A title with neither letters nor digits is compared by its :func:`normalise` text."""
    return re.sub(r"[^0-9a-z]+", "", title.lower()) or normalise(title)


def require_memory(memory: Any, who: str) -> None:
    """Refuse anything but a :class:`ConceptMemory` where ``who`` reads or writes one (``None`` above all)."""
    if not isinstance(memory, ConceptMemory):
        raise TypeError(f"{who} needs a ConceptMemory, got {'None' if memory is None else type(memory).__name__}")


def merge_ps(old: PSConcept, new: PSConcept) -> PSConcept:
    """``old`` revised by ``new``: new text where given, lists merged without repeats, nothing lost."""
    parameters = {normalise(p.name): p for p in old.parameters}
    for p in new.parameters:
        before = parameters.get(normalise(p.name))
        parameters[normalise(p.name)] = (
            p
            if before is None
            else Parameter(name=before.name, type=p.type or before.type, description=p.description or before.description)
        )
    return PSConcept(
        title=old.title,
        description=new.description or old.description,
        kind=new.kind if "kind" in new.model_fields_set else old.kind,
        parameters=list(parameters.values()),
        output_typing=new.output_typing or old.output_typing,
        relevance_cues=cues_apart([*old.relevance_cues, *new.relevance_cues]),
        implementation_notes=distinct([*old.implementation_notes, *new.implementation_notes]),
    )


def cues_apart(cues: Iterable[str]) -> list[str]:
    """Relevance cues one by one, without repeats. The compressed rendering joins a concept's cues with "; ", and
    a writer shown it copies such a line back as one cue (``"0 is background; 0 is background"``): it is split."""
    return distinct(part for cue in cues for part in cue.split(";"))


def signature(concept: PSConcept) -> str:
    params = ", ".join(f"{p.name}: {p.type}" if p.type else p.name for p in concept.parameters)
    return f"({params})" + (f" -> {concept.output_typing}" if concept.output_typing else "")


def render_ps(concept: PSConcept, compressed: bool = False, *, cues: bool = True, brief: bool = False) -> str:
    """Compressed: one line with title, kind, typed signature and (``cues``) cues (no description or notes).
    ``brief`` (in full): without the parameters' lines, and at most two cues and two notes."""
    if compressed:
        tail = f"; cues: {'; '.join(concept.relevance_cues)}" if cues and concept.relevance_cues else ""
        return f"- {concept.title} [{concept.kind}] {signature(concept)}{tail}"
    lines = [f"## {concept.title} [{concept.kind}] {signature(concept)}"]
    if concept.description:
        lines.append(concept.description)
    for p in concept.parameters if not brief else ():
        lines.append(f"  param {p.name}" + (f" ({p.type})" if p.type else "") + (f": {p.description}" if p.description else ""))
    most = 2 if brief else None
    lines += [f"  cue: {cue}" for cue in concept.relevance_cues[:most]]
    lines += [f"  note: {note}" for note in concept.implementation_notes[:most]]
    return "\n".join(lines)


def _cut(blocks: list[str], chars: int) -> tuple[str, str]:
    """The first ``blocks`` that fit in ``chars`` characters with a last line counting the others, and ``"cut N"``."""
    kept: list[str] = []
    used = 0
    for block in blocks:
        if used + len(block) + 1 > chars - 40:  # room for the last line
            break
        kept.append(block)
        used += len(block) + 1
    left = len(blocks) - len(kept)
    return "\n".join([*kept, f"({left} more concepts not shown)"]), f"cut {left}"


def _short_oe(name: str, concept: OEConcept) -> str:
    situation = concept.situation if len(concept.situation) <= 120 else concept.situation[:117].rstrip() + "..."
    return f"{name}. {situation}"


def render_oe(name: str, concept: OEConcept, compressed: bool = False) -> str:
    """Compressed: the situation only (what selection matches against)."""
    if compressed:
        return f"{name}. {concept.situation}"
    return f"{name}. situation: {concept.situation}\n   suggestion: {concept.suggestion}"
