"""Reports for people: Markdown tables and PNG plots of one run or of several side by side.

    python -m eval report runs/hdr-L1-... runs/episodic_cot-L1-...  --out runs/compare
    write_run_report(run_dir)        # what every run writes at its end: <run>/report.md and PNGs

A report reads only ``results.json`` files, including those written before newer keys
(failures, retries, tokens by step, cost) existed: what a file lacks is shown as "—" or
recomputed (cost, from tokens and LiteLLM's offline prices). Plots:

- accuracy by method and level (Experience-Transfer), with the std over runs;
- accuracy against tokens;
- accuracy by number of objects in the scene;
- for ARC runs (``"task": "arc"``), score against k (``oracle_at_k``) and against retries
  (``score_by_retries``), when the results carry them.

Each section and plot shows the runs whose results hold what it needs, and is left out when none
does: a run on an inductive task (ACRE, List Functions) gets the results, failures, tokens and
plot against tokens, and, from a checked program (``hypothesis_kept``, ``answered_by``), "Checked
hypotheses": how often a hypothesis passed its check and how many answers it gave.

ARC results with ``memory_measures`` also get "What memory did": hit@k and precision of the
concepts selected, and the most-selected concepts with how many of their tasks were solved.

Every accuracy and ARC score is shown with its 95% bootstrap CI over scenes, tasks or queries (the
``*_ci`` keys of ``results.json``; for the headline score of results written before those keys,
computed from the run's ``examples.jsonl``). With several runs, "Paired tests" compares each
run with the first one (or only the pair ``compare`` names) on the items both hold (scenes, ARC
tasks or an inductive task's queries), read from their ``examples.jsonl``
(:mod:`memreason.eval.paired`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from memreason.eval.harness.figures import save_figure
from memreason.files import write_text
from memreason.lm.cost import role_costs
from memreason.lm.tokens import Tokens

from .harness.errors import UsageError
from .paired import RunItems, compare_items, headline_ci, paired_table, run_items

DASH = "—"


class ReportError(ValueError):
    """A run directory without readable results (reported as one line, exit 2)."""


# -- reading ---------------------------------------------------------------------------------


def load_results(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "results.json"
    if not path.exists():
        hint = (
            " (unfinished? continue it with: python -m eval --resume {})".format(run_dir)
            if (run_dir / "config.json").exists()
            else ""
        )
        raise ReportError(f"no results.json in {run_dir}{hint}")
    try:
        results = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ReportError(f"cannot read {path}: {exc}") from None
    if not isinstance(results, dict):
        raise ReportError(f"{path} is not a results object")
    return results


def score(results: dict[str, Any]) -> tuple[float | None, float | None]:
    """(headline score in %, its std in %): accuracy for Experience-Transfer, the official score for ARC."""
    if results.get("task") == "arc" or "official_score" in results:
        value = results.get("official_score")
        return (None if value is None else 100 * value), None
    acc = results.get("accuracy") or {}
    mean, std = acc.get("mean"), acc.get("std")
    return (None if mean is None else 100 * mean), (None if std is None else 100 * std)


def role_tokens(results: dict[str, Any], role: str) -> Tokens:
    return Tokens.of((results.get("tokens") or {}).get(role))


def cost_of(results: dict[str, Any]) -> dict[str, Any]:
    """The results' cost, or one computed from their tokens when they predate it."""
    if isinstance(results.get("cost"), dict):
        return results["cost"]
    return role_costs(
        {
            "memory": (results.get("memory_lm") or results.get("lm"), role_tokens(results, "memory")),
            "task": (results.get("lm"), role_tokens(results, "task")),
        }
    )


def label(results: dict[str, Any], several_lms: bool = False) -> str:
    text = str(results.get("program", "?"))
    if results.get("level") is not None:
        text += f" L{results['level']}"
    if results.get("split"):
        text += f" {Path(str(results['split'])).name}"  # a directory split by its folder's name
    if results.get("task") not in (None, "experience_transfer", "arc"):  # an inductive task: named by it
        text += f" {results['task']}"
    if several_lms:
        text += f" ({results.get('lm', '?')})"
    return text


# -- writing ---------------------------------------------------------------------------------


def write_run_report(run_dir: Path) -> Path:
    """Write ``report.md`` and its plots into ``run_dir`` from its ``results.json``."""
    return write_report([run_dir], run_dir)


def write_report(run_dirs: list[Path], out: Path, compare: tuple[Path, Path] | None = None) -> Path:
    """One report comparing ``run_dirs`` side by side, written to ``out/report.md`` with PNGs beside it.

    Paired tests: each run against the first, on the items both hold (pairs that share none, or lack
    ``examples.jsonl``, are named and left out); ``compare`` (two of ``run_dirs``, A then B): that pair
    alone, refused with :class:`UsageError` before anything is written when it cannot be compared."""
    runs = [(Path(d), load_results(Path(d))) for d in run_dirs]
    several_lms = len({(r.get("lm"), r.get("memory_lm")) for _, r in runs}) > 1
    labels = _unique([label(r, several_lms) for _, r in runs], [d.name for d, _ in runs])
    items = [run_items(d, r, name) for (d, r), name in zip(runs, labels)]
    paired = _paired(runs, labels, items, compare)  # a refused --compare: before anything is written
    out.mkdir(parents=True, exist_ok=True)
    plots = _plots(runs, labels, out)
    title = f"Run report: {labels[0]}" if len(runs) == 1 else f"Comparison of {len(runs)} runs"
    parts = [f"# {title}", "", f"_Written {time.strftime('%Y-%m-%d %H:%M')} from results.json._", ""]
    parts += _overview(runs, labels, items)
    parts += paired
    parts += _failures(runs, labels)
    parts += _tokens(runs, labels)
    parts += _by_objects(runs, labels)
    parts += _arc(runs, labels)
    parts += _checked(runs, labels)
    if plots:
        parts += ["## Plots", ""]
        for caption, name in plots:
            parts += [f"### {caption}", "", f"![{caption}]({name})", ""]
    path = out / "report.md"
    write_text(path, "\n".join(parts).rstrip() + "\n")
    return path


def _unique(labels: list[str], names: list[str]) -> list[str]:
    return [f"{text} [{name}]" if labels.count(text) > 1 else text for text, name in zip(labels, names)]


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cells) + " |" for cells in rows]
    return lines + [""]


def _pct(value: float | None, std: float | None = None) -> str:
    if value is None:
        return DASH
    return f"{value:.1f} ± {std:.1f}" if std is not None else f"{value:.1f}"


def _ci(ci: Any) -> str:
    """A 95% CI held as fractions, ``[low, high]`` in percent."""
    if not ci:
        return DASH
    return f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def _with_ci(value: Any, ci: Any) -> str:
    """A fraction in percent, its 95% CI after it when there is one."""
    text = _pct(_scaled(value))
    return f"{text} {_ci(ci)}" if ci and value is not None else text


def _money(value: Any) -> str:
    return "unknown" if value is None else f"${value:.4f}"


def _counts(counts: dict[str, int] | None) -> str:
    if counts is None:
        return DASH
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items()) if v) or "0"


def _overview(runs, labels, items) -> list[str]:
    rows = []
    for (directory, r), name, found in zip(runs, labels, items):
        value, std = score(r)
        mem, task = role_tokens(r, "memory"), role_tokens(r, "task")
        wall = r.get("wall_seconds")
        rows.append(
            [
                name,
                str(r.get("task", "experience_transfer")),
                str(r.get("lm", DASH)),
                str(r.get("memory_lm", DASH)),
                str(r.get("examples", DASH)),
                str(r.get("runs", 1)),
                _pct(value, std),
                _ci(headline_ci(r, found)) if value is not None else DASH,
                f"{mem.total:,}",
                f"{task.total:,}",
                _money(cost_of(r).get("total")),
                DASH if wall is None else f"{wall:.0f}",
                f"`{directory}`",
            ]
        )
    header = [
        "run",
        "task",
        "task LM",
        "memory LM",
        "examples",
        "runs",
        "score % (mean ± std)",
        "95% CI",
        "memory tokens",
        "task tokens",
        "cost",
        "wall s",
        "directory",
    ]
    lines = [
        "## Results",
        "",
        "Score: accuracy for Experience-Transfer and the inductive tasks, the official score for ARC; std over "
        "repetitions (runs); 95% CI: percentile bootstrap over the scenes, tasks or queries (each averaged over the "
        "runs), 10,000 resamples, seed 0.",
        "",
    ]
    lines += _table(header, rows)
    per_run = [
        (n, r["accuracy"]["per_run"])
        for (_, r), n in zip(runs, labels)
        if len((r.get("accuracy") or {}).get("per_run") or []) > 1
    ]
    if per_run:
        lines += [
            "Accuracy of each repetition (%): "
            + "; ".join(f"{n}: " + ", ".join(f"{100 * a:.1f}" for a in acc) for n, acc in per_run),
            "",
        ]
    return lines


def _failures(runs, labels) -> list[str]:
    rows = []
    for (_, r), name in zip(runs, labels):
        failures = r.get("failures", r.get("errors"))
        retries = r.get("lm_retries", r.get("retries"))  # ARC results: "retries" is the solver's feedback depth
        retries = retries if isinstance(retries, dict) else None
        rows.append([name, str(sum((failures or {}).values())), _counts(failures), _counts(r.get("faults")), _counts(retries)])
    return [
        "## Failures and retries",
        "",
        "Failed: examples scored wrong because the LM never gave a usable answer. Faults: every failed LM "
        "answer (rate limit, server error, timeout, empty, unparseable). Retries: the faults that were asked again.",
        "",
    ] + _table(["run", "failed examples", "failures by kind", "faults by kind", "retries by kind"], rows)


def _tokens(runs, labels) -> list[str]:
    rows, steps = [], []
    for (_, r), name in zip(runs, labels):
        cost = cost_of(r)
        for role in ("memory", "task"):
            t = role_tokens(r, role)
            model = (r.get("memory_lm") or r.get("lm")) if role == "memory" else r.get("lm")
            rows.append([name, role, str(model), f"{t.prompt:,}", f"{t.completion:,}", f"{t.calls:,}", _money(cost.get(role))])
        for role, by_step in sorted((r.get("tokens_by_step") or {}).items()):
            for step, t in sorted(by_step.items()):
                t = Tokens.of(t)
                steps.append([name, role, step, f"{t.prompt:,}", f"{t.completion:,}", f"{t.calls:,}"])
    lines = [
        "## Tokens and cost",
        "",
        'Cost from LiteLLM\'s offline price list; "unknown" for local models and unlisted ones.',
        "",
    ]
    lines += _table(["run", "role", "model", "prompt", "completion", "calls", "cost"], rows)
    if steps:
        lines += ["### By program step", ""] + _table(["run", "role", "step", "prompt", "completion", "calls"], steps)
    return lines


def _by_objects(runs, labels) -> list[str]:
    found = [
        (n, r["accuracy_by_objects"], r.get("accuracy_by_objects_ci") or {})
        for (_, r), n in zip(runs, labels)
        if r.get("accuracy_by_objects")
    ]
    if not found:
        return []
    counts = sorted({k for _, by, _ in found for k in by}, key=lambda k: int(k) if str(k).isdigit() else 99)
    rows = [[n] + [_with_ci(by[k], cis.get(k)) if k in by else DASH for k in counts] for n, by, cis in found]
    return ["## Accuracy by objects in the scene (%, 95% CI)", ""] + _table(["run"] + [f"{k} objects" for k in counts], rows)


def _arc(runs, labels) -> list[str]:
    found = [(n, r) for (_, r), n in zip(runs, labels) if r.get("task") == "arc"]
    if not found:
        return []
    ks = sorted({k for _, r in found for k in (r.get("oracle_at_k") or {})}, key=_numeric)
    rows = [
        [
            n,
            _with_ci(r.get("official_score"), r.get("official_score_ci")),
            _with_ci(r.get("strict_score"), r.get("strict_score_ci")),
        ]
        + [_with_ci((r.get("oracle_at_k") or {}).get(k), (r.get("oracle_at_k_ci") or {}).get(k)) for k in ks]
        for n, r in found
    ]
    lines = ["## ARC scores (%, 95% CI over tasks)", ""]
    lines += _table(["run", "official", "strict"] + [f"oracle@{k}" for k in ks], rows)
    retries = sorted({k for _, r in found for k in (r.get("score_by_retries") or {})}, key=_numeric)
    if retries:
        rows = [
            [n]
            + [_with_ci((r.get("score_by_retries") or {}).get(k), (r.get("score_by_retries_ci") or {}).get(k)) for k in retries]
            for n, r in found
        ]
        lines += ["### Score after each number of retries (%, 95% CI)", ""] + _table(
            ["run"] + [f"{k} retries" for k in retries], rows
        )
    return lines + _unchanged(found) + _programs(found) + _memory_measures(found)


def _unchanged(found: list[tuple[str, dict[str, Any]]]) -> list[str]:
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


def _programs(found: list[tuple[str, dict[str, Any]]]) -> list[str]:
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
    return lines + _table(header, rows)


def _checked(runs, labels) -> list[str]:
    """What a checked program did on an inductive task (results with ``hypothesis_kept`` or ``answered_by``)."""
    found = [(n, r) for (_, r), n in zip(runs, labels) if r.get("hypothesis_kept") is not None or r.get("answered_by")]
    if not found:
        return []
    sources = list(dict.fromkeys(["hypothesis", "reasoner", *sorted(s for _, r in found for s in r.get("answered_by") or {})]))
    rows = [
        [n, _pct(_scaled(r.get("hypothesis_kept"))), _pct(_scaled(r.get("hypothesis_narrowed")))]
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
    ] + _table(["run", "hypothesis kept %", "narrowed in code %"] + [f"answered by {s}" for s in sources], rows)


def _paired(runs, labels, items: list[RunItems | None], compare: tuple[Path, Path] | None) -> list[str]:
    """The "Paired tests" section: each run against the first, or the pair ``compare`` names (refused in one line)."""
    if compare is not None:
        where = [_index(runs, given) for given in compare]
        if where[0] == where[1]:
            raise UsageError("--compare needs two different runs")
        for i in where:
            if items[i] is None:
                raise UsageError(f"--compare: {runs[i][0]} has no examples.jsonl (a paired test needs each item's record)")
        pairs = [(where[0], where[1])]
    else:
        pairs = [(i, 0) for i in range(1, len(runs))]
    entries, skipped = [], []
    for i, j in pairs:
        a, b = items[i], items[j]
        if a is None or b is None:
            skipped.append(
                f"{labels[i]} (no examples.jsonl)" if a is None else f"{labels[i]} ({labels[j]} has no examples.jsonl)"
            )
            continue
        try:
            test = compare_items(a, b)
        except UsageError:
            if compare is not None:
                raise
            skipped.append(f"{labels[i]} (no {a.unit} in common)" if a.unit == b.unit else f"{labels[i]} (other items: {a.unit})")
            continue
        entries.append({"a": labels[i], "b": labels[j], "unit": a.unit, **test.as_dict()})
    if not entries and not skipped:
        return []
    against = "the pair asked for" if compare is not None else f"each run against the first ({labels[0]})"
    lines = ["## Paired tests", "", f"Paired tests: {against}.", ""]
    for unit in dict.fromkeys(e["unit"] for e in entries):
        lines += paired_table([e for e in entries if e["unit"] == unit], unit) + [""]
    if skipped:
        lines += ["Not compared with the first run: " + "; ".join(skipped) + ".", ""]
    return lines


def _index(runs, given: Path) -> int:
    for i, (directory, _) in enumerate(runs):
        if directory.resolve() == Path(given).resolve():
            return i
    raise UsageError(f"--compare {given}: not one of the report's runs ({', '.join(str(d) for d, _ in runs)})")


REUSE_SHOWN = 10  # the most-selected concepts a report lists per run


def _memory_measures(found: list[tuple[str, dict[str, Any]]]) -> list[str]:
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
        cells += [_pct(_scaled(m.get(key))) for key in keys]
        rows.append(cells + [str(m.get("empty", 0)), str(m.get("failed", 0))])
    header = ["run", "reads measured", "k (mean)", "hit@k %"]
    header += ["hit@k by chance %", "hit@k most-sourced %"] if blind else []
    header += ["precision %"]
    header += ["part hit %", "part coverage %"] if parts else []
    header += ["empty", "failed"]
    lines += _table(header, rows)
    for n, m in measured:
        reuse = (m.get("reuse") or [])[:REUSE_SHOWN]
        if reuse:
            lines += [f"Most-selected concepts, {n} (task records whose reads selected it; of those, solved):", ""]
            lines += _table(
                ["concept", "selected", "solved"],
                [[str(e["concept"]).replace("|", "\\|"), str(e["selected"]), str(e["solved"])] for e in reuse],
            )
    return lines


def _scaled(value: Any) -> float | None:
    return None if value is None else 100 * float(value)


def _numeric(key: Any) -> float:
    try:
        return float(key)
    except (TypeError, ValueError):
        return float("inf")


# -- plots -------------------------------------------------------------------------------------


def _plots(runs, labels, out: Path) -> list[tuple[str, str]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    for caption, name, draw in (
        ("Accuracy by method and level", "accuracy_by_method.png", _plot_accuracy),
        ("Accuracy against tokens", "accuracy_vs_tokens.png", _plot_tokens),
        ("Accuracy by objects in the scene", "accuracy_by_objects.png", _plot_objects),
        ("ARC: score against k (oracle@k)", "arc_score_vs_k.png", _plot_arc_k),
        ("ARC: score against retries", "arc_score_vs_retries.png", _plot_arc_retries),
    ):
        fig, ax = plt.subplots(figsize=(7, 4.2))
        try:
            if draw(ax, runs, labels):
                ax.grid(alpha=0.3)
                fig.tight_layout()
                save_figure(fig, out / name, dpi=110)
                made.append((caption, name))
        finally:
            plt.close(fig)
    return made


def _et(runs, labels):
    return [
        (n, r)
        for (_, r), n in zip(runs, labels)
        if r.get("task", "experience_transfer") == "experience_transfer" and r.get("accuracy")
    ]


def _plot_accuracy(ax, runs, labels) -> bool:
    found = _et(runs, labels)
    if not found:
        return False
    methods = list(dict.fromkeys(_method(n, r) for n, r in found))
    levels = sorted({r.get("level") for _, r in found}, key=lambda v: (v is None, v))
    width = 0.8 / max(1, len(methods))
    for i, method in enumerate(methods):
        xs, ys, errs = [], [], []
        for j, level in enumerate(levels):
            match = [r for n, r in found if _method(n, r) == method and r.get("level") == level]
            if match:
                value, std = score(match[0])
                xs.append(j + (i - (len(methods) - 1) / 2) * width)
                ys.append(value)
                errs.append(std or 0)
        bars = ax.bar(xs, ys, width, yerr=errs, capsize=3, label=method)
        ax.bar_label(bars, fmt="%.1f", fontsize=7, padding=2)
    ax.set_xticks(range(len(levels)), [f"Level {v}" if v is not None else "—" for v in levels])
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 105)
    ax.legend(fontsize=7, loc="upper right")
    return True


def _method(name: str, results: dict[str, Any]) -> str:
    level = results.get("level")
    return name.replace(f" L{level}", "", 1) if level is not None else name


def _plot_tokens(ax, runs, labels) -> bool:
    points = []
    for (_, r), name in zip(runs, labels):
        value, _ = score(r)
        tokens = (role_tokens(r, "memory").total + role_tokens(r, "task").total) / max(1, int(r.get("runs") or 1))
        if value is not None and tokens > 0:
            points.append((tokens, value, name))
    if not points:
        return False
    for tokens, value, name in points:
        ax.scatter([tokens], [value], s=40)
        ax.annotate(name, (tokens, value), fontsize=7, xytext=(4, 4), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_xlabel("tokens per repetition (memory + task, prompt + completion)")
    ax.set_ylabel("score (%)")
    ax.set_ylim(0, 105)
    return True


def _plot_objects(ax, runs, labels) -> bool:
    found = [(n, r["accuracy_by_objects"]) for (_, r), n in zip(runs, labels) if r.get("accuracy_by_objects")]
    if not found:
        return False
    for name, by in found:
        keys = sorted(by, key=_numeric)
        ax.plot([_numeric(k) for k in keys], [100 * by[k] for k in keys], marker="o", label=name)
    _whole_ticks(ax)
    ax.set_xlabel("objects in the scene")
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 105)
    ax.legend(fontsize=7)
    return True


def _whole_ticks(ax) -> None:
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _plot_curve(ax, runs, labels, key: str, xlabel: str) -> bool:
    found = [
        (n, {k: v for k, v in r[key].items() if v is not None})  # oracle@3 is null with 2 attempts
        for (_, r), n in zip(runs, labels)
        if r.get("task") == "arc" and isinstance(r.get(key), dict)
    ]
    found = [(n, curve) for n, curve in found if curve]
    if not found:
        return False
    for name, curve in found:
        keys = sorted(curve, key=_numeric)
        ax.plot([_numeric(k) for k in keys], [100 * float(curve[k]) for k in keys], marker="o", label=name)
    _whole_ticks(ax)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("score (%)")
    ax.set_ylim(0, 105)
    ax.legend(fontsize=7)
    return True


def _plot_arc_k(ax, runs, labels) -> bool:
    return _plot_curve(ax, runs, labels, "oracle_at_k", "k (attempts counted)")


def _plot_arc_retries(ax, runs, labels) -> bool:
    return _plot_curve(ax, runs, labels, "score_by_retries", "retries with feedback")
