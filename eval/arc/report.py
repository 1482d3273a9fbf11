"""What ``python -m eval report`` adds for ARC runs (:class:`memreason.eval.arc.task.Arc` gives it): "ARC scores"
(official, strict, oracle@k and score after each number of retries, with 95% CIs over tasks), the tasks a
program that returns its input solves, how the programs fared on the train inputs, "What memory did" (hit@k and
precision of the concepts selected, the most-selected concepts), and the plots of score against k and retries."""

from __future__ import annotations

from typing import Any

from ..report_parts import DASH, TOKENS_PLOT, Plot, Row, numeric, pct, scaled, table, whole_ticks, with_ci

__all__ = ["PLOTS", "SECTIONS", "scores"]

REUSE_SHOWN = 10  # the most-selected concepts a report lists per run


def scores(runs: list[Row]) -> list[str]:
    """ARC scores (official, strict, oracle@k, by retries) with their CIs, then the notes on unchanged tasks, programs and
    memory reads."""
    found = [(n, r) for n, r, _ in runs]
    if not found:
        return []
    ks = sorted({k for _, r in found for k in (r.get("oracle_at_k") or {})}, key=numeric)
    rows = [
        [
            n,
            with_ci(r.get("official_score"), r.get("official_score_ci")),
            with_ci(r.get("strict_score"), r.get("strict_score_ci")),
        ]
        + [with_ci((r.get("oracle_at_k") or {}).get(k), (r.get("oracle_at_k_ci") or {}).get(k)) for k in ks]
        for n, r in found
    ]
    lines = ["## ARC scores (%, 95% CI over tasks)", ""]
    lines += table(["run", "official", "strict"] + [f"oracle@{k}" for k in ks], rows)
    retries = sorted({k for _, r in found for k in (r.get("score_by_retries") or {})}, key=numeric)
    if retries:
        rows = [
            [n]
            + [with_ci((r.get("score_by_retries") or {}).get(k), (r.get("score_by_retries_ci") or {}).get(k)) for k in retries]
            for n, r in found
        ]
        lines += ["### Score after each number of retries (%, 95% CI)", ""] + table(
            ["run"] + [f"{k} retries" for k in retries], rows
        )
    return lines + unchanged(found) + programs(found) + memory_measures(found)


def unchanged(found: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """A note on the tasks a program that returns its input solves (ARC results with ``unchanged_tests``)."""
    lines = []
    for n, r in found:
        block = r.get("unchanged_tests") or {}
        if block.get("tasks"):
            solved = block.get("solved") or []
            lines.append(
                f"- {n}: {len(block['tasks'])} of {r.get('examples', '?')} tasks have a test output equal to its input "
                f"(a program that returns its input solves them: {', '.join(block['tasks'])}); {len(solved)} of them "
                f"solved{': ' + ', '.join(solved) if solved else ''}."
            )
    return (["### Tasks with nothing to change", "", *lines, ""]) if lines else []


def programs(found: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """How the programs of ARC runs fared on the train inputs (results whose ``programs`` has the tally)."""
    tallied = [(n, r["programs"]) for n, r in found if isinstance(r.get("programs"), dict) and "ran" in r["programs"]]
    if not tallied:
        return []
    lines = [
        "### How the programs fared on the train inputs",
        "",
        "Every program written (first tries and retries), counted once by what stopped it first; ran: it returned "
        "a grid for every train input, of which some or all were right. Undefined names: the names whose "
        "NameError stopped a program most often.",
        "",
    ]
    rows = []
    for n, t in tallied:
        raised = sum((t.get("raised") or {}).values())
        names = ", ".join(f"{name} ({count})" for name, count in (t.get("undefined_names") or [])[:3]) or DASH
        rows.append(
            [n, str(t["written"]), str(t.get("stubs", 0)), str(t["did_not_parse"]), str(t["no_transform"]), str(raised)]
            + [str((t.get("raised") or {}).get("NameError", 0)), str(t["timed_out"] + t["bad_output"])]
            + [str(t["ran"]), str(t["some_right"]), str(t["all_right"]), names.replace("|", "\\|")]
        )
    header = ["run", "programs", "stubs", "did not parse", "no transform", "raised", "of which NameError"]
    header += ["timed out or not a grid", "ran", "some right", "all right", "undefined names"]
    return lines + table(header, rows)


def memory_measures(found: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """What memory reads did (ARC results with ``memory_measures``, see memreason.eval.arc.memory_measures)."""
    measured = [(n, r["memory_measures"]) for n, r in found if isinstance(r.get("memory_measures"), dict)]
    if not measured:
        return []
    lines = [
        "### What memory did",
        "",
        "hit@k: some selected concept was abstracted from a task of the same concept (k: concepts selected); "
        "precision: the fraction of selected concepts that were; part hit and part coverage (1D-ARC): the "
        "selected concepts' source families share a building block with the task's family, and the fraction "
        "of its blocks they hold; blind: hit@k of as many concepts drawn at random (chance) and of the "
        "concepts with the most sources (most-sourced), what a read that ignores the puzzle scores. "
        "Reads measured: one per task and run.",
        "",
    ]
    parts = any(m.get("part_tasks") for _, m in measured)  # 1D-ARC tasks: the part measures too
    blind = any(m.get("chance_hit_at_k") is not None for _, m in measured)  # reads that recorded the blind references
    keys = ("hit_at_k", *(("chance_hit_at_k", "most_sourced_hit_at_k") if blind else ()), "precision")
    keys += ("part_hit", "part_coverage") if parts else ()
    rows = []
    for n, m in measured:
        k = m.get("selected_mean")
        cells = [n, str(m.get("tasks", 0)), DASH if k is None else f"{k:.1f}"]
        cells += [pct(scaled(m.get(key))) for key in keys]
        rows.append(cells + [str(m.get("empty", 0)), str(m.get("failed", 0))])
    header = ["run", "reads measured", "k (mean)", "hit@k %"]
    header += ["hit@k by chance %", "hit@k most-sourced %"] if blind else []
    header += ["precision %"]
    header += ["part hit %", "part coverage %"] if parts else []
    header += ["empty", "failed"]
    lines += table(header, rows)
    for n, m in measured:
        reuse = (m.get("reuse") or [])[:REUSE_SHOWN]
        if reuse:
            lines += [f"Most-selected concepts, {n} (task records whose reads selected it; of those, solved):", ""]
            lines += table(
                ["concept", "selected", "solved"],
                [[str(e["concept"]).replace("|", "\\|"), str(e["selected"]), str(e["solved"])] for e in reuse],
            )
    return lines


def _plot_curve(ax, rows: list[Row], key: str, xlabel: str) -> bool:
    found = [
        (n, {k: v for k, v in r[key].items() if v is not None})  # oracle@3 is null with 2 attempts
        for n, r, _ in rows
        if isinstance(r.get(key), dict)
    ]
    found = [(n, curve) for n, curve in found if curve]
    if not found:
        return False
    for name, curve in found:
        keys = sorted(curve, key=numeric)
        ax.plot([numeric(k) for k in keys], [100 * float(curve[k]) for k in keys], marker="o", label=name)
    whole_ticks(ax)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("score (%)")
    ax.set_ylim(0, 105)
    ax.legend(fontsize=7)
    return True


def plot_k(ax, rows: list[Row]) -> bool:
    return _plot_curve(ax, rows, "oracle_at_k", "k (attempts counted)")


def plot_retries(ax, rows: list[Row]) -> bool:
    return _plot_curve(ax, rows, "score_by_retries", "retries with feedback")


SECTIONS = (scores,)
PLOTS = (
    TOKENS_PLOT,
    Plot("ARC: score against k (oracle@k)", "arc_score_vs_k.png", plot_k),
    Plot("ARC: score against retries", "arc_score_vs_retries.png", plot_retries),
)
