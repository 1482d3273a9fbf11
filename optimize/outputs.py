"""What a study leaves for people and for ``python -m eval``: best configuration(s), state, plots, summary.

<study dir>/best.json        the best trial (single objective) or the most accurate front trial
<study dir>/pareto.json      every Pareto-front trial (accuracy up, tokens down), two-objective studies
<study dir>/best_program.json  the best configuration's DSPy state (its demos), for --program-state
<study dir>/history.png      every trial's accuracy by trial number, and the best so far
<study dir>/pareto.png       accuracy against tokens, the front marked
<study dir>/summary.md       the study in a table

python -m eval hdr --level 1 --config best.json --program-state best_program.json
python -m eval fewshot --task rg:puzzle24 --batch 5 --config best.json     # a stream run's options from best.json's "options"
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from memreason.eval.harness.figures import save_figure
from memreason.eval.harness.runs import write_json
from memreason.files import write_text
from memreason.lm.redact import redact

from .space import run_options, split_params


def trial_row(trial: FrozenTrial) -> dict[str, Any]:
    attrs = trial.user_attrs
    return {
        "number": trial.number,
        "state": trial.state.name,
        "params": dict(trial.params),
        "accuracy": attrs.get("accuracy"),
        "tokens": attrs.get("tokens"),
        "examples": attrs.get("examples"),
        "memory_cache": attrs.get("memory_cache"),
        "wall_seconds": attrs.get("wall_seconds"),
        "config_dir": attrs.get("config_dir"),
    }


def best_trials(study: optuna.Study) -> list[FrozenTrial]:
    """The best trial, or the Pareto front sorted by accuracy (best first); none when nothing finished."""
    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if not complete:
        return []
    if len(study.directions) == 1:
        return [study.best_trial]
    return sorted(study.best_trials, key=lambda t: (-t.values[0], t.values[1], t.number))


def config_of(trial: FrozenTrial, setup: dict[str, Any]) -> dict[str, Any]:
    """A best.json: what ``python -m eval --config`` reads (``knobs``), and where it came from."""
    knobs, demos = split_params(trial.params)
    options = run_options(trial.params)
    return {
        **setup,
        "knobs": knobs,
        **({"options": options} if options else {}),  # a stream run's options: python -m eval's flags of these names
        "demos": demos,
        "trial": trial.number,
        "accuracy": trial.user_attrs.get("accuracy"),
        "tokens": trial.user_attrs.get("tokens"),
        "examples": trial.user_attrs.get("examples"),
        "config_dir": trial.user_attrs.get("config_dir"),
    }


def write_outputs(study: optuna.Study, study_dir: Path, setup: dict[str, Any]) -> dict[str, Path]:
    study_dir = Path(study_dir)
    written: dict[str, Path] = {}
    best = best_trials(study)
    if best:
        write_json(study_dir / "best.json", config_of(best[0], setup))
        written["best"] = study_dir / "best.json"
        state = Path(best[0].user_attrs.get("config_dir", "")) / "program.json"
        if state.is_file():
            shutil.copyfile(state, study_dir / "best_program.json")
            written["state"] = study_dir / "best_program.json"
        if len(study.directions) > 1:
            write_json(study_dir / "pareto.json", [config_of(t, setup) for t in best])
            written["pareto"] = study_dir / "pareto.json"
    written.update(plot(study, study_dir))
    write_text(study_dir / "summary.md", redact(summary(study, setup, best)))
    written["summary"] = study_dir / "summary.md"
    return written


def summary(study: optuna.Study, setup: dict[str, Any], best: list[FrozenTrial]) -> str:
    trials = study.get_trials(deepcopy=False)
    counts = {s.name: sum(t.state == s for t in trials) for s in TrialState if any(t.state == s for t in trials)}
    lines = [
        f"# Study {study.study_name}",
        "",
        f"Program `{setup.get('program')}`, "
        + ", ".join(f"{k} {v}" for k, v in setup.items() if k != "program" and v not in (None, {}, [])),
        "",
        "Trials: " + ", ".join(f"{n} {s.lower()}" for s, n in counts.items()),
        "",
    ]
    if best:
        title = "Best configuration" if len(best) == 1 else f"Pareto front ({len(best)} trials)"
        lines += [f"## {title}", ""]
        for t in best:
            lines.append(
                f"- trial {t.number}: {_params(t.params)}: accuracy {_pct(t.user_attrs.get('accuracy'))}, "
                f"{t.user_attrs.get('tokens', 0):,} tokens"
            )
        lines.append("")
    lines += [
        "## Trials",
        "",
        "| # | state | parameters | accuracy | examples | tokens | memory | wall s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for t in trials:
        r = trial_row(t)
        tokens = "" if r["tokens"] is None else f"{r['tokens']:,}"
        lines.append(
            f"| {t.number} | {t.state.name.lower()} | {_params(t.params)} | {_pct(r['accuracy'])} | "
            f"{r['examples'] or ''} | {tokens} | {r['memory_cache'] or ''} | {r['wall_seconds'] or ''} |"
        )
    lines += ["", "Plots: `history.png` (accuracy by trial), `pareto.png` (accuracy against tokens).", ""]
    return "\n".join(lines)


def _params(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())


def _pct(value) -> str:
    return "" if value is None else f"{100 * value:.1f}%"


def plot(study: optuna.Study, study_dir: Path) -> dict[str, Path]:
    """history.png and pareto.png with matplotlib (Optuna's own plots need plotly)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [trial_row(t) for t in study.get_trials(deepcopy=False) if t.user_attrs.get("accuracy") is not None]
    if not rows:
        return {}
    out = {}
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for state, marker in (("COMPLETE", "o"), ("PRUNED", "x")):
        pick = [r for r in rows if r["state"] == state]
        ax.scatter([r["number"] for r in pick], [100 * r["accuracy"] for r in pick], marker=marker, label=state.lower())
    complete = sorted((r for r in rows if r["state"] == "COMPLETE"), key=lambda r: r["number"])
    best, xs, ys = -1.0, [], []
    for r in complete:
        best = max(best, r["accuracy"])
        xs.append(r["number"])
        ys.append(100 * best)
    if xs:
        ax.step(xs, ys, where="post", label="best so far")
    ax.set_xlabel("trial")
    ax.set_ylabel("accuracy % (pruned: on the scenes answered)")
    ax.set_title(f"{study.study_name}: history")
    ax.legend(fontsize="small")
    fig.tight_layout()
    save_figure(fig, study_dir / "history.png", dpi=110)
    plt.close(fig)
    out["history"] = study_dir / "history.png"

    if complete:
        front = {t.number for t in best_trials(study)} if len(study.directions) > 1 else set()
        if not front:  # single objective: the front of (accuracy, tokens) among complete trials, for the picture
            front = {
                r["number"]
                for r in complete
                if not any(
                    o["accuracy"] >= r["accuracy"]
                    and o["tokens"] <= r["tokens"]
                    and (o["accuracy"], -o["tokens"]) != (r["accuracy"], -r["tokens"])
                    for o in complete
                )
            }
        fig, ax = plt.subplots(figsize=(6, 3.5))
        ax.scatter([r["tokens"] for r in complete], [100 * r["accuracy"] for r in complete], c="lightgray", label="trials")
        on = sorted((r for r in complete if r["number"] in front), key=lambda r: r["tokens"])
        ax.plot([r["tokens"] for r in on], [100 * r["accuracy"] for r in on], "o-", label="Pareto front")
        for r in on:
            ax.annotate(_params(r["params"]), (r["tokens"], 100 * r["accuracy"]), fontsize=6)
        ax.set_xlabel("tokens (memory + task)")
        ax.set_ylabel("accuracy %")
        ax.set_title(f"{study.study_name}: accuracy against tokens")
        ax.legend(fontsize="small")
        fig.tight_layout()
        save_figure(fig, study_dir / "pareto.png", dpi=110)
        plt.close(fig)
        out["pareto"] = study_dir / "pareto.png"
    return out
