"""ARC results as Markdown tables shaped like the ArcMemo paper's Tables 1-4.

One row per (retry depth, setting): oracle@1, oracle@2 (official), oracle@3 with the
standard deviation over runs in parentheses (as in Tables 2-4; Table 1 is the k = 1, 2
columns) and the 95% bootstrap CI over tasks in square brackets (results that carry it),
then the strict score (Table 5's official column), and tokens by role; when some
results measured their memory reads (:mod:`memreason.eval.arc.memory_measures`), two more
columns: hit@k and precision of the concepts selected (the same at every depth), with hit@k's
blind references beside it (by chance, most-sourced) when the reads recorded them.
``sampling_table`` is shaped like Table 4, for results that carry the sampling protocol's
scores: each sample's score (run0, run1, ... with one attempt per run), then oracle@k over
the pool of all samples with the standard deviation over its k-subsets in brackets; with
retries, one row per retry depth and setting (a ``retries`` column), as the main table.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..stats import RESAMPLES, SEED


def _pct(mean: float | None, std: float | None = None, ci: Sequence[float] | None = None) -> str:
    if mean is None:
        return "-"
    text = f"{100 * mean:.2f}" + (f" ({100 * std:.2f})" if std is not None else "")
    return text + (f" [{100 * ci[0]:.2f}, {100 * ci[1]:.2f}]" if ci else "")


def setting(results: dict[str, Any]) -> str:
    config = results.get("config", {})
    extras = []
    if config.get("continual_every"):
        extras.append(f"continual every {config['continual_every']}")
    if config.get("top_k"):
        extras.append(f"top-{config['top_k']}")
    if config.get("retry_mode") == "passes":
        extras.append("retry passes")
    if config.get("reselect"):
        extras.append("reselect")
    return results["program"] + (f" ({', '.join(extras)})" if extras else "")


def markdown_table(rows: Sequence[dict[str, Any]]) -> str:
    """Oracle@k by retry depth for each results dict (``results.json`` of ``evaluate_arc``)."""
    header = [
        "retry",
        "setting",
        "k=1",
        "k=2 (official)",
        "k=3",
        "strict",
        "tasks",
        "runs",
        "memory tokens",
        "task tokens",
        "wall s",
    ]
    measured = any(_measures(r) for r in rows)
    blind = any(_measures(r).get("chance_hit_at_k") is not None for r in rows)  # reads that recorded the references
    keys = ("hit_at_k", *(("chance_hit_at_k", "most_sourced_hit_at_k") if blind else ()), "precision")
    if measured:
        header += ["hit@k", *(["hit@k by chance", "hit@k most-sourced"] if blind else []), "precision"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    depth = max(r["retries"] for r in rows)
    for retry in range(depth + 1):
        for r in rows:
            level = r["by_retries"].get(str(retry))
            if level is None:
                continue
            oracle, std = level["oracle_at_k"], level["oracle_at_k_std"]
            cis = level.get("oracle_at_k_ci") or {}
            mem, task = r["tokens"]["memory"], r["tokens"]["task"]
            cells = [str(retry), setting(r)]
            cells += [_pct(oracle[k], std[k] if r["runs"] > 1 else None, cis.get(k)) for k in ("1", "2", "3")]
            cells += [
                _pct(level["strict_score"], None, level.get("strict_score_ci")),
                str(r["examples"]),
                str(r["runs"]),
                f"{mem['total']:,}",
                f"{task['total']:,}",
                f"{r['wall_seconds']:.0f}",
            ]
            if measured:
                cells += [_pct(_measures(r).get(key)) for key in keys]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _measures(results: dict[str, Any]) -> dict[str, Any]:
    """The memory measures of a results dict, when its reads were measured (older results: none)."""
    block = results.get("memory_measures") or {}
    return block if block.get("tasks") else {}


def sampling_table(rows: Sequence[dict[str, Any]]) -> str:
    """Per-sample scores and pooled oracle@k (std over k-subsets) for each results dict with ``sampling``
    (older results without it are left out); when some results have retries, one row per retry depth
    and setting, each from ``by_retries[r]["sampling"]`` (results from before it existed: their last depth only)."""
    depths = max((r.get("retries") or 0 for r in rows if r.get("sampling")), default=0)
    header = ["setting", "pool", *(["retries"] if depths else []), "samples", "pooled k=1", "pooled k=2", "pooled k=3"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for depth in range(depths + 1):
        for r in rows:
            block = _sampling_at(r, depth) if depths else r.get("sampling")
            if not block:
                continue
            cells = [setting(r), str(block["pool"]), *([str(depth)] if depths else [])]
            cells.append(", ".join(_pct(v) for v in block["samples"]) or "-")
            oracle = [block["oracle_at_k"][k] for k in ("1", "2", "3")]
            cells += [_pct(v["mean"], v["std"]) if v else "-" for v in oracle]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _sampling_at(results: dict[str, Any], depth: int) -> dict[str, Any] | None:
    """The sampling block of ``results`` after ``depth`` retries: its own at its last depth, else ``by_retries``'."""
    if not results.get("sampling") or depth > (results.get("retries") or 0):
        return None
    level = (results.get("by_retries") or {}).get(str(depth)) or {}
    return level.get("sampling") or (results["sampling"] if depth == (results.get("retries") or 0) else None)


CI_NOTE = (
    f"In parentheses: the std over runs; in brackets: the 95% CI, a percentile bootstrap over the tasks, each task's "
    f"score averaged over the runs ({RESAMPLES:,} resamples, seed {SEED})."
)


def tables(rows: Sequence[dict[str, Any]]) -> str:
    """:func:`markdown_table` (with a line on its intervals when some row has them), then :func:`sampling_table`
    when some row pools more than one sample."""
    text = markdown_table(rows)
    if any(level.get("oracle_at_k_ci") for r in rows for level in (r.get("by_retries") or {}).values()):
        text += "\n\n" + CI_NOTE
    if any((r.get("sampling") or {}).get("pool", 0) > 1 for r in rows):
        text += "\n\n" + sampling_table(rows)
    return text
