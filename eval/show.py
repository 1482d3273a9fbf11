"""What happened inside a run, read from its directory alone (``python -m eval show RUN_DIR``).

    python -m eval show runs/hdr-L1-...                      # the memory, then one line per example
    python -m eval show runs/hdr-L1-... --wrong              # every wrong example in full
    python -m eval show runs/hdr-L1-... --id scene-0003      # one example in full
    python -m eval show runs/hdr-L1-... --step hypothesis_generator   # that step's calls, memory build included
    python -m eval show runs/arcmemo_ps-... --id 0a1d4ef5 --messages  # ... with the messages sent

An example in full: what its task shows of it (:meth:`memreason.eval.tasks.Task.show_example`: for
Experience-Transfer the scene, its PNG drawn on demand into ``RUN_DIR/scenes/``, per-object labels and the
memory used; for ARC the concepts selected and each attempt's programs step by step; for a problem task its
problem and query), then each LM call's step, tokens, latency and cache status with the fields it was parsed
into (reasoning, per-object labels, the answer), and prediction against target. The header, the memory and the
line per example are the task's too (:func:`memreason.eval.tasks.task_for` finds it from the run's config).
Calls come from ``traces/`` (:mod:`memreason.eval.harness.traces`); a run written before traces existed shows
its records without them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console, Group
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from memreason.installed import command

from .harness.errors import UsageError
from .harness.options import Options
from .harness.resume import read_examples
from .harness.traces import TraceDamaged, TraceStore, example_unit, memory_unit
from .show_parts import message_text, read_json, short
from .tasks.registry import task_for


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
            raise UsageError(f"{run_dir} has no config.json: not a run directory of {command('eval')}")
        try:
            self.config = json.loads(config_path.read_text())
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot read {config_path}: {getattr(exc, 'strerror', None) or exc}") from None
        if not isinstance(self.config, dict):
            raise UsageError(f"{config_path} is not a run config (a JSON object)")
        self.dir = run_dir
        self.program = self.config.get("program", "?")
        self.task = task_for(self.config)  # what the run ran on: it says how its records read
        self.examples = read_examples(run_dir / "examples.jsonl", repair=False)  # looking never writes
        self.traces = TraceStore(run_dir)
        self.results = read_json(run_dir / "results.json")
        self.memo: dict[str, Any] = {}  # what a task's view reads once per run (its data, its program's parts)

    def calls(self, unit: str) -> tuple[list[dict[str, Any]], Text | None]:
        """The LM calls of ``unit``, and a line saying its trace is damaged when it cannot be read (never "no calls")."""
        try:
            return self.traces.read(unit, strict=True), None
        except TraceDamaged as exc:
            return [], Text(str(exc), style="red")

    def memory(self, run: int) -> dict[str, Any] | None:
        return read_json(self.dir / f"memory-run{run}.json")

    def correct(self, record: dict[str, Any]) -> bool:
        return self.task.correct(record)


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
        console.print(run.task.show_overview(run, records))
        console.print(_hints(run))
        return
    for record in wanted[: args.limit]:
        console.print(_example(run, record, args))
    if args.limit and len(wanted) > args.limit:
        console.print(f"... {len(wanted) - args.limit} more (raise --limit)")


def _header(run: Run) -> Panel:
    c = run.config
    lines = [f"[bold]{escape(run.program)}[/bold]  ({escape(run.task.show_title())})  {escape(str(run.dir))}"]
    lines.append(run.task.show_setting(c))
    lines.append(f"task LM {c.get('lm')}, memory LM {c.get('memory_lm')}")
    if run.results:
        lines.extend(run.task.show_results(run.results))
    else:
        lines.append(f"unfinished: {len(run.examples)} examples so far")
    return Panel("\n".join(lines), box=box.ROUNDED)


def _memory_panel(run: Run, r: int) -> Panel:
    """The memory of repetition ``r``, and what building it cost by step."""
    parts: list[Any] = list(run.task.show_memory(run, r))
    calls, damaged = run.calls(memory_unit(r))
    if calls:
        parts.append(_step_table(calls, title="memory build"))
    if damaged is not None:
        parts.append(damaged)
    return Panel(Group(*parts), title=f"memory, run {r}", box=box.ROUNDED)


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


def _hints(run: Run) -> Text:
    wrong = next((r for r in run.examples.values() if not run.correct(r)), None)
    some = wrong or next(iter(run.examples.values()), None)
    lines = ["look closer:", f"  {command('eval')} show {run.dir} --wrong"]
    if some is not None:
        lines.append(f"  {command('eval')} show {run.dir} --id {some['id']} --messages")
    return Text("\n".join(lines), style="dim")


# -- one example -------------------------------------------------------------------------------


def _example(run: Run, record: dict[str, Any], args: ShowOptions) -> Panel:
    r = int(record.get("run", 0))
    found, damaged = run.calls(example_unit(r, str(record["id"])))
    calls = [c for c in found if not args.step or _step_matches(c, args.step)]
    shown, verdict = run.task.show_example(run, record, found)
    parts = list(shown)
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
                body.append(Text(message_text(message.get("content"))))
        outputs = call.get("outputs")
        if isinstance(outputs, dict):
            for name, value in outputs.items():
                shown = "in the table above" if name in tabled else short(value)
                body.append(Text.assemble((f"{name}: ", "bold"), shown))
        elif call.get("parse_error"):
            body.append(Text(f"could not be parsed: {call['parse_error']}", style="red"))
            body.append(Text.assemble(("raw answer: ", "bold"), short(call.get("completion"))))
        else:
            body.append(Text.assemble(("raw answer: ", "bold"), short(call.get("completion"))))
        parts.append(Group(*body))
    return parts
