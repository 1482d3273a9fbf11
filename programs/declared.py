"""The library's own programs that register themselves, read from their modules' source without importing them.

    found = declared((".stream.fewshot",), "memreason.programs")
    found[0].name, found[0].path, found[0].facts     # "fewshot", ".stream.fewshot:FewShot", {"kind": "stream", ...}

A class of the library decorated with ``register_program`` (:mod:`memreason.programs.registry`) says what it is
on itself; listing the programs must not import DSPy (the command line starts without it), so the registry
reads those class attributes here, from the module's syntax tree, as the decorator reads them from the class
once it is imported (a test holds the two equal). What is read must be a literal (a string, a number, a tuple,
a dict of them) or one of the kinds' constants (``STREAM``, ...); a base class is followed through the module's
own relative imports. No DSPy, nothing of ours imported.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from importlib.util import find_spec, resolve_name
from pathlib import Path
from typing import Any

__all__ = ["Declared", "DeclarationError", "NotRead", "declared"]

DECORATOR = "register_program"
CONSTANTS = {"SCENES": "scenes", "GRIDS": "grids", "PROBLEMS": "problems", "STREAM": "stream", "None": None}


class DeclarationError(ValueError):
    """A library class whose declaration cannot be read without importing it (a library bug, one line)."""


@dataclass(frozen=True)
class Declared:
    """One registration read from source: the name the decorator gives (None: the class's), the class
    (``".module:Class"``, relative to the package), its attributes (``facts``: its bases' beneath its own; ``own``:
    its own alone), its docstring, the knobs the decorator fixes and the facts it gives."""

    name: str | None
    path: str
    class_name: str
    facts: dict[str, Any] = field(default_factory=dict)
    own: dict[str, Any] = field(default_factory=dict)  # the class's own attributes (name, summary are never inherited)
    doc: str | None = None
    knobs: dict[str, Any] = field(default_factory=dict)
    given: dict[str, Any] = field(default_factory=dict)  # the decorator's keywords (name and knobs apart)


def declared(modules: tuple[str, ...], package: str) -> list[Declared]:
    """Each registration of ``modules`` (relative to ``package``), in order: module by module, class by class, a
    class's decorators from the innermost out (the order they run in)."""
    found = []
    for module in modules:
        absolute = resolve_name(module, package)
        tree = _tree(absolute)
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            calls = [d for d in reversed(node.decorator_list) if _decorator(d)]
            if not calls:
                continue
            facts = _class_facts(absolute, node.name)
            own = _own(node, absolute)
            for call in calls:
                given = {k.arg: _value(k.value, absolute) for k in getattr(call, "keywords", []) if k.arg}
                knobs = given.pop("knobs", None) or {}
                name = given.pop("name", None)
                found.append(
                    Declared(
                        name,
                        f"{module}:{node.name}",
                        node.name,
                        facts,
                        own,
                        ast.get_docstring(node),
                        dict(knobs),
                        given,
                    )
                )
    return found


def _decorator(node: ast.expr) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    return (isinstance(target, ast.Name) and target.id == DECORATOR) or (
        isinstance(target, ast.Attribute) and target.attr == DECORATOR
    )


@lru_cache(maxsize=None)  # a base's module is read once, however many classes it is beneath
def _tree(module: str) -> ast.Module:
    path = _source(module)
    if path is None:
        raise DeclarationError(f"{module}: no such module among the self-registered programs")
    return ast.parse(path.read_text(encoding="utf-8"))


def _source(module: str) -> Path | None:
    """The file of ``module``, found from its nearest package already imported: importing a package on the way (as
    ``find_spec`` does for a submodule's parents) would run its ``__init__``, which may import the very classes
    being read and register them first."""
    parts = module.split(".")
    for depth in range(len(parts) - 1, 0, -1):
        package = sys.modules.get(".".join(parts[:depth]))
        if package is not None and getattr(package, "__path__", None):
            folders = [Path(p) for p in package.__path__]
            for part in parts[depth:-1]:
                folders = [folder / part for folder in folders]
            for folder in folders:
                for candidate in (folder / f"{parts[-1]}.py", folder / parts[-1] / "__init__.py"):
                    if candidate.is_file():
                        return candidate
            return None
    spec = find_spec(module)
    return Path(spec.origin) if spec is not None and spec.origin is not None else None


def _own(node: ast.ClassDef, module: str) -> dict[str, Any]:
    """The class's own attributes assigned in its body (``x = ...`` or ``x: T = ...``)."""
    own = {}
    for statement in node.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name):
            target, value = statement.targets[0].id, statement.value
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and statement.value is not None:
            target, value = statement.target.id, statement.value
        else:
            continue
        try:
            own[target] = _value(value, module)
        except DeclarationError:
            own[target] = NotRead(f"{module}:{node.name}.{target}")
    return own


@dataclass(frozen=True)
class NotRead:
    """An attribute whose value is no literal (e.g. a class): fine unless it is a fact the registry reads."""

    where: str


def _value(node: ast.expr, module: str) -> Any:
    if isinstance(node, ast.Name) and node.id in CONSTANTS:
        return CONSTANTS[node.id]
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise DeclarationError(f"{module}: {ast.unparse(node)} is no literal; a self-registered class's facts must be") from None


def _class_facts(module: str, name: str) -> dict[str, Any]:
    """The attributes of the class ``name`` of ``module`` with its bases' (followed through relative imports)
    beneath them, the first base's first."""
    tree = _tree(module)
    node = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)
    if node is None:
        raise DeclarationError(f"{module}: no class {name}")
    facts: dict[str, Any] = {}
    for base in reversed(node.bases):
        where = _where(tree, module, base)
        if where is not None:
            facts.update(_class_facts(*where))
    facts.update(_own(node, module))
    return facts


def _where(tree: ast.Module, module: str, base: ast.expr) -> tuple[str, str] | None:
    """The module and class a base names: one of this module's classes or a relative import's (None: a class from
    elsewhere, e.g. ``dspy.Module``, whose attributes the registry does not read)."""
    if not isinstance(base, ast.Name):
        return None
    if any(isinstance(n, ast.ClassDef) and n.name == base.id for n in tree.body):
        return module, base.id
    for statement in tree.body:
        if isinstance(statement, ast.ImportFrom) and statement.level:
            for alias in statement.names:
                if (alias.asname or alias.name) == base.id:
                    package = module.rpartition(".")[0]
                    return resolve_name("." * statement.level + (statement.module or ""), package), alias.name
    return None
