"""ARC Prize submission files from a run, and a submission scored as the ARC Prize scores it.

    tasks = run_tasks("runs/arcmemo_ps-val100-...")             # the tasks the run was given
    submission = to_submission("runs/arcmemo_ps-val100-...", tasks)   # {task id: [{"attempt_1": grid, "attempt_2": grid}, ...]}
    to_submission(records, tasks, pick="vote", run=None)        # the two most frequent predictions of every run's attempts
    write_submission(submission, "submission.json")
    found = score_submission(read_submission("submission.json"), tasks)   # found.score, found.per_task

The format is the ARC Prize's: for every task id, one object per test input, in order, with
``attempt_1`` and ``attempt_2``, each a grid. ``pick="first"`` (default) submits the first
two attempts' final test outputs (the program each attempt ended on: what a run could submit
without the test labels); ``pick="vote"`` the two most frequent distinct predictions over the
attempts (ties: the earlier attempt first). A missing prediction (no attempt, a program that
crashed on that input) is submitted as ``[[0]]``. ``run`` picks one repetition of the run
(default 0); ``None`` pools every repetition's attempts, run-major.

A task's score is the fraction of its test inputs whose answer equals ``attempt_1`` or
``attempt_2`` (the official metric); a submission's is the mean over tasks. It equals the
run's ``official_score`` (one run, ``pick="first"``) unless a retry undid a right program: the
run's score credits an attempt with a test pair any of its programs got (as the paper's release
scores), a submission carries only its last program's outputs.

A file that is not JSON, whose task ids differ from the task set's, whose test-input count
for a task differs, or whose attempts are not grids is refused with one line
(:class:`ArcDataError`).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence

from memreason.datasets.arc import GENERATED_SPLITS, ArcDataError, ArcTask, check_grid, load_split
from memreason.files import read_json_file

from ..harness.resume import read_examples
from ..harness.runs import write_json

__all__ = [
    "MISSING",
    "SubmissionScore",
    "read_submission",
    "run_tasks",
    "score_submission",
    "to_submission",
    "write_submission",
]

MISSING: list[list[int]] = [[0]]  # what a missing prediction is submitted as
ATTEMPTS = ("attempt_1", "attempt_2")
GENERATION_KEYS = ("seed", "size", "families", "exclude_families", "difficulty")

Pick = Literal["first", "vote"]


def run_tasks(run_dir: Path | str) -> list[ArcTask]:
    """The tasks an ARC run was given, from its ``config.json`` (split, task ids, a generated split's knobs)."""
    path = Path(run_dir) / "config.json"
    try:
        config = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ArcDataError(f"cannot read {path}: {exc}") from None
    if not isinstance(config, dict) or "split" not in config:
        raise ArcDataError(f"{path} is not the config of an ARC run")
    knobs = {key: config.get(key) for key in GENERATION_KEYS} if config["split"] in GENERATED_SPLITS else {}
    return load_split(config["split"], ids=config.get("task_ids") or config.get("tasks"), limit=config.get("limit"), **knobs)


def to_submission(
    source: Path | str | Sequence[Mapping[str, Any]],
    tasks: Sequence[ArcTask],
    *,
    pick: Pick = "first",
    run: int | None = 0,
) -> dict[str, list[dict[str, Any]]]:
    """The submission of a run (its directory, or its task records) for ``tasks``, in the ARC Prize's format.

    Raises :class:`ArcDataError` when a task has no record in the run (repetition ``run``)."""
    if pick not in ("first", "vote"):
        raise ValueError(f"pick must be 'first' or 'vote', got {pick!r}")
    records = _records(source)
    runs = sorted({r for r, _ in records}) if run is None else [run]
    out: dict[str, list[dict[str, Any]]] = {}
    for task in tasks:
        found = [records[(r, task.id)] for r in runs if (r, task.id) in records]
        if len(found) < len(runs) or not found:
            where = "any run" if run is None else f"run {run}"
            raise ArcDataError(f"no record of task {task.id} in {where} of the run (an unfinished run?)")
        predictions = [attempt for record in found for attempt in _predictions(record)]
        out[task.id] = [
            dict(zip(ATTEMPTS, _two([p[t] if t < len(p) else None for p in predictions], pick))) for t in range(len(task.test))
        ]
    return out


def write_submission(submission: Mapping[str, Any], path: Path | str) -> Path:
    """Write ``submission`` as JSON (atomically); its path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, dict(submission))
    return path


def read_submission(path: Path | str) -> Any:
    """A submission file's JSON (checked against a task set by :func:`score_submission`)."""
    return read_json_file(path, ArcDataError, "submission")


@dataclass(frozen=True)
class SubmissionScore:
    """A submission's official score over a task set: the mean over tasks, and each task's."""

    score: float
    per_task: dict[str, float]

    def as_dict(self) -> dict[str, Any]:
        return {"score": self.score, "tasks": len(self.per_task), "per_task": dict(self.per_task)}


def score_submission(submission: Any, tasks: Sequence[ArcTask]) -> SubmissionScore:
    """Score ``submission`` (a submission file's JSON) against ``tasks``: per task, the fraction of test inputs
    whose answer is ``attempt_1`` or ``attempt_2``. Raises :class:`ArcDataError` (one line) when it is not a
    submission of exactly these tasks."""
    _check(submission, tasks)
    per_task = {
        task.id: sum(
            pair.output in (entry["attempt_1"], entry["attempt_2"]) for pair, entry in zip(task.test, submission[task.id])
        )
        / len(task.test)
        for task in tasks
    }
    return SubmissionScore(sum(per_task.values()) / len(per_task) if per_task else 0.0, per_task)


def _records(source: Path | str | Sequence[Mapping[str, Any]]) -> dict[tuple[int, str], Mapping[str, Any]]:
    if isinstance(source, (str, Path)):
        path = Path(source)
        examples = (path if path.is_dir() else path.parent) / "examples.jsonl"
        if not examples.exists():
            raise ArcDataError(f"no examples.jsonl in {examples.parent}: not an ARC run directory")
        return read_examples(examples, repair=False)
    return {(int(r.get("run", 0)), str(r["id"])): r for r in source}  # a later record of a task wins, as on disk


def _predictions(record: Mapping[str, Any]) -> list[list[Any]]:
    """Each attempt's final test outputs (None where its program gave none)."""
    if "predictions" in record:
        return [list(p or []) for p in record["predictions"]]
    return [[c.get("output") for c in (a.get("steps") or [{}])[-1].get("test") or []] for a in record.get("attempts") or []]


def _two(candidates: list[Any], pick: str) -> list[Any]:
    """Two grids from one test input's candidates in attempt order: the first two, or the two most frequent distinct."""
    valid = [c if _grid(c) else None for c in candidates]
    if pick == "first":
        chosen = valid[:2]
    else:
        keys = [json.dumps(c) for c in valid if c is not None]
        order = {key: i for i, key in reversed(list(enumerate(keys)))}  # first appearance
        counts = Counter(keys)
        chosen = [json.loads(key) for key in sorted(counts, key=lambda key: (-counts[key], order[key]))[:2]]
    chosen += [None] * (2 - len(chosen))
    return [c if c is not None else [list(row) for row in MISSING] for c in chosen]


def _grid(value: Any) -> bool:
    try:
        check_grid(value)
    except ArcDataError:
        return False
    return True


def _check(submission: Any, tasks: Sequence[ArcTask]) -> None:
    hidden = next((t.id for t in tasks if not t.labelled), None)
    if hidden:
        raise ArcDataError(f"task {hidden} has no test outputs, so a submission cannot be scored on it")
    if not isinstance(submission, dict):
        raise ArcDataError("a submission is a JSON object of task ids")
    ids, given = {t.id for t in tasks}, set(submission)
    if ids != given:
        missing, extra = sorted(ids - given), sorted(given - ids)
        what = "; ".join(
            f"{len(names)} {kind} (e.g. {names[0]})"
            for names, kind in ((missing, "missing"), (extra, "not in the task set"))
            if names
        )
        raise ArcDataError(f"the submission's task ids differ from the task set's: {what}")
    for task in tasks:
        entries = submission[task.id]
        if not isinstance(entries, list) or len(entries) != len(task.test):
            count = len(entries) if isinstance(entries, list) else "no list of"
            raise ArcDataError(f"task {task.id}: the submission has {count} test inputs, the task {len(task.test)}")
        for t, entry in enumerate(entries):
            if not isinstance(entry, dict) or not set(ATTEMPTS) <= set(entry):
                raise ArcDataError(f"task {task.id}, test input {t}: needs an object with attempt_1 and attempt_2")
            for name in ATTEMPTS:
                check_grid(entry[name], f"task {task.id}, test input {t}, {name}")
