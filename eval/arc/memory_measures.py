"""What an ArcMemo run's memory reads did, from its task records alone: selection quality and concept reuse.

    read_measure(record)        # one task's first read: k, hit, precision (None: nothing to measure)
    memory_measures(per_run)    # the ``memory_measures`` block of results.json (None: no selection at all)

A task's concept label is :func:`memreason.datasets.arc.concept_of` of its id (a generated
task's family, ``move_1pix_solid_right@s0i3`` -> ``move_1pix_solid_right``; a plain ARC id
is its own label). A read records, for every concept it selected, the tasks the concept was
abstracted from (``read["selected_sources"]``, taken from the memory at read time), so:

- **hit@k**: some selected concept has a source with the task's label (k: the number selected);
- **precision**: the fraction of the selected concepts that have such a source;
- **part hit** and **part coverage** (1D-ARC families only, for the recombination split): some
  selected concept's source family shares a building block (:func:`memreason.datasets.arc.parts_of`)
  with the task's family; the fraction of the task family's blocks that the selected sources'
  families hold between them;
- **blind references** for hit@k: what a read blind to the puzzle would score at the same k
  (``read["blind"]``, recorded at read time): ``chance``, k concepts drawn at random, and
  ``most_sourced``, the k concepts with the most sources. A selector earns its hit@k only above them;
- **reuse**: per concept, the task records whose reads (first read, re-reads, re-selections)
  selected it, and how many of those were solved (official score > 0).

hit@k averages over the measured reads (a read that selected nothing is a miss), precision over
those that selected something, both only over reads whose memory held a concept of the task's
label (``read["label_held"]``: no ``val100`` task, nor a recombination family, is a source of a
seed memory, so hit@k there would be 0 by construction; such reads count in ``tasks`` and the
part measures, and ``label_held`` counts the others); a read that failed, one that gave the whole memory (``"all"``),
and a record written before reads kept their sources are not measured.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Sequence

from memreason.datasets.arc import ArcDataError, concept_of, parts_of

from .attribution import official

__all__ = ["ReadMeasure", "memory_measures", "read_measure", "selected_names", "solved"]

REUSE_KEPT = 50  # the most-selected concepts kept in results.json


@dataclass(frozen=True)
class ReadMeasure:
    """One task's first read, measured against the task's concept label."""

    k: int  # concepts selected
    hit: bool  # some selected concept came from a task of the same concept
    precision: float | None  # the fraction of selected concepts that did (None: nothing selected)
    part_hit: bool | None = None  # 1D-ARC: some selected source family shares a building block (None: not 1D-ARC)
    part_coverage: float | None = None  # 1D-ARC: the fraction of the task family's blocks the selected sources hold
    held: bool = True  # memory held a concept of the task's label when it was read (older records: assumed)
    chance: float | None = None  # the hit probability of k concepts drawn at random (None: older records)
    most_sourced: bool | None = None  # the k concepts with the most sources hold a hit (None: older records)


def solved(record: dict[str, Any]) -> bool:
    """A task record's task is solved: its official score is above 0."""
    return official(record) > 0


def read_measure(record: dict[str, Any]) -> ReadMeasure | None:
    """The measure of a task record's first read, or None when there is nothing to measure (no selection,
    the whole memory, a failed read, a record without ``selected_sources``)."""
    read = record.get("read") or {}
    selected, sources = read.get("selected"), read.get("selected_sources")
    if not isinstance(selected, list) or not isinstance(sources, dict) or read.get("failed"):
        return None
    label = concept_of(str(record["id"]))
    from_same = [any(concept_of(str(s)) == label for s in sources.get(name) or []) for name in selected]
    k = len(selected)
    part_hit = part_coverage = None
    wanted = _parts(label)
    if wanted is not None:
        held = [set(p) for s in {concept_of(str(s)) for name in selected for s in sources.get(name) or []} if (p := _parts(s))]
        part_hit = any(p & set(wanted) for p in held)
        part_coverage = len(set(wanted) & set().union(*held)) / len(set(wanted))
    held = read.get("label_held", True) is not False
    blind = read.get("blind") if isinstance(read.get("blind"), dict) else {}
    chance, most = blind.get("chance"), blind.get("most_sourced")
    return ReadMeasure(
        k,
        any(from_same),
        sum(from_same) / k if k else None,
        part_hit,
        part_coverage,
        held,
        float(chance) if isinstance(chance, (int, float)) else None,
        most if isinstance(most, bool) else None,
    )


def selected_names(record: dict[str, Any]) -> list[str]:
    """Every concept a task record's reads selected: its first read's, then those its retry steps read
    (a retry pass's re-read, a re-selection), each once."""
    reads = [record.get("read") or {}]
    reads += [step.get("read") or {} for attempt in record.get("attempts") or [] for step in attempt.get("steps") or []]
    names = [str(n) for read in reads if isinstance(read.get("selected"), list) for n in read["selected"]]
    return list(dict.fromkeys(names))


def memory_measures(per_run: Sequence[Sequence[dict[str, Any]]]) -> dict[str, Any] | None:
    """The ``memory_measures`` block of a run's results from its task records (per run), or None when no
    record's read selected concepts (a program without selection, ``arcmemo_ps_noselect``).

    ``tasks``: task records measured (a task counts once per run); ``hit_at_k``, ``precision``,
    ``selected_mean`` (the mean k), ``chance_hit_at_k`` and ``most_sourced_hit_at_k`` (the blind
    references, over the reads hit@k measures that recorded them; None: none did), ``empty``
    (reads that selected nothing), ``failed`` (reads that failed); ``part_hit``, ``part_coverage`` and ``part_tasks`` for 1D-ARC tasks (else
    None and 0); the same per run (``per_run``); ``reuse``: the most-selected concepts (at most
    :data:`REUSE_KEPT`), each with ``selected`` (task records whose reads selected it) and
    ``solved`` (of those, solved), most selected first."""
    records = [r for run in per_run for r in run]
    if not any(isinstance((r.get("read") or {}).get("selected"), list) for r in records):
        return None
    block = _summary([m for r in records if (m := read_measure(r)) is not None])
    block["failed"] = sum(1 for r in records if (r.get("read") or {}).get("failed"))
    block["per_run"] = [_summary([m for r in run if (m := read_measure(r)) is not None]) for run in per_run]
    picked, won = Counter(), Counter()
    for record in records:
        for name in selected_names(record):
            picked[name] += 1
            won[name] += solved(record)
    block["reuse"] = [
        {"concept": name, "selected": picked[name], "solved": won[name]}
        for name in sorted(picked, key=lambda n: (-picked[n], -won[n], n))[:REUSE_KEPT]
    ]
    return block


def _summary(measures: list[ReadMeasure]) -> dict[str, Any]:
    chosen = [m for m in measures if m.k]
    parts = [m for m in measures if m.part_hit is not None]
    held = [m for m in measures if m.held]
    return {
        "tasks": len(measures),
        "label_held": len(held),
        "hit_at_k": _mean([float(m.hit) for m in held]),
        "precision": _mean([m.precision for m in chosen if m.held]),
        "chance_hit_at_k": _mean([m.chance for m in held if m.chance is not None]),
        "most_sourced_hit_at_k": _mean([float(m.most_sourced) for m in held if m.most_sourced is not None]),
        "selected_mean": _mean([float(m.k) for m in measures]),
        "empty": len(measures) - len(chosen),
        "part_hit": _mean([float(m.part_hit) for m in parts]),
        "part_coverage": _mean([m.part_coverage for m in parts]),
        "part_tasks": len(parts),
    }


def _mean(values: list[Any]) -> float | None:
    return sum(values) / len(values) if values else None


@lru_cache(maxsize=4096)
def _parts(label: str) -> tuple[str, ...] | None:
    """A 1D-ARC family's building blocks, or None for any other label (or without reasoning-gym)."""
    try:
        return parts_of(label)
    except ArcDataError:
        return None
