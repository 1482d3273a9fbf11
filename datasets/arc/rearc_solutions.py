"""re-ARC's verifier programs as seed solutions: read from the installed ``reasoning-gym`` at run time.

    verifier_ids()                  # the ARC-AGI-1 training task ids that have a verifier (400)
    verifier_source("007bbfb7")     # 'def verify_007bbfb7(I: Grid) -> Grid: ...'
    runnable_program("007bbfb7")    # the DSL's source + the verifier + transform(grid), for the sandbox
    dsl_reference(source)           # signature and docstring of each DSL primitive/constant the source uses
    abstraction_text("007bbfb7")    # what a concept abstractor is shown: the verifier, then that reference
    dsl_text(source)                # the same for any program written in the DSL

re-ARC (Hodel, 2024) wrote one verifier per ARC-AGI-1 training task in a small DSL of grid
primitives (``reasoning_gym/arc/rearc_utils/dsl.py``, self-contained). Both files are located
with :func:`importlib.util.find_spec` and read as text, without importing ``reasoning_gym``
(whose package import loads every dataset). In :func:`abstraction_text` the verifier is named
``transform``, so nothing shown names the task.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from functools import lru_cache
from pathlib import Path

from .tasks import ArcDataError

__all__ = [
    "abstraction_text",
    "dsl_primitives",
    "dsl_reference",
    "dsl_text",
    "runnable_program",
    "verifier_ids",
    "verifier_source",
]

_PREFIX = "verify_"


@lru_cache(maxsize=1)
def _folder() -> Path:
    spec = importlib.util.find_spec("reasoning_gym")
    locations = list(spec.submodule_search_locations or []) if spec else []
    folder = Path(locations[0]) / "arc" / "rearc_utils" if locations else None
    if folder is None or not (folder / "verifiers.py").is_file() or not (folder / "dsl.py").is_file():
        raise ArcDataError("re-ARC's verifiers need reasoning-gym (pip install 'memreason[gym]')")
    return folder


@lru_cache(maxsize=1)
def _verifiers() -> dict[str, str]:
    """Task id -> the source of its ``verify_<id>`` function, in the file's order."""
    text = (_folder() / "verifiers.py").read_text()
    lines = text.splitlines()  # (ast.get_source_segment splits the whole file again for each function)
    return {
        node.name.removeprefix(_PREFIX): "\n".join(lines[node.lineno - 1 : node.end_lineno])
        for node in ast.parse(text).body
        if isinstance(node, ast.FunctionDef) and node.name.startswith(_PREFIX)
    }


@lru_cache(maxsize=1)
def _dsl() -> tuple[str, dict[str, str], dict[str, str], dict[str, str]]:
    """The DSL's source and, by name, its primitives (signature and docstring), constants and type aliases."""
    text = (_folder() / "dsl.py").read_text()
    primitives, constants, types = {}, {}, {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef):
            returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
            doc = (ast.get_docstring(node) or "").strip().splitlines()
            primitives[node.name] = f"{node.name}({ast.unparse(node.args)}){returns}" + (f"  # {doc[0]}" if doc else "")
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name, value = node.targets[0].id, ast.unparse(node.value)
            try:
                ast.literal_eval(node.value)
                constants[name] = f"{name} = {value}"
            except ValueError:
                types[name] = f"{name} = {value}"
    return text, primitives, constants, types


def dsl_primitives() -> frozenset[str]:
    """The names of the DSL's primitives (its functions)."""
    return frozenset(_dsl()[1])


def verifier_ids() -> tuple[str, ...]:
    """The task ids (ARC-AGI-1 training) that re-ARC has a verifier for."""
    return tuple(_verifiers())


def verifier_source(task_id: str) -> str:
    """The source of re-ARC's ``verify_<task_id>(I: Grid) -> Grid`` (a plain ARC id; ArcDataError if there is none)."""
    try:
        return _verifiers()[task_id]
    except KeyError:
        raise ArcDataError(f"re-ARC has no verifier for task {task_id!r} (only ARC-AGI-1 training tasks have one)") from None


def runnable_program(task_id: str) -> str:
    """A self-contained program defining ``transform(grid)`` (lists of rows in and out): the DSL's source,
    the verifier, and a wrapper converting to and from the DSL's tuples of rows."""
    source = verifier_source(task_id)
    return (
        f"{_dsl()[0]}\n\n{source}\n\n\n"
        "def transform(grid):\n"
        f"    return [list(row) for row in {_PREFIX}{task_id}(tuple(tuple(row) for row in grid))]\n"
    )


def _used(source: str) -> list[str]:
    """The names ``source`` reads, in order of first use."""
    nodes = sorted(
        (n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)),
        key=lambda n: (n.lineno, n.col_offset),
    )
    return list(dict.fromkeys(n.id for n in nodes))


def dsl_reference(source: str) -> str:
    """One line per DSL primitive (signature  # docstring) and constant that ``source`` uses, in order
    of first use, after the type aliases those signatures name (with the aliases they are built from)."""
    _, primitives, constants, types = _dsl()
    used = _used(source)
    lines = [constants[n] for n in used if n in constants] + [primitives[n] for n in used if n in primitives]
    named, todo = [], [n for line in lines for n in re.findall(r"\w+", line.partition("  # ")[0])]
    while todo:  # the aliases named, and those they are built from
        name = todo.pop(0)
        if name in types and name not in named:
            named.append(name)
            todo.extend(re.findall(r"\w+", types[name].partition(" = ")[2]))
    order = list(types)
    return "\n".join([types[n] for n in sorted(named, key=order.index)] + lines)


def abstraction_text(task_id: str) -> str:
    """What a concept abstractor is shown as the solution: the verifier, named ``transform``, as :func:`dsl_text`."""
    source = verifier_source(task_id)
    return dsl_text(source.replace(f"def {_PREFIX}{task_id}(", "def transform(", 1))


def dsl_text(source: str) -> str:
    """A program in the DSL as an abstractor is shown it: the program, then a short header and the
    :func:`dsl_reference` of what it uses."""
    header = (
        "# The program above is written in a small library (DSL) of grid primitives: a grid is a tuple of rows,\n"
        "# each a tuple of colours 0-9; transform(I) returns the output grid. The types, constants and\n"
        "# primitives it uses (signature  # what it does):"
    )
    return f"{source.strip()}\n\n{header}\n{dsl_reference(source)}\n"
