"""What happened inside a run, read from its directory alone (``python -m eval show RUN_DIR``).

    python -m eval show runs/hdr-L1-...                      # the memory, then one line per example
    python -m eval show runs/hdr-L1-... --wrong              # every wrong example in full
    python -m eval show runs/hdr-L1-... --id scene-0003      # one example in full
    python -m eval show runs/hdr-L1-... --step hypothesis_generator   # that step's calls, memory build included
    python -m eval show runs/arcmemo_ps-... --id 0a1d4ef5 --messages  # ... with the messages sent

An example in full: the scene (its description, and the path of its PNG, drawn on demand
into ``RUN_DIR/scenes/``), the memory the program answered from (hypotheses, rules with
their coverage and counterexamples, reflections, or the raw episodes; for ARC the concepts
selected), each LM call's step, tokens, latency and cache status with the fields it was
parsed into (reasoning, per-object labels, the answer), then prediction against target. For
ARC, each attempt's programs step by step, how each ran on the train pairs, and the feedback
its retry was given. Calls come from ``traces/`` (:mod:`memreason.eval.harness.traces`); a run written
before traces existed shows its records without them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console, Group
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from memreason.eval.arc.checkpoints import read_writes
from memreason.programs import PROGRAMS
from memreason.programs.hdr.grounded_consolidator import STOP_REASONS

from .arc.memory_measures import read_measure
from .harness.errors import UsageError
from .harness.options import Options
from .harness.resume import read_examples
from .harness.traces import TraceDamaged, TraceStore, example_unit, memory_unit

FIELD_CHARS = 2_000  # characters of one parsed field shown (the trace file has all of it)


@dataclass(kw_only=True)
class ShowOptions(Options):
    """What to show of a run directory (``python -m eval show``)."""

    run_dir: Path
    ids: list[str] | None = None  # these examples in full
    wrong: bool = False  # every wrong example in full
    step: str | None = None  # only the calls of this step
    run: int | None = None  # only this repetition (0-based)
    limit: int | None = None  # at most N examples in full
    messages: bool = False  # also the messages each call sent
    width: int | None = None  # terminal width


# -- reading a run directory -------------------------------------------------------------------


class Run:
    """A run directory: config, example records, memory records, traces."""

    def __init__(self, run_dir: Path):
        if not run_dir.is_dir():
            raise UsageError(f"{run_dir} is not a run directory")
        config_path = run_dir / "config.json"
        if not config_path.exists():
            raise UsageError(f"{run_dir} has no config.json: not a run directory of python -m eval")
        try:
            self.config = json.loads(config_path.read_text())
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot read {config_path}: {getattr(exc, 'strerror', None) or exc}") from None
        if not isinstance(self.config, dict):
            raise UsageError(f"{config_path} is not a run config (a JSON object)")
        self.dir = run_dir
        self.program = self.config.get("program", "?")
        spec = PROGRAMS.get(self.program)
        self.task = spec.task if spec else ("arc" if "split" in self.config else "experience_transfer")
        if self.config.get("task") not in (None, "experience_transfer") and self.task != "arc":
            self.task = "inductive"  # an inductive task (--task acre): each problem's own memory
        self.examples = read_examples(run_dir / "examples.jsonl", repair=False)  # looking never writes
        self.traces = TraceStore(run_dir)
        self.results = _read_json(run_dir / "results.json")
        self._data = None

    def calls(self, unit: str) -> tuple[list[dict[str, Any]], Text | None]:
        """The LM calls of ``unit``, and a line saying its trace is damaged when it cannot be read (never "no calls")."""
        try:
            return self.traces.read(unit, strict=True), None
        except TraceDamaged as exc:
            return [], Text(str(exc), style="red")

    def memory(self, run: int) -> dict[str, Any] | None:
        return _read_json(self.dir / f"memory-run{run}.json")

    def correct(self, record: dict[str, Any]) -> bool:
        if self.task == "arc":
            return (record.get("scores") or {}).get("official_score", 0) >= 1
        return bool(record.get("correct"))

    def data(self):
        """The Experience-Transfer level the run answered (rebuilt from its config: seeded)."""
        if self._data is None:
            from memreason.datasets.experience_transfer import RuleTable, make_level

            rules = self.config.get("rules")
            table = RuleTable.load(rules)
            self._data = make_level(int(self.config["level"]), seed=int(self.config.get("seed") or 0), rules=table)
        return self._data

    def scene(self, scene_id: str):
        return next((s for s in self.data().test if s.id == scene_id), None)

    @cached_property
    def reads(self) -> tuple[bool, bool]:
        """(episodic, semantic): what the program's reasoner reads."""
        try:
            reasoner = PROGRAMS[self.program].build(**(self.config.get("knobs") or {})).reasoner
            return bool(reasoner.episodic), bool(reasoner.semantic)
        except Exception:
            return True, True


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


# -- what is shown -----------------------------------------------------------------------------


def show(args: ShowOptions, console: Console | None = None) -> None:
    """Print what ``args`` asks for of its run directory on ``console`` (default: a console of ``args.width``)."""
    console = console or Console(width=args.width, highlight=False, soft_wrap=False)
    run = Run(args.run_dir)
    order = lambda kv: (kv[0][0], kv[1].get("index", 0), str(kv[0][1]))  # noqa: E731  run, task order, id
    records = [r for (r_, _), r in sorted(run.examples.items(), key=order) if args.run is None or r_ == args.run]
    console.print(_header(run))
    if args.ids:
        wanted = [r for r in records if str(r.get("id")) in args.ids]
        missing = set(args.ids) - {str(r.get("id")) for r in wanted}
        if missing:
            raise UsageError(f"no example {', '.join(sorted(missing))} in {run.dir / 'examples.jsonl'}")
    elif args.wrong:
        wanted = [r for r in records if not run.correct(r)]
        if not wanted:
            console.print("every example is right")
    elif args.step:
        for r in sorted({r_ for r_, _ in run.examples} | {0}):
            if args.run is None or r == args.run:
                found, damaged = run.calls(memory_unit(r))
                calls = [c for c in found if _step_matches(c, args.step)]
                console.print(
                    Panel(
                        Group(*_calls(calls, args), *([] if calls else [damaged or Text("no such call")])),
                        title=f"memory build, run {r}: step {escape(args.step)}",
                        box=box.ROUNDED,
                    )
                )
        wanted = []
    else:
        for r in sorted({r_ for r_, _ in run.examples} | {0}):
            if args.run is None or r == args.run:
                console.print(_memory_panel(run, r))
        console.print(_overview(run, records))
        console.print(_hints(run))
        return
    for record in wanted[: args.limit]:
        console.print(_example(run, record, args))
    if args.limit and len(wanted) > args.limit:
        console.print(f"... {len(wanted) - args.limit} more (raise --limit)")


def _header(run: Run) -> Panel:
    c = run.config
    lines = [f"[bold]{escape(run.program)}[/bold]  ({run.task.replace('_', '-')})  {escape(str(run.dir))}"]
    if run.task == "experience_transfer":
        lines.append(
            f"level {c.get('level')}, {c.get('modality', 'text')} modality, seed {c.get('seed', 0)}"
            + (f", rules {c['rules']}" if c.get("rules") else ", rules: the paper's Table 1")
            + (f", knobs {json.dumps(c['knobs'])}" if c.get("knobs") else "")
        )
    elif run.task == "inductive":
        lines.append(f"task {c.get('task')}, seed {c.get('seed', 0)}, limit {c.get('limit')}")
    else:
        lines.append(f"split {c.get('split')}, retries {c.get('retries')}, attempts {c.get('attempts')}")
    lines.append(f"task LM {c.get('lm')}, memory LM {c.get('memory_lm')}")
    results = run.results
    if results:
        if run.task == "arc":
            lines.append(f"official score {100 * (results.get('official_score') or 0):.1f}%")
            programs = results.get("programs") or {}
            if "ran" in programs:
                lines.append(_programs_line(programs))
            measures = results.get("memory_measures") or {}
            if measures.get("tasks"):
                lines.append(_measures_line(measures))
        else:
            acc = results.get("accuracy") or {}
            f1 = results.get("hypothesis_f1") or {}
            lines.append(
                f"accuracy {100 * acc.get('mean', 0):.1f}% on {results.get('examples')} examples"
                + (f", hypothesis F1 {f1['mean']:.2f} ({f1.get('mode')})" if f1.get("mean") is not None else "")
            )
    else:
        lines.append(f"unfinished: {len(run.examples)} examples so far")
    return Panel("\n".join(lines), box=box.ROUNDED)


def _programs_line(p: dict[str, Any]) -> str:
    """How the run's programs fared on the train inputs (results.json's ``programs``)."""
    raised = p.get("raised") or {}
    names = ", ".join(f"{escape(str(name))} {n}" for name, n in (p.get("undefined_names") or [])[:3])
    undefined = f", {raised['NameError']} NameError ({names})" if raised.get("NameError") and names else ""
    return (
        f"programs: {p['written']} written; {p['did_not_parse']} did not parse, {p['no_transform']} had no transform, "
        f"{sum(raised.values())} raised{undefined}, {p['timed_out'] + p['bad_output']} timed out or gave no grid, "
        f"{p['ran']} ran on every train input ({p['some_right']} with some pair right, {p['all_right']} with all)"
    )


def _measures_line(m: dict[str, Any]) -> str:
    """What the memory reads did over the run (results.json's ``memory_measures``)."""
    pct = lambda v: "-" if v is None else f"{100 * v:.1f}%"  # noqa: E731
    line = (
        f"memory reads: hit@k {pct(m.get('hit_at_k'))}, precision {pct(m.get('precision'))} over {m['tasks']} reads "
        f"(k = {m.get('selected_mean') or 0:.1f} concepts on average)"
    )
    blind = [
        (what, m.get(key))
        for what, key in (("by chance", "chance_hit_at_k"), ("naming the most-sourced", "most_sourced_hit_at_k"))
    ]
    if any(v is not None for _, v in blind):
        line += "; hit@k blind to the puzzle: " + ", ".join(f"{pct(v)} {what}" for what, v in blind)
    unheld = m["tasks"] - m.get("label_held", m["tasks"])
    if unheld:
        line += f"; {unheld} of them from a memory holding no concept of the task's own (left out of hit@k and precision)"
    if m.get("part_tasks"):
        line += f"; part hit {pct(m.get('part_hit'))}, part coverage {pct(m.get('part_coverage'))}"
    top = (m.get("reuse") or [])[:3]
    if top:
        line += "; most selected: " + ", ".join(
            f"{escape(str(e['concept']))} ({e['selected']}, {e['solved']} solved)" for e in top
        )
    return line


def _memory_panel(run: Run, r: int) -> Panel:
    """The memory of repetition ``r``, and what building it cost by step."""
    parts: list[Any] = []
    if run.task == "arc":
        parts.append(Text(_arc_memory_line(run.dir / "memory" / f"run{r}")))
    elif run.task == "inductive":
        parts.extend(_problem_memories(run, r))
    else:
        record = run.memory(r)
        episodic, semantic = run.reads
        if episodic:
            parts.append(Text(f"raw episodes: all {len(run.data().episodes)} labelled episodes go into every prompt"))
        if record is None:
            parts.append(Text("no memory record (the run had not built it)"))
        else:
            parts.extend(_memory_record(record, semantic))
    calls, damaged = run.calls(memory_unit(r))
    if calls:
        parts.append(_step_table(calls, title="memory build"))
    if damaged is not None:
        parts.append(damaged)
    return Panel(Group(*parts), title=f"memory, run {r}", box=box.ROUNDED)


def _arc_memory_line(directory: Path) -> str:
    """An ARC run's memory in one line: its size as loaded and at the end, and where the snapshots are."""
    snapshots = sorted(directory.glob("*.json")) if directory.is_dir() else []
    if not snapshots:
        return "no memory: this program reads none"

    def size(name: str) -> str:
        path = directory / name
        if not path.exists():
            return "-"
        data = _read_json(path) or {}
        if data.get("format") == "cheatsheet":
            return f"a sheet of {len(data.get('text') or '')} characters"
        return _plural(len(data.get("concepts") or []), "concept")

    wrote = len(read_writes(directory / "writes.jsonl"))
    return (
        f"memory: {size('step-0000.json')} as loaded, {size('final.json')} at the end; {_plural(wrote, 'write')}; "
        f"{len(snapshots)} snapshots in {directory.parent.name}/{directory.name}/; each task's selected concepts: --id"
    )


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _problem_memories(run: Run, r: int) -> list[Any]:
    """An inductive run's memories: one per problem, built from that problem's episodes alone."""
    records = {p.stem: _read_json(p) for p in sorted((run.dir / "memory" / f"run{r}").glob("*.json"))}
    parts: list[Any] = [Text(f"each problem builds its own memory (memory/run{r}/<problem>.json): {len(records)} built")]
    table = Table("problem", "hypotheses", "kept", box=box.SIMPLE_HEAD)
    for problem, record in records.items():
        record = record or {}
        kept = "yes" if record.get("kept") is not None else ("no" if "kept" in record else "")
        table.add_row(problem, escape(_short(" | ".join(record.get("hypotheses") or []))), kept)
    if records:
        parts.append(table)
    return parts


def _memory_record(record: dict[str, Any], semantic: bool) -> list[Any]:
    parts: list[Any] = []
    hypotheses = record.get("hypotheses") or []
    if semantic:
        noun = "hypothesis" if len(hypotheses) == 1 else "hypotheses"
        title = f"semantic memory: {len(hypotheses)} {noun}" if hypotheses else "semantic memory: empty"
        parts.append(Text(title, style="bold"))
        parts.extend(Text(f"  {i}. {h}") for i, h in enumerate(hypotheses, 1))
    for name in ("reflections",):
        if record.get(name):
            parts.append(Text(f"{name}: {len(record[name])}", style="bold"))
            parts.extend(Text(f"  - {str(x)[:300]}") for x in record[name][:20])
    rules = record.get("rules")
    if isinstance(rules, list) and rules:
        table = Table(
            "rule proposed",
            "label",
            "covers",
            "counterexamples",
            "kept",
            box=box.SIMPLE,
            title="rules checked against the episodes",
        )
        for rule in rules:
            counter = rule.get("counterexamples") or []
            source = rule.get("narrowed_from")
            table.add_row(
                escape(str(rule.get("statement", rule)))
                + (f" (narrowed from: {escape(str(source.get('statement')))})" if isinstance(source, dict) else ""),
                str(rule.get("label", "")),
                str(len(rule.get("coverage") or [])),
                str(len(counter)),
                "yes" if rule.get("statement") in hypotheses else "no",
            )
        parts.append(table)
    parts.extend(_rounds(record))
    if record.get("unexplained"):
        parts.append(Text(f"episodes left unexplained: {record['unexplained']}"))
    tokens = record.get("tokens") or {}
    if record.get("wall_seconds") is not None and tokens.get("calls"):
        parts.append(
            Text(
                f"built in {record['wall_seconds']:.0f} s, {tokens.get('calls', 0)} calls, "
                f"{tokens.get('prompt', 0):,} + {tokens.get('completion', 0):,} tokens",
                style="dim",
            )
        )
    cut = record.get("cut") or {}
    if cut:
        parts.append(
            Text(
                "answers that stopped at the token cap (--max-tokens) instead of ending: "
                + ", ".join(f"{step} {n}" for step, n in cut.items()),
                style="yellow",
            )
        )
    return parts


def _rounds(record: dict[str, Any]) -> list[Text]:
    """What each generate-check round of ``hdr_grounded`` did, and why the rounds stopped (records that say so)."""
    rounds = [r for r in record.get("rounds") or [] if isinstance(r, dict) and isinstance(r.get("counts"), dict)]
    lines = [
        Text(
            f"round {r.get('round')}: {c.get('proposed', 0)} proposed, {c.get('repeats', 0)} repeats dropped, "
            f"{c.get('verified', 0)} verified, {c.get('refuted', 0)} refuted, {c.get('narrowed', 0)} narrowed"
        )
        for r in rounds
        for c in [r["counts"]]
    ]
    if rounds and record.get("stopped"):
        reason = str(record["stopped"])
        lines.append(Text(f"rounds stopped: {STOP_REASONS.get(reason, reason)}"))
    return lines


def _step_table(calls: list[dict[str, Any]], *, title: str) -> Table:
    table = Table("step", "calls", "prompt tokens", "completion tokens", "seconds", "cached", box=box.SIMPLE, title=title)
    steps: dict[str, list[dict[str, Any]]] = {}
    for call in calls:
        steps.setdefault(call.get("step", "?"), []).append(call)
    for step, group in steps.items():
        table.add_row(
            step,
            str(len(group)),
            f"{sum(c.get('prompt_tokens', 0) for c in group):,}",
            f"{sum(c.get('completion_tokens', 0) for c in group):,}",
            f"{sum(c.get('latency_s', 0) for c in group):.1f}",
            str(sum(bool(c.get("cache_hit")) for c in group)),
        )
    return table


def _overview(run: Run, records: list[dict[str, Any]]) -> Table:
    if run.task == "arc":
        measured = {id(r): m for r in records if (m := read_measure(r)) is not None}
        columns = ["run", "task", "official", "passed train", "attempts", "tokens"]
        table = Table(*columns, *(["memory (k, hit)"] if measured else []), box=box.SIMPLE_HEAD)
        for r in records:
            tokens = sum((t or {}).get("total", 0) for t in (r.get("tokens") or {}).values())
            cells = [
                str(r["run"]),
                str(r["id"]),
                _mark(run.correct(r), f"{(r.get('scores') or {}).get('official_score', 0):.2f}"),
                "yes" if r.get("passed_train") else "no",
                str(len(r.get("attempts") or [])),
                f"{tokens:,}",
            ]
            if measured:
                m = measured.get(id(r))
                cells.append("" if m is None else f"{m.k}, {('hit' if m.hit else 'miss') if m.held else 'no source'}")
            table.add_row(*cells)
        return table
    if run.task == "inductive":
        table = Table("run", "query", "target", "prediction", "answered by", "error", box=box.SIMPLE_HEAD)
        for r in records:
            table.add_row(
                str(r["run"]),
                str(r["id"]),
                escape(str(r.get("target"))),
                _mark(run.correct(r), escape(str(r.get("prediction")))),
                str(r.get("source") or "reasoner"),
                escape(str(r.get("error") or "")),
            )
        return table
    table = Table("run", "scene", "objects", "target", "prediction", "tokens", "error", box=box.SIMPLE_HEAD)
    for r in records:
        tokens = r.get("tokens") or {}
        table.add_row(
            str(r["run"]),
            str(r["id"]),
            str(r.get("objects", "")),
            str(r.get("target")),
            _mark(run.correct(r), str(r.get("prediction"))),
            f"{tokens.get('prompt', 0) + tokens.get('completion', 0):,}",
            escape(str(r.get("error") or "")),
        )
    return table


def _hints(run: Run) -> Text:
    wrong = next((r for r in run.examples.values() if not run.correct(r)), None)
    some = wrong or next(iter(run.examples.values()), None)
    lines = ["look closer:", f"  python -m eval show {run.dir} --wrong"]
    if some is not None:
        lines.append(f"  python -m eval show {run.dir} --id {some['id']} --messages")
    return Text("\n".join(lines), style="dim")


def _mark(ok: bool, text: str) -> Text:
    return Text(f"{text} {'✓' if ok else '✗'}", style="green" if ok else "red")


# -- one example -------------------------------------------------------------------------------


def _example(run: Run, record: dict[str, Any], args: ShowOptions) -> Panel:
    r = int(record.get("run", 0))
    found, damaged = run.calls(example_unit(r, str(record["id"])))
    calls = [c for c in found if not args.step or _step_matches(c, args.step)]
    if run.task == "arc":
        parts = _arc_example(record, found)
        verdict = f"official score {(record.get('scores') or {}).get('official_score', 0):.2f}"
    elif run.task == "inductive":
        parts = [Text(f"problem {record.get('problem')}, query: {record.get('query')}")]
        if record.get("note"):
            parts.append(Text(f"answered by {record.get('source')}: {record['note']}"))
        verdict = f"prediction {record.get('prediction')}, target {record.get('target')}"
    else:
        parts = _scene_example(run, record, r)
        verdict = f"prediction {record.get('prediction')}, target {record.get('target')}"
    if record.get("error"):
        parts.append(Text(f"failed: {record['error']}", style="red"))
    if calls:
        parts.append(Text(f"LM calls ({len(calls)}):", style="bold"))
        parts.extend(_calls(calls, args, tabled=("objects",) if record.get("object_labels") else ()))
    elif damaged is not None:
        parts.append(damaged)
    elif not run.traces.units():
        parts.append(Text("no traces in this run directory (written before traces existed)", style="dim"))
    ok = run.correct(record)
    title = Text(f"{record['id']} (run {r}): {verdict} {'✓' if ok else '✗'}", style="green" if ok else "red")
    return Panel(Group(*parts), title=title, box=box.ROUNDED)


def _scene_example(run: Run, record: dict[str, Any], r: int) -> list[Any]:
    parts: list[Any] = []
    scene = run.scene(str(record["id"]))
    if scene is not None:
        parts.append(Text(f"scene: {scene.text()}"))
        png = _scene_png(run, scene)
        parts.append(Text(f"image: {png}" if png else f"image: not written ({run.dir} cannot be written)", style="dim"))
        true_labels = record.get("true_labels") or scene.labels
        objects = record.get("object_labels")
        if objects:
            table = Table(
                "#", "object (as the model saw it)", "evidence", "label", "true label", box=box.SIMPLE, title="per-object labels"
            )
            for i, (obj, truth) in enumerate(zip(objects, true_labels), 1):
                obj = obj if isinstance(obj, dict) else {"label": obj}
                label = str(obj.get("label"))
                table.add_row(
                    str(i),
                    escape(str(obj.get("object_and_background", ""))),
                    escape(str(obj.get("evidence", ""))),
                    _mark(label == truth, label),
                    truth,
                )
            parts.append(table)
        else:
            parts.append(Text("true labels: " + ", ".join(true_labels)))
    memory = run.memory(r)
    episodic, semantic = run.reads
    used = []
    if episodic:
        used.append(f"{len(run.data().episodes)} raw episodes")
    if semantic:
        used.append(f"{len((memory or {}).get('hypotheses') or [])} hypotheses (python -m eval show {run.dir} lists them)")
    parts.append(Text("memory used: " + ("; ".join(used) if used else "none"), style="dim"))
    return parts


def _scene_png(run: Run, scene) -> Path | None:
    """The scene's picture in the run directory, drawn there the first time; None where the directory cannot be written."""
    path = run.dir / "scenes" / f"{scene.id}.png"
    if not path.exists():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            scene.image.save(path)
        except OSError:  # a run someone else owns, a read-only mount: show it without the picture
            return None
    return path


def _arc_example(record: dict[str, Any], calls: list[dict[str, Any]]) -> list[Any]:
    parts: list[Any] = []
    read = record.get("read") or {}
    if "selected" in read:
        selected = read.get("selected")
        sources = read.get("selected_sources") if isinstance(read.get("selected_sources"), dict) else {}
        shown = (
            ", ".join(str(n) + (f" (from {', '.join(map(str, sources[n]))})" if sources.get(n) else "") for n in selected)
            if isinstance(selected, list)
            else str(selected)
        )
        parts.append(
            Text(f"concepts selected: {shown or 'none'}" + (f" (read failed: {read['failed']})" if read.get("failed") else ""))
        )
        m = read_measure(record)
        if m is not None and m.k and not m.held:
            parts.append(
                Text(
                    f"memory read: k = {m.k}; no concept in memory comes from a task of this task's concept, "
                    "so hit and precision are not measured",
                    style="dim",
                )
            )
        elif m is not None and m.k:
            parts.append(
                Text(
                    f"memory read: {'a hit' if m.hit else 'a miss'} at k = {m.k} (precision {m.precision:.2f}: selected "
                    f"concepts abstracted from tasks of this task's concept)"
                    + (
                        f"; blind to the puzzle: a hit with chance {m.chance:.2f}, "
                        f"{'a hit' if m.most_sourced else 'a miss'} naming the {m.k} most-sourced"
                        if m.chance is not None and m.most_sourced is not None
                        else ""
                    ),
                    style="dim",
                )
            )
    given = next(
        (
            v
            for c in calls
            if str(c.get("step", "")).startswith("arc_solver")
            for v in [_input_field(c, "concepts")]
            if v is not None
        ),
        None,
    )
    if given is not None:  # the memory exactly as the solver's prompt carried it
        parts.append(Text.assemble(("memory in the solver's prompt: ", "bold"), _short(given.strip() or "(empty)")))
    for attempt in record.get("attempts") or []:
        steps = attempt.get("steps") or []
        for n, step in enumerate(steps, 1):
            train = step.get("train") or []
            passed = sum(bool(c.get("correct")) for c in train)
            head = (
                f"attempt {attempt.get('index')}, {'retry ' + str(step.get('retry')) if step.get('retry') else 'first program'}: "
                f"{passed}/{len(train)} train pairs right"
            )
            body: list[Any] = [Text(head, style="bold")]
            body.extend(_step_read(step.get("read") or {}))
            if step.get("error"):
                body.append(Text(f"no program: {step['error']}", style="red"))
            if step.get("program"):
                body.append(Text(step["program"].rstrip()))
            for i, check in enumerate(train):
                if not check.get("correct"):
                    body.append(
                        Text(
                            f"train pair {i}: "
                            + (f"{check.get('failure')}: {check.get('detail', '')}" if check.get("failure") else "wrong output"),
                            style="yellow",
                        )
                    )
            if step.get("feedback") and n < len(steps):  # the last step's feedback went to no one
                body.append(Text("feedback given to the next retry: " + step["feedback"][:FIELD_CHARS], style="dim"))
            parts.append(Panel(Group(*body), box=box.SIMPLE))
    return parts


def _step_read(read: dict[str, Any]) -> list[Any]:
    """What a retry step read from memory for itself (a retry pass's re-read, or a re-selection), if anything."""
    if "selected" not in read and not read.get("failed"):
        return []
    names = read.get("selected")
    shown = (", ".join(map(str, names)) if isinstance(names, list) else str(names or "")) or "none"
    how = "re-selected for this retry (added to the first read's)" if read.get("reselected") else "read again for this retry"
    failed = f" (failed: {read['failed']})" if read.get("failed") else ""
    return [Text(f"concepts {how}: {shown}{failed}", style="cyan")]


# -- calls -------------------------------------------------------------------------------------


def _step_matches(call: dict[str, Any], step: str) -> bool:
    name = str(call.get("step", ""))
    return name == step or name.startswith(step) or str(call.get("signature", "")) == step


def _calls(calls: list[dict[str, Any]], args: ShowOptions, tabled: tuple[str, ...] = ()) -> list[Any]:
    """Each call in order; output fields named in ``tabled`` are already shown as a table above."""
    parts: list[Any] = []
    for i, call in enumerate(calls, 1):
        signature = call.get("signature")
        named = f"{signature}, " if signature and signature != "StringSignature" else ""  # built on the fly: no name
        head = (
            f"{i}. {call.get('step')} ({named}{call.get('role')} LM): "
            f"{call.get('prompt_tokens', 0):,} + {call.get('completion_tokens', 0):,} tokens, {call.get('latency_s', 0):.1f} s"
            + (", from the cache" if call.get("cache_hit") else "")
            + (f", attempt {call['attempt'] + 1}" if call.get("attempt") else "")
            + (f", retry pass {call['pass']}" if call.get("pass") else "")
        )
        body: list[Any] = [Text(head, style="bold cyan")]
        if args.messages:
            for message in call.get("messages") or []:
                body.append(Text(f"[{message.get('role')}]", style="magenta"))
                body.append(Text(_text(message.get("content"))))
        outputs = call.get("outputs")
        if isinstance(outputs, dict):
            for name, value in outputs.items():
                shown = "in the table above" if name in tabled else _short(value)
                body.append(Text.assemble((f"{name}: ", "bold"), shown))
        elif call.get("parse_error"):
            body.append(Text(f"could not be parsed: {call['parse_error']}", style="red"))
            body.append(Text.assemble(("raw answer: ", "bold"), _short(call.get("completion"))))
        else:
            body.append(Text.assemble(("raw answer: ", "bold"), _short(call.get("completion"))))
        parts.append(Group(*body))
    return parts


def _input_field(call: dict[str, Any], name: str) -> str | None:
    """The value of input field ``name`` in the last user message of ``call`` (DSPy's ``[[ ## name ## ]]`` markers)."""
    users = [m for m in call.get("messages") or [] if isinstance(m, dict) and m.get("role") == "user"]
    if not users:
        return None
    match = re.search(
        rf"\[\[ ## {re.escape(name)} ## \]\]\n(.*?)(?=\n\n\[\[ ## |\n\nRespond with|\Z)", _text(users[-1].get("content")), re.S
    )
    return match.group(1) if match else None


def _text(content: Any) -> str:
    if isinstance(content, list):  # multi-part content: text parts and image notes
        return "\n".join(
            str(part.get("text") or part.get("image_url") or part) if isinstance(part, dict) else str(part) for part in content
        )
    return str(content)


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= FIELD_CHARS else text[:FIELD_CHARS] + f" ... ({len(text) - FIELD_CHARS:,} more characters)"
