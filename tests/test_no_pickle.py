"""What the library reads back from disk is data, never a pickle: no library file loads one.

A cache, a run directory, a memory, a program state, a study or a trace someone else made must not be
able to run code, so no source file of the package may call a pickle loader (``pickle``, ``cPickle``,
``_pickle``, ``dill``, ``cloudpickle``, ``joblib``, ``marshal``: ``load(``, ``loads(``, ``Unpickler``),
open a ``shelve``, pass ``allow_pickle=True`` (DSPy's ``Module.load``, ``load_memory_cache``, numpy), or
turn on DSPy's own disk cache of pickles (``enable_disk_cache=True``, ``restrict_pickle``). The check reads
the source text; comments are skipped, docstrings are not (say "unpickle" in prose, not a call).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ("memreason", "signatures", "programs", "datasets", "eval", "optimize")

_LOADERS = r"(?:c?[Pp]ickle|_pickle|dill|cloudpickle|joblib|marshal)"
FORBIDDEN = [
    re.compile(rf"\b{_LOADERS}\s*\.\s*(?:loads?|Unpickler|_loads?|_Unpickler)\b"),
    re.compile(rf"\bfrom\s+{_LOADERS}\s+import\b[^\n]*\b(?:loads?|Unpickler|_loads?)\b"),
    re.compile(r"\bUnpickler\b"),
    re.compile(r"\bshelve\s*\.\s*open\b"),
    re.compile(r"\ballow_pickle\s*=\s*True\b"),
    re.compile(r"[(,]\s*enable_disk_cache\s*=\s*True\b"),
    re.compile(r"\brestrict_pickle\b"),
]

#: Files allowed to open DSPy's pickle cache, and why: none of them reads a file it did not write itself.
EXEMPT = {
    "eval/bench/cache.py": "times DSPy's own cache against ours, on answers it wrote itself in a temporary directory",
}


def library_files() -> list[Path]:
    """Every Python file of the library (not its tests, not the virtual environment)."""
    files = []
    for folder in LIBRARY:
        files += [p for p in sorted((ROOT / folder).rglob("*.py")) if "__pycache__" not in p.parts]
    return files


def pickle_loads(text: str) -> list[tuple[int, str]]:
    """``(line number, line)`` of each line of ``text`` that loads a pickle (comments skipped)."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0]
        if any(pattern.search(code) for pattern in FORBIDDEN):
            found.append((number, line.strip()))
    return found


def test_the_library_is_read_whole():
    files = {p.relative_to(ROOT).as_posix() for p in library_files()}
    assert len(files) > 100 and "memreason/lm/response_cache.py" in files
    assert set(EXEMPT) <= files  # an exemption names a file that exists


def test_no_library_file_loads_a_pickle():
    offenders = [
        f"{path.relative_to(ROOT)}:{number}: {line}"
        for path in library_files()
        if path.relative_to(ROOT).as_posix() not in EXEMPT
        for number, line in pickle_loads(path.read_text())
    ]
    assert not offenders, "a pickle is loaded on a read path:\n" + "\n".join(offenders)


@pytest.mark.parametrize(
    "line",
    [
        "value = pickle.loads(blob)",
        "with open(p, 'rb') as f: state = cloudpickle.load(f)",
        "from dill import loads",
        "class Safe(pickle.Unpickler):",
        "db = shelve.open(path)",
        "program.load(path, allow_pickle=True)",
        "dspy.configure_cache(enable_disk_cache=True, disk_cache_dir=d)",
        "dspy.configure_cache(restrict_pickle=True)",
        "import joblib; m = joblib.load(p)",
    ],
)
def test_the_check_finds_each_kind_of_load(line):
    assert pickle_loads(line)


@pytest.mark.parametrize("line", ["data = json.loads(text)", "# pickle.loads(x) was here", "payload = pickle.dumps(obj)"])
def test_the_check_passes_what_is_no_pickle_load(line):
    assert not pickle_loads(line)
