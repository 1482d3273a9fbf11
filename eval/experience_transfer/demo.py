"""What memory does for a model, side by side, in minutes: what ``python -m eval demo`` runs.

    table, epilogue = run_demo(DemoOptions())             # embedded model, first 20 Level-1 scenes
    run_demo(DemoOptions(level=2, limit=60, lm="openai/gpt-4o-mini", threads=8))

Three programs answer the same scenes, each from a different memory of the same labelled
episodes: all the raw episodes (``episodic_cot``), the hypotheses HDR consolidated from them
and checked against them (``hdr_grounded``), and the true rules (``semantic_oracle_cot``, the
ceiling a memory can reach). By default each reasoner labels every object and the count is
computed in code (``per_object``), each object in a call of its own against the 3 memory
entries nearest to it (``retrieve_k=3``; 0 labels all objects in one call against the whole memory).
The demo is a Table 3 run (:func:`memreason.eval.experience_transfer.tables.run_table`) over
those rows, so its cells are ordinary run directories, finished cells are read back, and a
stopped demo continues; the table shows each accuracy with its 95% CI over the scenes and tests
the other rows against the raw episodes, scene by scene (:mod:`memreason.eval.paired`). It
returns the table and an epilogue naming the commands that look
inside each run and that run the full tables, and writes ``<out>/report.md`` with its plots.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memreason import installed

from ..harness.options import Options
from .table_options import TableOptions

__all__ = ["MEMORY", "ROWS", "DemoOptions", "run_demo"]

ROWS = ("episodic_cot", "hdr_grounded", "semantic_oracle_cot")
MEMORY = {"episodic_cot": "raw episodes", "hdr_grounded": "HDR hypotheses, checked", "semantic_oracle_cot": "the true rules"}


@dataclass(kw_only=True)
class DemoOptions(Options):
    level: int = 1
    limit: int = 20
    rows: str = ",".join(ROWS)
    per_object: bool = True
    retrieve_k: int = 3
    lm: str | None = None
    memory_lm: str | None = None
    api_base: str | None = None
    memory_api_base: str | None = None
    temperature: float = 0.0
    max_tokens: int | None = None
    memory_temperature: float | None = None  # the memory role's own settings (a preset's, --memory-lm-arg's)
    memory_max_tokens: int | None = None
    lm_args: dict[str, Any] = field(default_factory=dict)  # any other setting of every task LM call (--lm-arg)
    memory_lm_args: dict[str, Any] = field(default_factory=dict)  # ... of every memory LM call (--memory-lm-arg)
    preset: str | None = None
    lm_config: Path | None = None
    origins: dict[str, str] | None = field(default=None, metadata={"saved": False}, compare=False, repr=False)
    threads: int = 16
    out: Path = Path("runs/demo")
    no_progress: bool = False
    mlflow: str | None = None
    budget_tokens: int | None = None  # the whole demo's spending limit, its rows together
    budget_usd: float | None = None
    rpm: int | None = None  # each role's requests and tokens per minute, all rows together
    tpm: int | None = None
    memory_rpm: int | None = None
    memory_tpm: int | None = None


def run_demo(options: DemoOptions, command: str | None = None) -> tuple[str, str]:
    """Run (or finish) the demo's table: its Markdown, and the epilogue to print after it."""
    table = TableOptions(
        table="table3",
        levels=[options.level],
        rows=options.rows,
        limit=options.limit,
        threads=options.threads,
        out=options.out,
        lm=options.lm,
        memory_lm=options.memory_lm,
        api_base=options.api_base,
        memory_api_base=options.memory_api_base,
        temperature=options.temperature,
        max_tokens=options.max_tokens,
        memory_temperature=options.memory_temperature,
        memory_max_tokens=options.memory_max_tokens,
        lm_args=dict(options.lm_args),
        memory_lm_args=dict(options.memory_lm_args),
        preset=options.preset,
        lm_config=options.lm_config,
        origins=options.origins,
        per_object=options.per_object,
        retrieve_k=options.retrieve_k if options.per_object and options.retrieve_k else None,
        no_progress=options.no_progress,
        mlflow=options.mlflow,
        budget_tokens=options.budget_tokens,
        budget_usd=options.budget_usd,
        rpm=options.rpm,
        tpm=options.tpm,
        memory_rpm=options.memory_rpm,
        memory_tpm=options.memory_tpm,
    )
    from .tables import run_table  # the models' libraries with it: the options above are read first

    markdown = run_table(table, command or f"{installed.command('eval')} demo")
    cells = [Path(cell["cell"]) for row in json.loads((options.out / "table3.json").read_text())["rows"] for cell in row["cells"]]
    return markdown, _epilogue(options, cells)


def _epilogue(options: DemoOptions, cells: list[Path]) -> str:
    from ..report import write_report  # matplotlib: only once there is something to plot

    report = write_report(cells, options.out)
    eval_command = installed.command("eval")
    lines = [
        f"\nreport with plots: {report}",
        "",
        "each row is a run directory; look inside one (its memory, every LM call, each answer):",
    ]
    for cell in cells:
        program = cell.name.split("-L")[0]
        lines.append(f"  {eval_command} show {shlex.quote(str(cell))} --wrong      # {MEMORY.get(program, program)}")
    grounded = next((c for c in cells if c.name.startswith("hdr_grounded-")), None)
    if grounded is not None:
        lines.append(
            f"  {eval_command} show {shlex.quote(str(grounded))} --step grounded_consolidator   # how the hypotheses were found"
        )
    lines += [
        "",
        "the paper's tables in full (150 scenes a cell; hours on the embedded model, minutes on an API model):",
        f"  {eval_command} table3 --levels 1,2,3 --per-object --retrieve-k 3 --threads 16",
        f"  {eval_command} table5 --levels 1,2,3 --rows hdr,hdr_grounded",
    ]
    return "\n".join(lines)
