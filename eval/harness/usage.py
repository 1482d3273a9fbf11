"""One tally of what a run spent, read back from its records: tokens by role and step, faults, LM retries, cost.

    tally = UsageTally()
    for record in records:            # example lines, memory records, memory-write entries
        tally.add(record, role="task")
    tally.results(task_spec, memory_spec)   # {"tokens", "tokens_by_step", "cost", "lms"}

A record metered by :class:`memreason.lm.tokens.Meter` carries ``usage`` ({role: {step: tokens}}),
``faults``, ``retries`` and ``lms`` (by role: the models that answered, their fingerprints, the settings
sent; the run's manifest is made of them). Records written before steps were metered carry only totals;
they count under the step ``all`` of the role they belong to (``role``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from memreason.lm.cost import role_costs
from memreason.lm.tokens import Tokens, merge_lms

ROLES = ("memory", "task")


class UsageTally:
    """Tokens by role and step, faults and LM retries by kind, summed over records."""

    def __init__(self):
        self.steps: dict[str, dict[str, Tokens]] = {}
        self.faults: Counter[str] = Counter()
        self.retries: Counter[str] = Counter()
        self.lms: dict[str, Any] = {}

    def add(self, record: dict[str, Any], *, role: str) -> None:
        """Count one record; ``role`` is the role of an older record that has totals only."""
        self.faults.update(record.get("faults") or {})
        self.retries.update(record.get("retries") or {})
        if isinstance(record.get("lms"), dict):
            self.lms = merge_lms(self.lms, record["lms"])
        if "usage" in record:
            for name, steps in (record["usage"] or {}).items():
                for step, tokens in steps.items():
                    self._add(name, step, Tokens.of(tokens))
            return
        tokens = record.get("tokens")
        if isinstance(tokens, dict) and set(tokens) & set(ROLES):  # an older ARC task line: totals per role
            for name, counts in tokens.items():
                self._add(name, "all", Tokens.of(counts))
        elif isinstance(tokens, dict):  # an older line of one role
            self._add(role, "all", Tokens.of(tokens))
        for item in record.get("records") or []:  # an older memory-write entry: its records' own counts
            self._add(role, "all", Tokens.of(item.get("tokens")))

    def _add(self, role: str, step: str, tokens: Tokens) -> None:
        by_step = self.steps.setdefault(role, {})
        by_step[step] = by_step.get(step, Tokens()) + tokens

    def roles(self) -> dict[str, Tokens]:
        return {role: sum(self.steps.get(role, {}).values(), Tokens()) for role in ROLES}

    def results(self, task_spec: str | None, memory_spec: str | None) -> dict[str, Any]:
        """``tokens`` by role, ``tokens_by_step`` by role and step, the dollar ``cost``, and ``lms``: by role, the
        models that answered, their fingerprints and the settings sent (the run's manifest takes it)."""
        roles = self.roles()
        return {
            "tokens": {role: t.as_dict() for role, t in roles.items()},
            "tokens_by_step": {
                role: {s: t.as_dict() for s, t in sorted(steps.items())} for role, steps in sorted(self.steps.items())
            },
            "cost": role_costs({"memory": (memory_spec, roles["memory"]), "task": (task_spec, roles["task"])}),
            "lms": self.lms,
        }
