"""The documents stay true: the site builds with --strict, and every Python example in it runs.

Convention (docs/index.md, "Building this site"): every ```python block of README.md and
docs/**/*.md runs, as written, in a fresh working directory, unless the line before it is an
HTML comment ``<!-- not run: REASON -->``; a block that is not run still has to compile and
its imports still have to resolve. A ```text title="Output" block right after an example is
exactly what the example prints (DSPy's own "Bootstrapped ..." progress line left out).
Examples that need an LM run on DSPy's DummyLM.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
NOT_RUN = re.compile(r"^<!-- not run: (?P<reason>\S.*?) -->$")
OUTPUT_FENCE = '```text title="Output"'
INTERNAL = re.compile(r"\bissue #?[0-9]+|this session|earlier session|\bsession [0-9]", re.IGNORECASE)


@dataclass(frozen=True)
class Example:
    document: Path
    line: int  # 1-based line of the opening fence
    code: str
    not_run: str | None  # the reason, when the block is marked not to run
    output: str | None  # the block titled "Output" that follows it, if any

    @property
    def name(self) -> str:
        return f"{self.document.relative_to(ROOT)}:{self.line}"


def _fence_end(lines: list[str], start: int) -> int:
    for end in range(start + 1, len(lines)):
        if lines[end].startswith("```"):
            return end
    raise AssertionError(f"unclosed code block at line {start + 1}")


def examples(document: Path) -> list[Example]:
    lines = document.read_text(encoding="utf-8").splitlines()
    found, i = [], 0
    while i < len(lines):
        if not lines[i].startswith("```"):
            i += 1
            continue
        end = _fence_end(lines, i)
        if lines[i].strip() == "```python":
            marker = NOT_RUN.match(lines[i - 1]) if i else None
            after = end + 1
            while after < len(lines) and not lines[after].strip():
                after += 1
            output = None
            if after < len(lines) and lines[after].strip() == OUTPUT_FENCE:
                output_end = _fence_end(lines, after)
                output = "\n".join(lines[after + 1 : output_end])
            found.append(
                Example(document, i + 1, "\n".join(lines[i + 1 : end]) + "\n", marker["reason"] if marker else None, output)
            )
        i = end + 1
    return found


ALL = [example for document in DOCUMENTS for example in examples(document)]
RUNNABLE = [example for example in ALL if example.not_run is None]
NOT_RUNNABLE = [example for example in ALL if example.not_run is not None]


def _env(tmp_path: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "DSPY_CACHEDIR": str(tmp_path / ".dspy_cache"),
        "NO_MKDOCS_2_WARNING": "1",
    }
    env.pop("PYTHONPATH", None)  # the installed package, as a reader would have it
    return env


def _run(argv: list[str], cwd: Path, timeout: int = 240) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, env=_env(cwd), capture_output=True, text=True, timeout=timeout)


def test_the_library_examples_are_all_run():
    codes = "\n".join(example.code for example in RUNNABLE)
    for must in ("class RipenessExpert", "program = HDR(K=2, N=3)", "GroundedConsolidator(K=1, N=3)", "optimizer.compile(hdr"):
        assert must in codes, f"the example with {must!r} must be runnable"


@pytest.mark.parametrize("example", RUNNABLE, ids=lambda example: example.name)
def test_example_runs_as_written(example: Example, tmp_path: Path):
    done = _run([sys.executable, "-c", example.code], cwd=tmp_path)
    assert done.returncode == 0, f"{example.name} failed:\n{done.stderr[-4000:]}"
    if example.output is not None:
        printed = [line for line in done.stdout.splitlines() if not line.startswith("Bootstrapped ")]
        assert printed == example.output.splitlines(), f"{example.name} printed something else than its Output block"


def test_examples_not_run_still_compile_and_import(tmp_path: Path):
    """Each block not run must parse, and its imports must resolve (checked together, in one interpreter)."""
    checks = []
    for example in NOT_RUNNABLE:
        tree = ast.parse(example.code, filename=example.name)
        imports = "\n".join(ast.unparse(node) for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom)))
        checks.append((example.name, imports or "pass"))
    driver = (
        "import sys\nfailed = []\n"
        + "".join(
            f"try:\n    exec({code!r}, {{}})\nexcept Exception as exc:\n    failed.append(({name!r}, repr(exc)))\n"
            for name, code in checks
        )
        + "print(failed)\nsys.exit(1 if failed else 0)\n"
    )
    done = _run([sys.executable, "-c", driver], cwd=tmp_path)
    assert done.returncode == 0, f"imports of examples not run fail: {done.stdout[-4000:]}{done.stderr[-2000:]}"


def test_the_documents_speak_of_the_project_alone():
    for document in DOCUMENTS:
        for number, line in enumerate(document.read_text(encoding="utf-8").splitlines(), 1):
            assert not INTERNAL.search(line), f"{document.relative_to(ROOT)}:{number} names an internal work item: {line}"


def test_every_results_page_is_dated_and_says_when_it_was_measured():
    pages = [page for page in (ROOT / "docs" / "results").glob("*.md") if page.name != "index.md"]
    assert pages
    index = (ROOT / "docs" / "results" / "index.md").read_text(encoding="utf-8")
    for page in pages:
        date = re.match(r"(\d{4}-\d{2}-\d{2})-", page.name)
        assert date, f"{page.name}: a results page is named YYYY-MM-DD-subject.md"
        text = page.read_text(encoding="utf-8")
        assert re.search(r"\| \*\*Measured\*\* \| [^|]*" + date[1], text), f"{page.name}: says when it was measured"
        assert f"({page.name})" in index, f"{page.name} is listed in docs/results/index.md"


def test_the_site_builds_strict(tmp_path: Path):
    try:
        import material  # noqa: F401  (mkdocs-material, the theme)
        import mkdocs  # noqa: F401
    except ImportError:
        pytest.skip("mkdocs and mkdocs-material are not installed (pip install -e '.[dev]')")
    done = _run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(ROOT / "mkdocs.yml"),
            "--site-dir",
            str(tmp_path / "site"),
        ],
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert (tmp_path / "site" / "index.html").exists()
    assert (tmp_path / "site" / "optimize-hdr-L1-pareto.png").exists()
