"""The house rules that a reader of the source can check: no import circles (not even through imports inside
functions), imports flowing down the layers (``signatures <- programs <- eval/optimize``, ``datasets`` below them
all), no private name taken from another module, argparse only at the edge, and no task named outside the Tasks
(a string constant equal to a registered task's name, or "inductive"; docstrings do not count).

The import graph is built from the source files with ``ast`` (nothing is imported), over the whole
installed package: every ``.py`` file under the folders pyproject's ``package-dir`` maps to
``memreason.*`` (``eval/x.py`` is ``memreason.eval.x``, ``memreason/lm/y.py`` is ``memreason.lm.y``, a
package's ``__init__.py`` is the package), less the files pyproject ships as package data.

An edge is an import that runs when the module is imported: module level, including under ``if``,
``try``, ``with``, loops and class bodies, but not under ``if TYPE_CHECKING:`` and not inside
functions or methods. ``from pkg import name`` is an edge to ``pkg.name`` when that is a module,
else to ``pkg`` (its ``__init__``); ``import a.b.c`` is an edge to ``a.b.c``. Reaching a submodule also
runs its packages' ``__init__``, but that is no edge: the parent is in ``sys.modules`` before its
submodules are imported, so only a name taken from an ``__init__`` can meet it half-initialised.

The runtime graph adds the imports inside functions and methods (still not those under ``if TYPE_CHECKING:``):
a circle there is one that a function-level import hides, and the layer rules hold for it too.
"""

from __future__ import annotations

import ast
import fnmatch
from dataclasses import dataclass, field
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

#: The command-line layer, the only modules that may import ``argparse`` (fnmatch patterns over module
#: names): the two CLIs and everything below them, every ``__main__`` module, and the benchmark scripts.
#: Below it, code takes typed configs and never sees an ``argparse.Namespace``.
COMMAND_LINE_LAYER = (
    "memreason.eval.cli",
    "memreason.eval.cli.*",
    "memreason.optimize.cli",
    "memreason.optimize.cli.*",
    "*.__main__",
    "memreason.eval.bench",
    "memreason.eval.bench.*",
)

#: Which of our packages a layer must never import, functions included: imports flow
#: ``signatures <- programs <- eval/optimize``, and ``datasets`` depends on nothing of ours but the bottom
#: (``memreason.files``, ``memreason.lm``, ``memreason.sandbox``).
FORBIDDEN_IMPORTS = {
    "memreason.signatures": ("memreason.programs", "memreason.eval", "memreason.optimize"),
    "memreason.programs": ("memreason.eval", "memreason.optimize"),
    "memreason.datasets": ("memreason.programs", "memreason.eval", "memreason.optimize"),
}

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "memreason"


def in_command_line_layer(module: str) -> bool:
    return any(fnmatch.fnmatchcase(module, pattern) for pattern in COMMAND_LINE_LAYER)


# -- the package's modules, from pyproject ------------------------------------------------------------


@dataclass
class Module:
    name: str
    path: Path
    is_package: bool  # an __init__.py: relative imports start from the module itself
    tree: ast.Module = field(repr=False)


def package_modules(root: Path = ROOT) -> dict[str, Module]:
    """Every module of the installed package, by name, read from the folders pyproject maps."""
    config = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {
        name: root / folder
        for name, folder in config.get("package-dir", {}).items()
        if name == PACKAGE or name.startswith(PACKAGE + ".")
    }
    data = config.get("package-data", {})
    claimed = {folder.resolve() for folder in folders.values()}
    modules: dict[str, Module] = {}
    for package, folder in folders.items():
        for path in sorted(folder.rglob("*.py")):
            relative = path.relative_to(folder)
            if any(part == "__pycache__" or part.startswith(".") for part in relative.parts):
                continue
            if any(parent.resolve() in claimed for parent in path.parents if folder in parent.parents):
                continue  # below a folder another package-dir entry maps: named from there
            if any(fnmatch.fnmatch(relative.as_posix(), pattern) for pattern in data.get(package, ())):
                continue  # shipped as data, never imported as ours
            parts = list(relative.with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            name = ".".join([package, *(parts[:-1] if is_package else parts)])
            modules[name] = Module(name, path, is_package, ast.parse(path.read_text(), filename=str(path)))
    return modules


# -- imports ----------------------------------------------------------------------------------------------


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def import_time_statements(tree: ast.Module):
    """The import statements that run when the module is imported."""
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
            continue
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            pending.extend(node.orelse)  # only the branch that runs
            continue
        pending.extend(ast.iter_child_nodes(node))


def all_import_statements(tree: ast.Module):
    """Every import statement, functions and methods included."""
    return (node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom)))


def runtime_import_statements(tree: ast.Module):
    """The import statements that can run: at import time or inside a function or method (not under ``if TYPE_CHECKING:``)."""
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
            continue
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            pending.extend(node.orelse)
            continue
        pending.extend(ast.iter_child_nodes(node))


def _absolute(module: Module, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.name.split(".") if module.is_package else module.name.split(".")[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imported_modules(module: Module, node: ast.Import | ast.ImportFrom, modules: dict[str, Module]) -> set[str]:
    """Our modules an import statement imports (see the module docstring); a name that is none of ours is no edge."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names if alias.name in modules}
    source = _absolute(module, node)
    targets = set()
    for alias in node.names:
        submodule = f"{source}.{alias.name}"
        if submodule in modules:
            targets.add(submodule)
        elif source in modules:
            targets.add(source)
    return targets


def import_graph(modules: dict[str, Module]) -> dict[str, set[str]]:
    return {
        name: set().union(*(imported_modules(module, node, modules) for node in import_time_statements(module.tree)))
        for name, module in modules.items()
    }


def runtime_import_graph(modules: dict[str, Module]) -> dict[str, set[str]]:
    """:func:`import_graph` with the imports inside functions and methods added."""
    return {
        name: set().union(*(imported_modules(module, node, modules) for node in runtime_import_statements(module.tree)))
        for name, module in modules.items()
    }


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    """``importer -> imported`` for every edge that :data:`FORBIDDEN_IMPORTS` rules out."""
    return sorted(
        f"{name} -> {target}"
        for name, targets in graph.items()
        for layer, forbidden in FORBIDDEN_IMPORTS.items()
        if _within(name, layer)
        for target in targets
        if any(_within(target, package) for package in forbidden)
    )


def private_name_imports(modules: dict[str, Module]) -> list[str]:
    """``from x import _name`` where ``x`` is another of our modules (dunder names such as ``__version__`` are public)."""
    found = []
    for name, module in modules.items():
        for node in runtime_import_statements(module.tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            source = _absolute(module, node)
            if source not in modules and not any(f"{source}.{alias.name}" in modules for alias in node.names):
                continue  # not ours
            for alias in node.names:
                private = alias.name.startswith("_") and not (alias.name.startswith("__") and alias.name.endswith("__"))
                if private and f"{source}.{alias.name}" not in modules and source != name:
                    found.append(f"{name}: from {source} import {alias.name} (line {node.lineno})")
    return sorted(found)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (a -> ... -> a) per strongly connected component that has one (Tarjan's algorithm)."""
    return [_a_cycle(component, graph) for component in circular_components(graph)]


def circular_components(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components with a cycle: the modules that import each other, directly or not."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def connect(node: str) -> None:  # recursive: our graph is a few hundred modules deep at most
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph.get(node, ()):
                components.append(component)

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return sorted(components, key=min)


def _a_cycle(component: set[str], graph: dict[str, set[str]]) -> list[str]:
    """A shortest cycle through the component's first module, by breadth-first search."""
    start = min(component)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in sorted(graph[node] & component):
                if target == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if target not in came_from:
                    came_from[target] = node
                    following.append(target)
        frontier = following
    raise AssertionError(f"no cycle in {component}")


# -- the rules ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def modules() -> dict[str, Module]:
    return package_modules()


def test_the_package_is_read_whole(modules):
    for name in (
        "memreason",
        "memreason.lm",
        "memreason.sandbox.bootstrap",
        "memreason.eval",
        "memreason.programs",
        "memreason.signatures",
        "memreason.datasets",
        "memreason.optimize",
    ):
        assert name in modules, f"{name} not found: is pyproject's package-dir read right?"
    assert not any(".seed_solutions." in name for name in modules)  # package data, not modules


def test_no_import_circles(modules):
    graph = import_graph(modules)
    found = [(_a_cycle(component, graph), component) for component in circular_components(graph)]
    assert not found, "import circles (module-level imports):\n" + "\n".join(
        "  "
        + " -> ".join(cycle)
        + (f"   (the same circle also holds {', '.join(sorted(component - set(cycle)))})" if component - set(cycle) else "")
        for cycle, component in found
    )


def test_no_import_circles_even_through_imports_inside_functions(modules):
    graph = runtime_import_graph(modules)
    found = [_a_cycle(component, graph) for component in circular_components(graph)]
    assert not found, (
        "import circles once the imports inside functions are counted (move the shared piece into the lower "
        "module or a new one):\n" + "\n".join("  " + " -> ".join(cycle) for cycle in found)
    )


def test_imports_flow_down_the_layers(modules):
    offenders = layer_violations(runtime_import_graph(modules))
    assert not offenders, (
        "imports against the layers (FORBIDDEN_IMPORTS in tests/test_architecture.py; functions included):\n"
        + "\n".join("  " + edge for edge in offenders)
    )


def test_no_private_name_is_imported_from_another_module(modules):
    offenders = private_name_imports(modules)
    assert not offenders, (
        "private names imported from another module (make the name public where it is shared, or move the code "
        "to where it is used):\n" + "\n".join("  " + line for line in offenders)
    )


def test_only_the_command_line_layer_imports_argparse(modules):
    offenders = sorted(
        name
        for name, module in modules.items()
        if not in_command_line_layer(name)
        and any(
            (isinstance(node, ast.Import) and any(a.name.split(".")[0] == "argparse" for a in node.names))
            or (isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "argparse")
            for node in all_import_statements(module.tree)
        )
    )
    assert not offenders, (
        "argparse is imported outside the command-line layer (COMMAND_LINE_LAYER in "
        "tests/test_architecture.py) by: " + ", ".join(offenders)
    )


#: The modules that may name a task: the Tasks themselves (fnmatch patterns over module names). Everywhere else a
#: run's task is found with ``memreason.eval.tasks.task_of`` and asked (its unit, its scores, what ``show`` prints).
TASK_MODULES = (
    "memreason.eval.experience_transfer",
    "memreason.eval.experience_transfer.*",
    "memreason.eval.arc",
    "memreason.eval.arc.*",
    "memreason.eval.inductive",
    "memreason.eval.inductive.*",
    "memreason.eval.tasks",
    "memreason.eval.tasks.*",
)
#: The library modules held to it: the viewers, harness and CLIs of ``eval``, the tuners, programs, signatures,
#: and the package's own modules (``datasets`` is the data of the tasks, and names them).
HELD_TO_TASKS = ("memreason", "memreason.eval", "memreason.eval.*", "memreason.optimize", "memreason.optimize.*")
HELD_TO_TASKS += ("memreason.programs", "memreason.programs.*", "memreason.signatures", "memreason.signatures.*")
HELD_TO_TASKS += ("memreason.lm", "memreason.lm.*", "memreason.sandbox", "memreason.sandbox.*")
OTHER_TASK_WORDS = ("inductive",)  # a family of tasks, named as one


def docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring constants in ``tree`` (a module's, class's or function's first string)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                found.add(id(first.value))
    return found


def task_names_used(tree: ast.AST, names: set[str]) -> list[tuple[int, str]]:
    """(line, name) of each string constant in ``tree`` that is one of ``names`` (docstrings do not count)."""
    skip = docstrings(tree)
    return sorted(
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names and id(node) not in skip
    )


def held_to_tasks(module: str) -> bool:
    return any(fnmatch.fnmatchcase(module, p) for p in HELD_TO_TASKS) and not any(
        fnmatch.fnmatchcase(module, p) for p in TASK_MODULES
    )


def task_name_offenders(modules: dict[str, Module]) -> list[str]:
    from memreason.eval.tasks import task_names

    names = set(task_names()) | set(OTHER_TASK_WORDS)
    return [
        f"{module.path.relative_to(ROOT)}:{line}: {value!r}"
        for name, module in sorted(modules.items())
        if held_to_tasks(name)
        for line, value in task_names_used(module.tree, names)
    ]


def test_nothing_outside_the_tasks_names_a_task(modules):
    offenders = task_name_offenders(modules)
    assert not offenders, (
        "a task is named outside the Tasks (ask the run's Task, memreason.eval.tasks.task_of, instead):\n  "
        + "\n  ".join(offenders)
    )


def test_the_task_name_scan_reads_values_not_words():
    tree = ast.parse(
        '"""A module about arc."""\n'
        "def f(config):\n"
        '    """Reads an arc run."""\n'
        '    x = "arc"  # arc\n'
        '    return config.get("task") == "acre" or "split" in config or f"{x} arc"\n'
    )
    assert task_names_used(tree, {"arc", "acre"}) == [(4, "arc"), (5, "acre")]
    assert held_to_tasks("memreason.eval.show") and held_to_tasks("memreason.optimize.tune")
    assert not held_to_tasks("memreason.eval.arc.tables") and not held_to_tasks("memreason.eval.tasks.registry")
    assert not held_to_tasks("memreason.datasets.arc")


# -- the graph builder itself, on a made-up package ------------------------------------------------------------


def test_the_graph_counts_what_runs_at_import_and_nothing_else(tmp_path):
    files = {
        "pyproject.toml": '[tool.setuptools.package-dir]\n"memreason" = "pkg"\n"memreason.tools" = "tools"\n'
        '[tool.setuptools.package-data]\n"memreason" = ["data/*.py"]\n',
        "pkg/__init__.py": "from . import a\nfrom .b import thing\n",
        "pkg/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import c\nelse:\n    import json\n"
        "def later():\n    from . import c\n"
        "class K:\n    from memreason.tools import x\n",
        "pkg/b.py": "try:\n    from .sub import deep\nexcept ImportError:\n    deep = None\nthing = 1\n",
        "pkg/c.py": "import memreason.sub.deep\nimport memreason.gone\nfrom .moved import it\n",
        "pkg/sub/__init__.py": "from .. import c\n",
        "pkg/sub/deep.py": "from memreason import b, thing\n",
        "pkg/data/solution.py": "import memreason\n",
        "tools/x.py": "if True:\n    from ..sub.deep import name\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    modules = package_modules(tmp_path)
    assert sorted(modules) == [
        "memreason",
        "memreason.a",
        "memreason.b",
        "memreason.c",
        "memreason.sub",
        "memreason.sub.deep",
        "memreason.tools.x",
    ]
    assert import_graph(modules) == {
        "memreason": {"memreason.a", "memreason.b"},
        "memreason.a": {"memreason.tools.x"},  # not c: TYPE_CHECKING and a function
        "memreason.b": {"memreason.sub.deep"},
        "memreason.c": {"memreason.sub.deep"},
        "memreason.sub": {"memreason.c"},
        "memreason.sub.deep": {"memreason", "memreason.b"},  # `thing` is a name in memreason's __init__
        "memreason.tools.x": {"memreason.sub.deep"},
    }
    assert cycles(import_graph(modules)) == [["memreason", "memreason.b", "memreason.sub.deep", "memreason"]]
    assert in_command_line_layer("memreason.eval.cli.arc") and in_command_line_layer("memreason.lm.stub_server.__main__")
    assert not in_command_line_layer("memreason.eval.client") and not in_command_line_layer("memreason.eval.harness.options")


def test_the_runtime_graph_the_layers_and_private_names_on_a_made_up_package(tmp_path):
    files = {
        "pyproject.toml": '[tool.setuptools.package-dir]\n"memreason" = "pkg"\n"memreason.programs" = "programs"\n'
        '"memreason.eval" = "eval"\n"memreason.datasets" = "datasets"\n',
        "pkg/__init__.py": "__version__ = '1'\n",
        "programs/__init__.py": "",
        "programs/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from memreason.eval import m\n"
        "def later():\n    from memreason.eval.m import score\n",
        "eval/__init__.py": "",
        "eval/m.py": "from memreason.programs import a\nfrom memreason import __version__\nscore = 1\n",
        "datasets/__init__.py": "",
        "datasets/x.py": "from .y import _shared, public\nfrom json import _default_decoder\n",
        "datasets/y.py": "_shared = public = 1\ndef f():\n    from . import x\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    modules = package_modules(tmp_path)
    assert cycles(import_graph(modules)) == []  # the circles below run only inside functions
    runtime = runtime_import_graph(modules)
    assert runtime["memreason.programs.a"] == {"memreason.eval.m"}  # the function's import, not TYPE_CHECKING's
    assert cycles(runtime) == [
        ["memreason.datasets.x", "memreason.datasets.y", "memreason.datasets.x"],
        ["memreason.eval.m", "memreason.programs.a", "memreason.eval.m"],
    ]
    assert layer_violations(runtime) == ["memreason.programs.a -> memreason.eval.m"]
    assert private_name_imports(modules) == ["memreason.datasets.x: from memreason.datasets.y import _shared (line 1)"]


#: Where a library program's name may be written besides its registration: modules that name the programs they
#: measure, tabulate or compile by default, as data: the benchmarks, the papers' tables (their rows) and the demo
#: that fills them, ARC's memory seeding (the writer of each memory format, the solver), and the consolidators
#: ``compile consolidator`` compiles.
PROGRAM_NAME_ALLOWED = (
    "memreason.eval.bench",
    "memreason.eval.bench.*",
    "memreason.eval.experience_transfer.table_specs",
    "memreason.eval.experience_transfer.demo",
    "memreason.eval.arc.seeding",
    "memreason.optimize.choices",
    "memreason.optimize.consolidator",
    "memreason.optimize.cli.compile",
)
#: Program names that are also words of another vocabulary, not checked: a memory format ("cheatsheet", the memory
#: ArcMemo's cheatsheet keeps) and the reasoner's memory ("episodic", its episodes).
PROGRAM_NAME_WORDS = ("cheatsheet", "episodic")


def test_a_self_registered_program_is_named_only_where_it_registers(modules):
    """Every program of the library registers itself on its class (``register_program``): its name is written there
    and nowhere else in the library (the commands, tables and viewers ask the registry), the benchmarks' defaults
    aside; the registry lists none (no literal of programs), only the modules it reads them from."""
    from importlib.util import resolve_name

    from memreason.programs.registry import PROGRAMS, SELF_REGISTERED

    home = {}
    for name, spec in PROGRAMS.items():
        module = spec.program.path.partition(":")[0] if spec.program is not None else ""
        module = resolve_name(module, spec.program.package) if module.startswith(".") else module
        if any(module == resolve_name(m, "memreason.programs") for m in SELF_REGISTERED):
            home[name] = module
    assert sorted(home) == sorted(PROGRAMS) and len(home) >= 33  # every program of the library, none named apart
    offenders = [
        f"{module.path.relative_to(ROOT)}:{line}: {value!r}"
        for name, module in sorted(modules.items())
        if not any(fnmatch.fnmatchcase(name, p) for p in PROGRAM_NAME_ALLOWED)
        for line, value in task_names_used(module.tree, set(home) - set(PROGRAM_NAME_WORDS))
        if home[value] != name
    ]
    assert not offenders, "a self-registered program is named outside its class:\n  " + "\n  ".join(offenders)
