"""What ``python -m eval report`` adds for problem tasks' runs (:class:`memreason.eval.tasks.ProblemTask` gives it):
"Checked hypotheses", what a checked program did (results with ``hypothesis_kept`` or ``answered_by``)."""

from __future__ import annotations

from ..report_parts import Row, pct, scaled, table

__all__ = ["checked"]


def checked(rows: list[Row]) -> list[str]:
    """What a checked program did on an inductive task (results with ``hypothesis_kept`` or ``answered_by``)."""
    found = [(n, r) for n, r, _ in rows if r.get("hypothesis_kept") is not None or r.get("answered_by")]
    if not found:
        return []
    sources = list(dict.fromkeys(["hypothesis", "reasoner", *sorted(s for _, r in found for s in r.get("answered_by") or {})]))
    rows = [
        [n, pct(scaled(r.get("hypothesis_kept"))), pct(scaled(r.get("hypothesis_narrowed")))]
        + [str((r.get("answered_by") or {}).get(s, 0)) for s in sources]
        for n, r in found
    ]
    return [
        "## Checked hypotheses",
        "",
        "Kept: the share of problems (each run's memory of each) whose checked program kept a hypothesis that "
        "passed its check on every episode; narrowed: the share of problems whose kept hypothesis passed only once "
        "code dropped the claims its counterexamples refuted. Answered by: the queries (over the runs) the kept hypothesis answered "
        "in code (hypothesis), and those the reasoner answered (reasoner: none kept, or it gave no answer).",
        "",
    ] + table(["run", "hypothesis kept %", "narrowed in code %"] + [f"answered by {s}" for s in sources], rows)
