"""What ``python -m eval show`` prints of an Experience-Transfer run
(:class:`memreason.eval.experience_transfer.task.ExperienceTransfer` gives it): the level in the header, the
memory the program answered from, a line per scene, and a scene in full: its description, the path of its PNG
(drawn on demand into ``RUN_DIR/scenes/``), the per-object labels against the true ones, and the memory used.
On a level with masked combinations (Level 3), an object of one (no episode shows it) is marked "masked", in the
scene lines (how many a scene holds) and in the per-object labels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich import box
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from memreason.installed import command
from memreason.programs import PROGRAMS

from ..show_parts import mark, memory_record

if TYPE_CHECKING:
    from ..show import Run

__all__ = ["example", "memory_parts", "overview", "setting"]


def setting(config: dict[str, Any]) -> str:
    """The header's line on what the run ran."""
    c = config
    return (
        f"level {c.get('level')}, {c.get('modality', 'text')} modality, seed {c.get('seed', 0)}"
        + (f", rules {c['rules']}" if c.get("rules") else ", rules: the paper's Table 1")
        + (f", knobs {json.dumps(c['knobs'])}" if c.get("knobs") else "")
    )


def data(run: Run):
    """The Experience-Transfer level the run answered (rebuilt from its config: seeded), once per run."""
    if "level" not in run.memo:
        from memreason.datasets.experience_transfer import load_rules, make_level

        c = run.config
        run.memo["level"] = make_level(int(c["level"]), seed=int(c.get("seed") or 0), rules=load_rules(c.get("rules")))
    return run.memo["level"]


def find_scene(run: Run, scene_id: str):
    return next((s for s in data(run).test if s.id == scene_id), None)


def reads(run: Run) -> tuple[bool, bool]:
    """(episodic, semantic): what the program's reasoner reads."""
    if "reads" not in run.memo:
        try:
            reasoner = PROGRAMS[run.program].build(**(run.config.get("knobs") or {})).reasoner
            run.memo["reads"] = bool(reasoner.episodic), bool(reasoner.semantic)
        except Exception:
            run.memo["reads"] = True, True
    return run.memo["reads"]


def memory_parts(run: Run, r: int) -> list[Any]:
    """The memory of repetition ``r``: the raw episodes the reasoner reads, and the memory record."""
    parts: list[Any] = []
    record = run.memory(r)
    episodic, semantic = reads(run)
    if episodic:
        parts.append(Text(f"raw episodes: all {len(data(run).episodes)} labelled episodes go into every prompt"))
    if record is None:
        parts.append(Text("no memory record (the run had not built it)"))
    else:
        parts.extend(memory_record(record, semantic))
    return parts


def masks(run: Run, scene) -> list[bool]:
    """Whether each object of ``scene`` is of a combination the level's mask hides from the episodes."""
    from .masked import object_masks

    return object_masks(scene, data(run))


def overview(run: Run, records: list[dict[str, Any]]) -> Table:
    """One line per scene: objects (and how many are of masked combinations), target, prediction, tokens, error."""
    table = Table("run", "scene", "objects", "target", "prediction", "tokens", "error", box=box.SIMPLE_HEAD)
    for r in records:
        tokens = r.get("tokens") or {}
        scene = find_scene(run, str(r["id"])) if data(run).masked else None
        hidden = sum(masks(run, scene)) if scene is not None else 0
        table.add_row(
            str(r["run"]),
            str(r["id"]),
            str(r.get("objects", "")) + (f" ({hidden} masked)" if hidden else ""),
            str(r.get("target")),
            mark(run.correct(r), str(r.get("prediction"))),
            f"{tokens.get('prompt', 0) + tokens.get('completion', 0):,}",
            escape(str(r.get("error") or "")),
        )
    return table


def example(run: Run, record: dict[str, Any], calls: list[dict[str, Any]]) -> tuple[list[Any], str]:
    """A scene in full, and its verdict."""
    parts = scene_parts(run, record, int(record.get("run", 0)))
    return parts, f"prediction {record.get('prediction')}, target {record.get('target')}"


def scene_parts(run: Run, record: dict[str, Any], r: int) -> list[Any]:
    parts: list[Any] = []
    scene = find_scene(run, str(record["id"]))
    if scene is not None:
        parts.append(Text(f"scene: {scene.text()}"))
        png = scene_png(run, scene)
        parts.append(Text(f"image: {png}" if png else f"image: not written ({run.dir} cannot be written)", style="dim"))
        true_labels = record.get("true_labels") or scene.labels
        hidden = masks(run, scene) if data(run).masked else []  # no column, no marks on a level without a mask
        objects = record.get("object_labels")
        if objects:
            heads = ["#", "object (as the model saw it)", "evidence", "label", "true label", *(["masked"] if hidden else [])]
            title = "per-object labels" + (" (masked: a combination no episode shows)" if hidden else "")
            table = Table(*heads, box=box.SIMPLE, title=title)
            for i, (obj, truth) in enumerate(zip(objects, true_labels), 1):
                obj = obj if isinstance(obj, dict) else {"label": obj}
                label = str(obj.get("label"))
                cells = [
                    str(i),
                    escape(str(obj.get("object_and_background", ""))),
                    escape(str(obj.get("evidence", ""))),
                    mark(label == truth, label),
                    truth,
                ]
                if hidden:
                    cells.append("masked" if i <= len(hidden) and hidden[i - 1] else "")
                table.add_row(*cells)
            parts.append(table)
        else:
            shown = [f"{t} (masked)" if i < len(hidden) and hidden[i] else t for i, t in enumerate(true_labels)]
            parts.append(Text("true labels: " + ", ".join(shown)))
    memory = run.memory(r)
    episodic, semantic = reads(run)
    used = []
    if episodic:
        used.append(f"{len(data(run).episodes)} raw episodes")
    if semantic:
        used.append(f"{len((memory or {}).get('hypotheses') or [])} hypotheses ({command('eval')} show {run.dir} lists them)")
    parts.append(Text("memory used: " + ("; ".join(used) if used else "none"), style="dim"))
    return parts


def scene_png(run: Run, scene) -> Path | None:
    """The scene's picture in the run directory, drawn there the first time; None where the directory cannot be written."""
    path = run.dir / "scenes" / f"{scene.id}.png"
    if not path.exists():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            scene.image.save(path)
        except OSError:  # a run someone else owns, a read-only mount: show it without the picture
            return None
    return path
