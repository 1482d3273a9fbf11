"""One ARC task: train pairs (input -> output) and test pairs, checked on the way in.

A grid is a non-empty rectangular list of rows of ints 0-9, at most 30 x 30.
Test outputs may be absent (a task whose answers are hidden); train outputs may not.
Anything else raises :class:`ArcDataError` with one line naming the task and the problem.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memreason.files import read_json_file

Grid = list[list[int]]
MAX_SIDE = 30


class ArcDataError(ValueError):
    """An ARC task file or split that cannot be used as given."""


@dataclass(frozen=True)
class ArcPair:
    input: Grid
    output: Grid | None  # None only for a test pair whose answer is hidden


@dataclass(frozen=True)
class ArcTask:
    id: str
    train: tuple[ArcPair, ...]
    test: tuple[ArcPair, ...]

    @property
    def labelled(self) -> bool:
        """Whether every test output is known (needed for scoring)."""
        return all(pair.output is not None for pair in self.test)

    def to_json(self) -> dict[str, Any]:
        pairs = lambda ps: [{"input": p.input, **({"output": p.output} if p.output is not None else {})} for p in ps]  # noqa: E731
        return {"train": pairs(self.train), "test": pairs(self.test)}

    @classmethod
    def from_json(cls, task_id: str, data: Any) -> "ArcTask":
        """Build and check a task from ARC's JSON shape ``{"train": [...], "test": [...]}``."""
        if not isinstance(data, dict):
            raise ArcDataError(f"task {task_id}: expected a JSON object with 'train' and 'test', got {type(data).__name__}")
        train = _pairs(task_id, data, "train", need_output=True)
        test = _pairs(task_id, data, "test", need_output=False)
        return cls(task_id, train, test)

    @classmethod
    def from_file(cls, path: str | Path) -> "ArcTask":
        path = Path(path)
        data = read_json_file(path, ArcDataError, "ARC task file")
        try:
            return cls.from_json(path.stem, data)
        except ArcDataError as exc:
            raise ArcDataError(f"{path}: {exc}") from None


def _pairs(task_id: str, data: dict, key: str, *, need_output: bool) -> tuple[ArcPair, ...]:
    items = data.get(key)
    if not isinstance(items, list) or not items:
        raise ArcDataError(f"task {task_id}: '{key}' must be a non-empty list of pairs")
    pairs = []
    for i, item in enumerate(items):
        where = f"task {task_id}: {key}[{i}]"
        if not isinstance(item, dict) or "input" not in item:
            raise ArcDataError(f"{where} must be an object with 'input' and 'output'")
        if need_output and item.get("output") is None:
            raise ArcDataError(f"{where} has no 'output'")
        output = item.get("output")
        pairs.append(
            ArcPair(
                check_grid(item["input"], f"{where}.input"), None if output is None else check_grid(output, f"{where}.output")
            )
        )
    return tuple(pairs)


def check_grid(grid: Any, where: str = "grid") -> Grid:
    """``grid`` as a list of lists of ints 0-9, or ArcDataError saying what is wrong."""
    if not isinstance(grid, list) or not grid or not all(isinstance(row, list) and row for row in grid):
        raise ArcDataError(f"{where} must be a non-empty list of non-empty rows")
    width = len(grid[0])
    if any(len(row) != width for row in grid):
        raise ArcDataError(f"{where} is not rectangular")
    if len(grid) > MAX_SIDE or width > MAX_SIDE:
        raise ArcDataError(f"{where} is {len(grid)}x{width}; ARC grids are at most {MAX_SIDE}x{MAX_SIDE}")
    for row in grid:
        for cell in row:
            if isinstance(cell, bool) or not isinstance(cell, int) or not 0 <= cell <= 9:
                raise ArcDataError(f"{where} holds {cell!r}; cells must be ints 0-9")
    return [list(row) for row in grid]
