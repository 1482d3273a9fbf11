"""Reports for people: Markdown tables and PNG plots of one run or of several side by side.

    python -m eval report runs/hdr-L1-... runs/episodic_cot-L1-...  --out runs/compare
    write_run_report(run_dir)        # what every run writes at its end: <run>/report.md and PNGs

A report reads only ``results.json`` files, including those written before newer keys
(failures, retries, tokens by step, cost) existed: what a file lacks is shown as "—" or
recomputed (cost, from tokens and LiteLLM's offline prices). Plots:

- accuracy by method and level (Experience-Transfer), with the std over runs;
- accuracy against tokens;
- accuracy by number of objects in the scene;
- for ARC runs, score against k (``oracle_at_k``) and against retries
  (``score_by_retries``), when the results carry them.

Every run gets the results, paired tests, failures, tokens and the plot against tokens; the rest are
its task's (:meth:`memreason.eval.tasks.Task.report_sections`, ``report_plots``, found with
:func:`memreason.eval.tasks.task_for`), each shown once for all the runs whose task lists it, and left out
when none holds what it needs: a problem task's run (ACRE, List Functions, one of your own) from a checked
program (``hypothesis_kept``, ``answered_by``) gets "Checked hypotheses": how often a hypothesis passed its
check and how many answers it gave.

Every run's manifest (``results.json``'s ``manifest``: the models that answered by role, their fingerprints, the
settings sent, the versions, seeds and instruction digests; :mod:`memreason.eval.harness.manifest`) is shown under
"Manifest"; with several runs, each is compared with the first one's and a row that differs says in what
(:func:`manifest_notes` gives the same for the command line).

ARC results with ``memory_measures`` also get "What memory did": hit@k and precision of the
concepts selected, and the most-selected concepts with how many of their tasks were solved.

Every accuracy and ARC score is shown with its 95% CI over scenes, tasks or queries (Wilson's where every item is right or wrong, else a percentile bootstrap) (the
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
from memreason.installed import command
from memreason.lm.cost import role_costs
from memreason.lm.tokens import Tokens

from . import report_parts
from .harness.errors import UsageError
from .harness.manifest import manifest_differences
from .paired import RunItems, compare_items, headline_ci, paired_table, run_items
from .report_parts import DASH, Row, ci, pct, role_tokens, table
from .stats import METHOD
from .tasks.registry import TASKS, task_for


class ReportError(ValueError):
    """A run directory without readable results (reported as one line, exit 2)."""


# -- reading ---------------------------------------------------------------------------------


def load_results(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "results.json"
    if not path.exists():
        hint = (
            f" (unfinished? continue it with: {command('eval')} --resume {run_dir})" if (run_dir / "config.json").exists() else ""
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
    """(headline score in %, its std in %): the run's task's headline (accuracy; ARC: the official score)."""
    return report_parts.score(task_for(results), results)


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
    """A run's name in the report: its task's (:meth:`memreason.eval.tasks.Task.report_label`), and its LM when the
    report's runs used several."""
    text = task_for(results).report_label(results)
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
    parts += _manifests(runs, labels)
    for section, rows in _by_task(runs, labels, lambda task: task.report_sections()):
        parts += section(rows)
    if plots:
        parts += ["## Plots", ""]
        for caption, name in plots:
            parts += [f"### {caption}", "", f"![{caption}]({name})", ""]
    path = out / "report.md"
    write_text(path, "\n".join(parts).rstrip() + "\n")
    return path


def _unique(labels: list[str], names: list[str]) -> list[str]:
    return [f"{text} [{name}]" if labels.count(text) > 1 else text for text, name in zip(labels, names)]


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
                task_for(r).name,
                str(r.get("lm", DASH)),
                str(r.get("memory_lm", DASH)),
                str(r.get("examples", DASH)),
                str(r.get("runs", 1)),
                pct(value, std),
                ci(headline_ci(r, found)) if value is not None else DASH,
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
        "repetitions (runs); 95% CI over the scenes, tasks or queries (each averaged over the runs): " + METHOD + ".",
        "",
    ]
    lines += table(header, rows)
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
    ] + table(["run", "failed examples", "failures by kind", "faults by kind", "retries by kind"], rows)


def _tokens(runs, labels) -> list[str]:
    rows, steps = [], []
    reasons = any(role_tokens(r, role).reasoning for _, r in runs for role in ("memory", "task"))

    def counts(t: Tokens) -> list[str]:  # completion tokens, split into reasoning and visible where a model reasoned
        split = [f"{t.reasoning:,}", f"{t.visible:,}"] if reasons else []
        return [f"{t.prompt:,}", f"{t.completion:,}", *split, f"{t.calls:,}"]

    for (_, r), name in zip(runs, labels):
        cost = cost_of(r)
        for role in ("memory", "task"):
            t = role_tokens(r, role)
            model = (r.get("memory_lm") or r.get("lm")) if role == "memory" else r.get("lm")
            spent = [_money((cost.get("reasoning") or {}).get(role, 0.0))] if reasons else []
            rows.append([name, role, str(model), *counts(t), _money(cost.get(role)), *spent])
        if r.get("verification"):  # verified writes: the probes' calls, counted apart from the solver's and writer's
            t = Tokens.of(r["verification"].get("tokens"))
            rows.append([name, "verification", str(r.get("lm")), *counts(t), DASH, *([DASH] if reasons else [])])
        for role, by_step in sorted((r.get("tokens_by_step") or {}).items()):
            for step, t in sorted(by_step.items()):
                steps.append([name, role, step, *counts(Tokens.of(t))])
    split = ["of which reasoning", "visible"] if reasons else []
    lines = [
        "## Tokens and cost",
        "",
        'Cost from LiteLLM\'s offline price list; "unknown" for local models and unlisted ones. Verification: the '
        "probes answered to verify a stream run's writes (--verify), counted apart from the memory and task roles."
        + (
            " Completion tokens are every token the answers took; a reasoning model's reasoning tokens are counted "
            "apart (hidden, or shown apart from the answer), and the visible answer took the rest."
            if reasons
            else ""
        ),
        "",
    ]
    lines += table(
        ["run", "role", "model", "prompt", "completion", *split, "calls", "cost", *(["reasoning cost"] if reasons else [])], rows
    )
    if steps:
        lines += ["### By program step", ""] + table(["run", "role", "step", "prompt", "completion", *split, "calls"], steps)
    return lines


def manifest_notes(run_dirs: list[Path]) -> list[str]:
    """One line for each run whose manifest differs from the first run's, saying in what (none when all agree)."""
    runs = [(Path(d), load_results(Path(d))) for d in run_dirs]
    first = runs[0][1].get("manifest")
    return [
        f"{directory}: {'; '.join(found)}"
        for directory, r in runs[1:]
        if (found := manifest_differences(first, r.get("manifest")))
    ]


def _manifests(runs, labels) -> list[str]:
    """The "Manifest" section: one run's manifest, or each run's against the first run's."""
    lines = [
        "## Manifest",
        "",
        "Which models answered (the responses' own `model` field, with their calls) and their `system_fingerprint`, "
        "the settings each role's LM sends and what the program sent on top of them, the versions, the seeds and a "
        "digest of each predictor's instructions.",
        "",
    ]
    rows = []
    for (_, r), name in zip(runs, labels):
        manifest = r.get("manifest")
        for role, entry in sorted(((manifest or {}).get("roles") or {}).items()):
            rows.append(
                [
                    name,
                    role,
                    f"`{entry.get('asked', DASH)}`",
                    _counted(entry.get("answered")),
                    _counted(entry.get("fingerprints")),
                    _settings(entry.get("settings")),
                    _settings(entry.get("sent")),
                ]
            )
        if not manifest:
            rows.append([name, DASH, DASH, "no manifest (written before runs recorded one)", DASH, DASH, DASH])
    lines += table(["run", "role", "asked for", "answered by (calls)", "fingerprints", "settings", "sent by the program"], rows)
    first = runs[0][1].get("manifest")
    if first:
        versions = ", ".join(f"{k} {v or 'not installed'}" for k, v in (first.get("versions") or {}).items())
        lines += [f"Versions ({labels[0]}): {versions}.", ""]
    if len(runs) == 1:
        if first:
            seeds = ", ".join(f"{k} {v}" for k, v in (first.get("seeds") or {}).items()) or "none"
            digests = ", ".join(f"`{k}` {v}" for k, v in (first.get("instructions") or {}).items()) or "none"
            lines += [f"Seeds: {seeds}. Instructions (SHA-256, first 16 digits): {digests}.", ""]
        return lines
    flagged = [
        [name, "; ".join(found)]
        for (_, r), name in zip(runs[1:], labels[1:])
        if (found := manifest_differences(first, r.get("manifest")))
    ]
    if not flagged:
        return lines + [f"Every run's manifest agrees with the first run's ({labels[0]}).", ""]
    lines += [
        f"**Manifests that differ** from the first run's ({labels[0]}): models, fingerprints, settings, versions, "
        "seeds both name, instructions of predictors both hold.",
        "",
    ]
    return lines + table(["run", "differs in"], flagged)


def _counted(counts: dict[str, int] | None) -> str:
    if not counts:
        return DASH
    return ", ".join(f"`{k}` ({v:,})" for k, v in sorted(counts.items()))


def _settings(settings: dict[str, Any] | None) -> str:
    if not settings:
        return DASH
    return ", ".join(f"{k} {'/'.join(map(str, v)) if isinstance(v, list) else v}" for k, v in sorted(settings.items()))


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
        entries.append({"a": labels[i], "b": labels[j], "unit": a.unit, "task": a.task, **test.as_dict()})
    if not entries and not skipped:
        return []
    against = "the pair asked for" if compare is not None else f"each run against the first ({labels[0]})"
    lines = ["## Paired tests", "", f"Paired tests: {against}.", ""]
    for unit in dict.fromkeys(e["unit"] for e in entries):
        same = [e for e in entries if e["unit"] == unit]
        lines += paired_table(same, same[0]["task"]) + [""]
    if skipped:
        lines += ["Not compared with the first run: " + "; ".join(skipped) + ".", ""]
    return lines


def _index(runs, given: Path) -> int:
    for i, (directory, _) in enumerate(runs):
        if directory.resolve() == Path(given).resolve():
            return i
    raise UsageError(f"--compare {given}: not one of the report's runs ({', '.join(str(d) for d, _ in runs)})")


# -- plots -------------------------------------------------------------------------------------


def _by_task(runs, labels, pieces) -> list[tuple[Any, list[Row]]]:
    """Each section or plot the runs' tasks list (``pieces(task)``), once, with the rows of the runs whose task lists
    it: in the order the tasks registered (a task not registered here: after them), each task's in its own order."""
    rows = [Row(n, r, task_for(r)) for (_, r), n in zip(runs, labels)]
    registered = list(TASKS.values())
    tasks = sorted(
        {id(row.task): row.task for row in rows}.values(),
        key=lambda t: registered.index(t) if t in registered else len(registered),
    )
    found: dict[Any, list[Row]] = {piece: [] for task in tasks for piece in pieces(task)}
    for row in rows:
        for piece in pieces(row.task):
            found[piece].append(row)
    return list(found.items())


def _plots(runs, labels, out: Path) -> list[tuple[str, str]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    for plot, rows in _by_task(runs, labels, lambda task: task.report_plots()):
        fig, ax = plt.subplots(figsize=(7, 4.2))
        try:
            if plot.draw(ax, rows):
                ax.grid(alpha=0.3)
                fig.tight_layout()
                save_figure(fig, out / plot.file, dpi=110)
                made.append((plot.caption, plot.file))
        finally:
            plt.close(fig)
    return made
