"""What a memory entry did, measured: the record that verified writes keep on every entry they admit.

    record = Record.admitted(helped=2, hurt=0, probes=["4", "9", "s2"])   # the write's probes, with and without it
    record = record.used(right=True, expected=0.3)                        # an item it was shown to, then scored
    record.utility()        # helped - hurt + (right - expected) over the items it was shown to
    record.rank_bonus()     # what a read adds to the entry's similarity (bounded, so similarity still leads)
    record.harmful()        # its use shows harm: a read then retires it (kept in the snapshot, never shown)

``expected`` is how often the scored items not shown the entry were right (the stream's own accuracy would count the
entry against itself: an entry that lowers it lowers its own bar): an entry whose items were right no more often
than those earns nothing from use; one shown to many items that then failed more often, loses what its admission
earned, and is retired once that is below zero after at least :data:`MIN_SHOWN` showings.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, Collection, Sequence

__all__ = ["MIN_SHOWN", "RANK_WEIGHT", "Record", "rate_without"]

MIN_SHOWN = 3  # showings before use alone may retire an entry
RANK_WEIGHT = 0.05  # similarity is in [0, 1]; one net probe helped moves an entry this much up a read's ranking
RANK_CAP = 4.0  # ... and at most this many


@dataclass(frozen=True)
class Record:
    """What one entry did: at admission (``helped``, ``hurt``, its ``probes``' ids) and in use (``shown``,
    ``right``, ``expected``); ``retired``: why it is no longer shown (``"harm"``, ``"budget"``), or None."""

    helped: int = 0
    hurt: int = 0
    probes: list[str] = field(default_factory=list)
    shown: int = 0
    right: int = 0
    expected: float = 0.0
    retired: str | None = None

    @classmethod
    def admitted(cls, *, helped: int, hurt: int, probes: list[str]) -> "Record":
        return cls(helped=helped, hurt=hurt, probes=list(probes))

    def used(self, *, right: bool, expected: float) -> "Record":
        """This record after the entry was shown to one more item, scored ``right``, when the stream's accuracy was
        ``expected``; retired for harm when its utility falls below zero after :data:`MIN_SHOWN` showings."""
        after = replace(self, shown=self.shown + 1, right=self.right + int(right), expected=self.expected + expected)
        if after.retired is None and after.shown >= MIN_SHOWN and after.utility() < 0:
            after = after.retire("harm")
        return after

    def retire(self, why: str) -> "Record":
        return replace(self, retired=why)

    def utility(self) -> float:
        return self.helped - self.hurt + (self.right - self.expected)

    def harmful(self) -> bool:
        return self.retired == "harm"

    def rank_bonus(self) -> float:
        return RANK_WEIGHT * max(-RANK_CAP, min(RANK_CAP, self.utility()))

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["expected"] = round(self.expected, 4)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Record":
        return cls(
            helped=int(data.get("helped", 0)),
            hurt=int(data.get("hurt", 0)),
            probes=[str(p) for p in data.get("probes", [])],
            shown=int(data.get("shown", 0)),
            right=int(data.get("right", 0)),
            expected=float(data.get("expected", 0.0)),
            retired=data.get("retired"),
        )


def rate_without(scored: Sequence[tuple[Collection[str], bool]], entry_id: str) -> float:
    """How often the scored items not shown ``entry_id`` were right; ``scored``: (the entry ids an item was shown,
    whether it was right) for each. Every item shown it: the rate of all (nothing else to compare with)."""
    others = [right for ids, right in scored if entry_id not in ids] or [right for _, right in scored]
    return sum(others) / len(others) if others else 0.0
