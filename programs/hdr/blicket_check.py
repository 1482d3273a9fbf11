"""The code check of the checked ACRE program: a blicket hypothesis against every experiment.

    hypothesis = BlicketHypothesis.of(blickets=["red metal sphere"], non_blickets=["gray metal sphere"], rule="any")
    verdict = check(hypothesis, experiments)     # accepted, or the named experiments that refute it
    hypothesis.predict(("gray metal sphere",))   # "off"

A hypothesis says which objects are blickets, which are not (objects it names in neither
list are left open), and the rule by which the light comes on:

- ``any``: the light is on when at least one blicket is on the detector. A set holding a
  blicket is ``on``; a set of non-blickets only is ``off``; anything else is ``undetermined``.
- ``all``: the light is on when every blicket is on the detector (``on`` or ``off``; with
  no blicket named, ``undetermined``).

It is checked against every experiment (a set of objects and the light's state). An
experiment refutes it when the hypothesis predicts the other state, or leaves open what
the experiment settles: under ``any``, every object of an experiment whose light stayed
off is a non-blicket, and the one object of a lit experiment not known to be a
non-blicket is a blicket. Under ``any`` a blicket must also be shown to be one: some lit
experiment where it is the only object not known to be a non-blicket. Each refutation
names its experiment (numbered from 1, as the prompt shows them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from memreason.datasets.inductive.acre import true_blickets

__all__ = ["RULES", "BlicketCheck", "BlicketHypothesis", "Experiment", "answer", "check", "entailed", "shown"]

RULES = ("any", "all")
ON, OFF, OPEN = "on", "off", "undetermined"


@dataclass(frozen=True)
class Experiment:
    """One experiment as code sees it: its number (from 1), the objects on the detector and the light's state."""

    number: int
    objects: tuple[str, ...]
    light: str

    def text(self) -> str:
        return f"experiment {self.number} ({', '.join(self.objects)} -> {self.light})"


@dataclass(frozen=True)
class BlicketHypothesis:
    """Which objects are blickets, which are not, and the rule by which the light comes on."""

    blickets: frozenset[str]
    non_blickets: frozenset[str]
    rule: str = "any"

    @classmethod
    def of(cls, blickets: Iterable[str], non_blickets: Iterable[str] = (), rule: str = "any") -> "BlicketHypothesis":
        if rule not in RULES:
            raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
        return cls(frozenset(map(str, blickets)), frozenset(map(str, non_blickets)), rule)

    def predict(self, objects: Sequence[str]) -> str:
        """The light's state for ``objects`` on the detector: on, off or undetermined."""
        present = set(objects)
        if self.rule == "all":
            if not self.blickets:
                return OPEN
            return ON if self.blickets <= present else OFF
        if present & self.blickets:
            return ON
        return OFF if present <= self.non_blickets else OPEN

    def statement(self) -> str:
        blickets = ", ".join(sorted(self.blickets)) or "none"
        non = ", ".join(sorted(self.non_blickets)) or "none"
        how = "at least one blicket" if self.rule == "any" else "every blicket"
        return f"Blickets: {blickets}. Not blickets: {non}. The light comes on when {how} is on the detector."

    def as_dict(self) -> dict[str, Any]:
        return {"blickets": sorted(self.blickets), "non_blickets": sorted(self.non_blickets), "rule": self.rule}

    def key(self) -> tuple:
        return tuple(sorted(self.blickets)), tuple(sorted(self.non_blickets)), self.rule


@dataclass(frozen=True)
class BlicketCheck:
    """What the check found: the refutations, each naming an experiment (or none, for a claim no experiment shows)."""

    hypothesis: BlicketHypothesis
    refutations: tuple[tuple[int | None, str], ...]

    @property
    def accepted(self) -> bool:
        return not self.refutations

    def as_dict(self) -> dict[str, Any]:
        return {
            "statement": self.hypothesis.statement(),
            **self.hypothesis.as_dict(),
            "accepted": self.accepted,
            "counterexamples": [{"experiment": n, "reason": why} for n, why in self.refutations],
        }


def check(hypothesis: BlicketHypothesis, experiments: Sequence[Experiment]) -> BlicketCheck:
    """Check ``hypothesis`` against every experiment."""
    h, out = hypothesis, []
    both = sorted(h.blickets & h.non_blickets)
    if both:
        out.append((None, f"{', '.join(both)} cannot be a blicket and a non-blicket at once"))
    for e in experiments:
        said = h.predict(e.objects)
        if said != OPEN and said != e.light:
            out.append((e.number, f"{e.text()}: the light was {e.light}, the hypothesis says {said}"))
        elif said == OPEN and h.rule == "all":
            out.append((e.number, f"{e.text()}: the hypothesis names no blicket, so it cannot say the light was {e.light}"))
        elif said == OPEN and e.light == OFF:
            open_ = [o for o in e.objects if o not in h.non_blickets]
            out.append((e.number, f"{e.text()}: the light stayed off, so {', '.join(open_)} cannot be a blicket"))
        elif said == OPEN:
            open_ = [o for o in e.objects if o not in h.non_blickets]
            if len(open_) == 1:
                out.append((e.number, f"{e.text()}: {open_[0]} is the only object that can have lit it, so it is a blicket"))
    if h.rule == "any":
        for blicket in sorted(h.blickets - h.non_blickets):
            lit = [e for e in experiments if e.light == ON and blicket in e.objects]
            if not shown(blicket, h.non_blickets, lit):
                where = ", ".join(str(e.number) for e in lit) or "none"
                out.append(
                    (
                        None,
                        f"nothing shows that {blicket} is a blicket: every lit experiment holding it (experiments "
                        f"{where}) holds another object that may be the blicket",
                    )
                )
    return BlicketCheck(hypothesis, tuple(out))


def shown(blicket: str, non_blickets: frozenset[str], experiments: Sequence[Experiment]) -> bool:
    """Whether some lit experiment shows ``blicket`` to be one: it is the only object there not a non-blicket."""
    return any(e.light == ON and {o for o in e.objects if o not in non_blickets} == {blicket} for e in experiments)


def answer(hypothesis: BlicketHypothesis, experiments: Sequence[Experiment], objects: Sequence[str]) -> str:
    """The light's state for ``objects`` under ``hypothesis``, with the experiments: under ``any``, a set the
    hypothesis leaves open is ``on`` when it holds every object of a lit experiment not known to be a non-blicket
    (one of them is a blicket, whichever it is)."""
    said = hypothesis.predict(objects)
    if said != OPEN or hypothesis.rule != "any":
        return said
    present = set(objects)
    for e in experiments:
        if e.light == ON and {o for o in e.objects if o not in hypothesis.non_blickets} <= present:
            return ON
    return OPEN


def entailed(experiments: Sequence[Experiment]) -> BlicketHypothesis:
    """The ``any`` hypothesis the experiments settle (ACRE's true blickets,
    :func:`memreason.datasets.inductive.acre.true_blickets`; a reference for tests, no program answers with it)."""
    truth = true_blickets([(e.objects, e.light) for e in experiments])
    return BlicketHypothesis(frozenset(truth.blickets), frozenset(truth.non_blickets), "any")
