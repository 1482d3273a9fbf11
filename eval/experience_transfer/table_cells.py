"""One cell of a table: its directory name, its options and LMs, and its value, run or read back.

An accuracy cell (:func:`accuracy_cell`) is one ordinary evaluation (what ``python -m eval <program>`` runs) in
``<out>/cells/<cell_name>``; a finished one is read back, never rerun. An F1 cell (:func:`f1_cell`) scores the
memories a program builds: a finished accuracy cell with the same memory LM lends its memories, else they are built
here, without answering scenes, in ``<out>/cells/memory-<cell_name>``.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from memreason.lm import LMChoice, resolve_lm
from memreason.lm.spend import Spend

from ..harness.budget import capped, stopped_by_budget
from ..harness.lms import adapted_records, role_given, with_limits
from ..harness.runs import use_response_cache, write_json
from ..metrics import mean_std
from ..paired import headline_ci, run_items
from ..tasks import get_task
from .evaluate import EvaluateOptions
from .hypothesis_scoring import memory_f1
from .run import ExperienceTransferConfig, memorize
from .table_options import TableError, TableOptions

__all__ = ["accuracy_cell", "cell_name", "cell_options", "f1_cell", "memory_lm"]


def cell_name(program: str, level: int | str, task: str, memory: str, args: TableOptions) -> str:
    """A cell's directory name: everything that changes its result, defaults left out (``level``: an inductive
    task's name in its table)."""
    name = f"{program}-L{level}-{_slug(task)}" if isinstance(level, int) else f"{program}-{level}-{_slug(task)}"
    if memory != task:
        name += f"-mem-{_slug(memory)}"
    if args.rules is not None:
        name += f"-rules-{_slug(Path(args.rules).stem)}"
    if args.per_object:
        name += "-per-object"
    if args.retrieve_k is not None:
        name += f"-k{args.retrieve_k}"
    state = args.states.get(program)
    if state is not None:
        name += f"-state-{state[1][:8]}"  # the state file's sha256: another state, another cell
    settings = _lm_settings(args)
    if settings:  # each role's own settings: others, another cell
        name += "-lm-" + hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:8]
    for flag, value, default in (
        ("seed", args.seed, 0),
        ("limit", args.limit, None),
        ("runs", args.runs, 1),
        ("t", args.temperature, 0.0),
        ("max", args.max_tokens, None),
    ):
        if value != default:
            name += f"-{flag}{value}"
    return name


def _slug(spec: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", spec)


def _lm_settings(args: TableOptions) -> dict[str, Any]:
    """The roles' settings that change a cell's results besides the models, the temperature and the cap (which a
    cell's name shows as they are): keywords and the memory role's own sampling; empty when none is set."""
    found = {
        "lm_args": dict(args.lm_args or {}),
        "memory_lm_args": dict(args.memory_lm_args or {}),
        "memory_temperature": args.memory_temperature,
        "memory_max_tokens": args.memory_max_tokens,
    }
    return {key: value for key, value in found.items() if value not in (None, {})}


def memory_lm(spec: str, args: TableOptions) -> LMChoice:
    """The LM ``spec`` in the memory role (Table 5's memory builder, and its judge): the memory role's settings,
    the table's temperature and cap where the role has none of its own, its address, its rate limits (``--memory-rpm``
    and ``--memory-tpm`` where given, else ``--rpm`` and ``--tpm``: one limiter per model in the process, so the
    judge on the memory LM's model waits with the memory builder)."""
    given = role_given(args, "memory")
    task_given = role_given(args, "task")
    for key, own in (("temperature", args.memory_temperature), ("max_tokens", args.memory_max_tokens)):
        if own is None and key in task_given:
            given[key] = task_given[key]
    choice = resolve_lm(
        spec,
        api_base=args.memory_api_base or args.api_base,
        temperature=args.temperature if args.memory_temperature is None else args.memory_temperature,
        max_tokens=args.max_tokens if args.memory_max_tokens is None else args.memory_max_tokens,
        extra=dict(args.memory_lm_args or {}),
        given=given,
        role="memory LM",
    )
    _, choice = with_limits(choice, choice, args)
    return choice


def cell_options(
    program: str | None, level: int | str, task: str, memory: str, directory: Path, args: TableOptions
) -> EvaluateOptions:
    """The options of one accuracy cell: what ``python -m eval <program>`` would be given for it (the table's own
    options where an evaluation has them, the cell's program, level, LMs and directory over them)."""
    state = args.states.get(program) if program else None
    inductive = not isinstance(level, int)
    return EvaluateOptions.from_args(
        args,
        program=program or "",
        level=None if inductive else level,
        task=level if inductive else "experience_transfer",
        lm=task,
        memory_lm=memory if memory != task else None,
        out=directory,
        lm_args=dict(args.lm_args or {}),
        memory_lm_args=dict(args.memory_lm_args or {}),
        rules=str(args.rules) if args.rules else None,
        program_state=Path(state[0]) if state else None,
    )


def accuracy_cell(
    program: str, level: int, task: str, memory: str, cells_dir: Path, args: TableOptions, spend: Spend | None = None
) -> dict[str, Any]:
    """Evaluate one (program, level, LMs) cell with :func:`run_cell`, or read it back (``spend``: the table's limit)."""
    directory = cells_dir / cell_name(program, level, task, memory, args)
    if not _finished(directory):
        inductive = not isinstance(level, int)
        get_task(level if inductive else "experience_transfer").run(
            cell_options(program, level, task, memory, directory, args),
            spend=spend,
        )
    results = _read_json(directory / "results.json")
    accuracy = results["accuracy"]
    ci = headline_ci(results, None if results.get("accuracy_ci") else run_items(directory, results))
    return {
        "value": 100 * accuracy["mean"],
        "std": 100 * accuracy["std"],
        "ci": None if ci is None else [100 * ci[0], 100 * ci[1]],  # 95% CI over scenes (memreason.eval.stats.intervals)
        "examples": results["examples"],
        "tokens": results["tokens"],
        "wall_seconds": results.get("wall_seconds"),
        "cell": str(directory),
        **_rounds(directory),
        **_masked(results),
    }


def _masked(results: dict[str, Any]) -> dict[str, Any]:
    """A Level-3 cell's accuracy on the objects of masked combinations and on the rest, in percent, with their CIs
    and counts (:mod:`.masked`): ``{"masked": {"objects", "scenes", "undecidable_objects"}}``; ``{}`` elsewhere."""
    masked = results.get("masked")
    if not masked:
        return {}

    def percent(cell: dict[str, Any] | None) -> dict[str, Any] | None:
        if not cell or cell.get("accuracy") is None:
            return None
        ci = cell.get("ci")
        return {"value": 100 * cell["accuracy"], "ci": [100 * ci[0], 100 * ci[1]] if ci else None, "n": cell["n"]}

    objects = masked.get("objects")
    undecidable = masked.get("undecidable") or {}
    return {
        "masked": {
            "objects": {k: percent(v) for k, v in objects.items()} if objects else None,
            "scenes": {k: percent(v) for k, v in (masked.get("scenes") or {}).items()},
            "undecidable_objects": undecidable.get("objects"),
            "undecidable": percent(undecidable.get("accuracy")),
        }
    }


def _finished(directory: Path) -> bool:
    """Whether an accuracy cell finished: its results are written, and not those of a run stopped at its spending limit."""
    path = directory / "results.json"
    return path.exists() and not stopped_by_budget(_read_json(path))


def _rounds(directory: Path) -> dict[str, Any]:
    """What a cell's checked memories did, over its runs (``hdr_grounded``'s record, which has rounds of counts):
    ``{"rounds": {"rounds", "nothing_new", "rules", "memories", "empty"}}``; ``{}`` for other programs."""
    records = [_read_json(path) for path in sorted(directory.glob("memory-run*.json"))]
    records = [r for r in records if isinstance(r.get("rounds"), list) and isinstance(r.get("rules"), list)]
    if not records:
        return {}
    rounds = [round_ for record in records for round_ in record["rounds"] if isinstance(round_.get("counts"), dict)]
    return {
        "rounds": {
            "rounds": len(rounds),
            "nothing_new": sum(round_["counts"].get("new") == 0 for round_ in rounds),  # every proposal a repeat, or none
            "rules": sum(len(record["rules"]) for record in records),
            "memories": len(records),
            "empty": sum(not record["rules"] for record in records),  # memories that verified no rule
        }
    }


def f1_cell(
    program: str, level: int, memory: str, cells_dir: Path, args: TableOptions, spend: Spend | None = None
) -> dict[str, Any]:
    """Hypothesis F1 of the memories ``program`` builds at ``level``, one per run.

    A finished accuracy cell with the same memory LM lends its memories; otherwise the
    memories are built here, without answering scenes, one file per run (kept on a crash).
    """
    config = ExperienceTransferConfig(
        program=program, level=level, runs=args.runs, seed=args.seed, rules=str(args.rules) if args.rules else None
    )
    data = config.load_data()
    lender = cells_dir / cell_name(program, level, memory, memory, args)
    directory = cells_dir / f"memory-{cell_name(program, level, memory, memory, args)}"
    files = [lender / f"memory-run{r}.json" for r in range(args.runs)]
    if not all(f.exists() for f in files):
        files = [directory / f"memory-run{r}.json" for r in range(args.runs)]
        missing = [r for r, f in enumerate(files) if not f.exists()]
        if missing:
            _build_memories(program, data, memory, directory, missing, args, spend)
    judge = None
    if args.f1 != "parse":
        judge = memory_lm(args.judge_lm or memory, args)  # a memory-role LM: its settings, its rate limits
        judge = capped(judge, "judge", spend)  # its calls wait for its limiter and count against the table's limit
    scores, spent, wall = [], {"prompt": 0, "completion": 0, "total": 0, "calls": 0}, 0.0
    for f in files:
        record = _read_json(f)
        wall += record.get("wall_seconds") or 0.0  # building the memory; scoring it by parse costs nothing
        score = memory_f1(record, data, args.f1, judge)
        scores.append(score)
        write_json(f.with_name(f.stem + f"-f1-{args.f1}.json"), score)
        for key in spent:
            spent[key] += record.get("tokens", {}).get(key, 0)
    mean, std = mean_std([s["f1"] for s in scores])
    return {
        "value": mean,
        "std": std,
        "precision": mean_std([s["precision"] for s in scores])[0],
        "recall": mean_std([s["recall"] for s in scores])[0],
        "hypotheses": [len(s["hypotheses"]) for s in scores],
        "tokens": {"memory": spent, "task": {key: 0 for key in spent}},
        "wall_seconds": round(wall, 2),
        "cell": str(files[0].parent),
    }


def _build_memories(
    program: str, data, memory_spec: str, directory: Path, runs: list[int], args: TableOptions, spend: Spend | None = None
) -> None:
    memory = memory_lm(memory_spec, args)
    directory.mkdir(parents=True, exist_ok=True)
    _write_memory_config(program, data, memory, directory, args)
    use_response_cache(args.cache or directory / "dspy_cache")
    state = args.states.get(program)
    memorize(program, data, memory, directory, runs, program_state=state[0] if state else None, spend=spend)


def _write_memory_config(program: str, data, memory: LMChoice, directory: Path, args: TableOptions) -> None:
    """A Table 5 memory directory's ``config.json``: the memory LM and the settings it was sent, as a run's config
    records them (``adapted``: what was changed to what its provider takes); written once, when its first memory is."""
    path = directory / "config.json"
    if path.exists():
        return
    config = {
        "program": program,
        "level": getattr(data, "level", None),
        "memory_lm": memory.spec,
        "api_base": args.api_base,
        "memory_api_base": args.memory_api_base,
        "temperature": args.temperature,
        "max_tokens": args.max_tokens,
        "memory_temperature": args.memory_temperature,
        "memory_max_tokens": args.memory_max_tokens,
        "memory_lm_args": dict(args.memory_lm_args or {}),
        "preset": args.preset,
        "lm_config": str(args.lm_config) if args.lm_config else None,
        "runs": args.runs,
        "seed": args.seed,
        "rules": str(args.rules) if args.rules else None,
    }
    adapted = adapted_records(memory, memory)
    if adapted:
        config["adapted"] = adapted
    write_json(path, config)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise TableError(f"cannot read {path}: {exc}") from None
