"""Grid validation: what a program may return, and what may cross a pipe.

A valid grid is a non-empty rectangular 2-D grid of ints 0-9 whose sides are
at most `max_side`. `to_grid` converts a program's return value (nested
lists/tuples of ints or numpy integers, or a 2-D numpy integer array) and
rejects everything else: bools, floats (even integral ones), object arrays,
ragged rows, subclasses of list/tuple/ndarray, empty or oversized grids.
`check_wire_grid` is the strict check for grids decoded from JSON by trusted
code, which never trusts what an untrusted process sent.
"""

from __future__ import annotations

import sys
from typing import Any


class BadGrid(ValueError):
    """The value is not a valid grid; the message says why."""


def to_grid(value: Any, max_side: int) -> list[list[int]]:
    """Convert a program's return value to a list-of-lists grid, or raise `BadGrid`."""
    np = _numpy()
    if np is not None and type(value) is np.ndarray:
        return _array_to_grid(value, max_side)
    if type(value) not in (list, tuple):
        raise BadGrid(f"expected a list of rows or a 2-D integer numpy array, got {_name(value)}")
    if not 1 <= len(value) <= max_side:
        raise BadGrid(f"grid has {len(value)} rows, expected 1..{max_side}")
    rows = [_row(row, index, max_side, np) for index, row in enumerate(value)]
    width = len(rows[0])
    for index, row in enumerate(rows):
        if len(row) != width:
            raise BadGrid(f"ragged grid: row 0 has {width} cells, row {index} has {len(row)}")
    return rows


def check_wire_grid(value: Any, max_side: int) -> list[list[int]]:
    """Return `value` if it is exactly a valid list-of-lists grid of ints, else raise `BadGrid`."""
    if type(value) is not list or not 1 <= len(value) <= max_side:
        raise BadGrid("not a list of 1..max_side rows")
    width = None
    for row in value:
        if type(row) is not list or not 1 <= len(row) <= max_side:
            raise BadGrid("row is not a list of 1..max_side cells")
        if width is None:
            width = len(row)
        elif len(row) != width:
            raise BadGrid("ragged grid")
        for cell in row:
            if type(cell) is not int or not 0 <= cell <= 9:
                raise BadGrid("cell is not an int 0-9")
    return value


def _row(row: Any, index: int, max_side: int, np: Any) -> list[int]:
    if np is not None and type(row) is np.ndarray:
        if row.ndim != 1:
            raise BadGrid(f"row {index} is a {row.ndim}-D array, expected 1-D")
        _check_array(row, f"row {index}")
        cells = row.tolist()
    elif type(row) in (list, tuple):
        cells = [_cell(cell, index, np) for cell in row]
    else:
        raise BadGrid(f"row {index} is {_name(row)}, expected a list")
    if not 1 <= len(cells) <= max_side:
        raise BadGrid(f"row {index} has {len(cells)} cells, expected 1..{max_side}")
    return cells


def _cell(cell: Any, row: int, np: Any) -> int:
    if type(cell) is int:
        value = cell
    elif np is not None and isinstance(cell, np.integer):
        value = int(cell)
    else:
        raise BadGrid(f"row {row} holds {_name(cell)}, expected ints 0-9")
    if not 0 <= value <= 9:
        raise BadGrid(f"row {row} holds {value}, expected ints 0-9")
    return value


def _array_to_grid(array: Any, max_side: int) -> list[list[int]]:
    if array.ndim != 2:
        raise BadGrid(f"array is {array.ndim}-D, expected 2-D")
    rows, cols = array.shape
    if not (1 <= rows <= max_side and 1 <= cols <= max_side):
        raise BadGrid(f"array shape {rows}x{cols}, expected sides 1..{max_side}")
    _check_array(array, "array")
    return array.tolist()


def _check_array(array: Any, what: str) -> None:
    """Integer dtype and values 0-9; `tolist()` then yields plain Python ints."""
    if array.dtype.kind not in "iu":
        raise BadGrid(f"{what} has dtype {array.dtype}, expected an integer dtype")
    if array.size and (array.min() < 0 or array.max() > 9):
        raise BadGrid(f"{what} holds values outside 0-9")


def _name(value: Any) -> str:
    return type(value).__name__


def _numpy() -> Any:
    """numpy if it is loaded: a numpy value cannot exist without it, so never import it."""
    return sys.modules.get("numpy")
