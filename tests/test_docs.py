"""The documents stay true: the site builds with --strict, asks no other host for anything, and every Python
example in it runs.

Convention (docs/index.md, "Building this site"): every ```python block of README.md and
docs/**/*.md runs, as written, in a fresh working directory, unless the line before it is an
HTML comment ``<!-- not run: REASON -->``; a block that is not run still has to compile and
its imports still have to resolve. A ```text title="Output" block right after an example is
exactly what the example prints (DSPy's own "Bootstrapped ..." progress line left out).
Examples that need an LM run on DSPy's DummyLM.

The examples run in one interpreter (:data:`DRIVER`, started once for the module: starting
Python and importing DSPy once, not once per example), each as a script of its own: a fresh
namespace, a fresh working directory, DSPy's settings as at import, and what it writes to
file descriptors 1 and 2 captured; each example is still its own test, named by its place.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

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


# Runs each example of a JSON file [[name, code], ...] as ``python -c CODE`` would (in the directory
# named by its index), then each import list of [[name, code], ...] in a fresh namespace; writes
# {"run": {name: {"returncode", "stdout", "stderr"}}, "imports": [[name, error], ...]} as JSON.
DRIVER = r"""
import copy, json, os, sys, tempfile, traceback
from pathlib import Path

spec, answer = json.loads(Path(sys.argv[1]).read_text()), Path(sys.argv[2])
base = Path(sys.argv[1]).parent
results = {"run": {}, "imports": []}
sys.argv = ["-c"]  # as python -c CODE has it


def fresh_dspy():
    # DSPy's settings as a new interpreter has them (an earlier example may have configured an LM)
    module = sys.modules.get("dspy.dsp.utils.settings")
    if module is not None:
        module.main_thread_config.clear()
        module.main_thread_config.update(copy.deepcopy(module.DEFAULT_CONFIG))
        module.config_owner_thread_id = None
        module.config_owner_async_task = None


def captured(fd):
    saved, sink = os.dup(fd), tempfile.TemporaryFile()
    os.dup2(sink.fileno(), fd)
    return saved, sink


def restored(fd, saved, sink):
    os.dup2(saved, fd)
    os.close(saved)
    sink.seek(0)
    return sink.read().decode("utf-8", "replace")


for index, (name, code) in enumerate(spec["run"]):
    where = base / str(index)
    where.mkdir()
    os.chdir(where)
    fresh_dspy()
    sys.stdout.flush(), sys.stderr.flush()
    out, err = captured(1), captured(2)
    returncode = 0
    try:
        exec(compile(code, "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
    except SystemExit as exc:
        returncode = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
    except BaseException:
        returncode = 1
        traceback.print_exc()
    sys.stdout.flush(), sys.stderr.flush()
    results["run"][name] = {"returncode": returncode, "stderr": restored(2, *err), "stdout": restored(1, *out)}

os.chdir(base)
for name, code in spec["imports"]:
    try:
        exec(code, {})
    except Exception as exc:
        results["imports"].append([name, repr(exc)])

answer.write_text(json.dumps(results))
"""


@pytest.fixture(scope="module")
def documented(tmp_path_factory) -> dict[str, Any]:
    """Every runnable example, and the imports of every example not run, run once in :data:`DRIVER`."""
    base = tmp_path_factory.mktemp("examples")
    imports = []
    for example in NOT_RUNNABLE:
        try:
            tree = ast.parse(example.code, filename=example.name)
        except SyntaxError:
            continue  # test_examples_not_run_still_compile_and_import names it
        code = "\n".join(ast.unparse(node) for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom)))
        imports.append((example.name, code or "pass"))
    spec = base / "examples.json"
    spec.write_text(json.dumps({"run": [(example.name, example.code) for example in RUNNABLE], "imports": imports}))
    done = _run([sys.executable, "-c", DRIVER, str(spec), str(base / "results.json")], cwd=base, timeout=600)
    assert done.returncode == 0 and (base / "results.json").exists(), f"the examples' driver failed:\n{done.stderr[-4000:]}"
    return json.loads((base / "results.json").read_text())


def test_the_library_examples_are_all_run():
    codes = "\n".join(example.code for example in RUNNABLE)
    for must in ("class RipenessExpert", "program = HDR(K=2, N=3)", "GroundedConsolidator(K=1, N=3)", "optimizer.compile(hdr"):
        assert must in codes, f"the example with {must!r} must be runnable"


@pytest.mark.parametrize("example", RUNNABLE, ids=lambda example: example.name)
def test_example_runs_as_written(example: Example, documented: dict[str, Any]):
    done = documented["run"][example.name]
    assert done["returncode"] == 0, f"{example.name} failed:\n{done['stderr'][-4000:]}"
    if example.output is not None:
        printed = [line for line in done["stdout"].splitlines() if not line.startswith("Bootstrapped ")]
        assert printed == example.output.splitlines(), f"{example.name} printed something else than its Output block"


def test_examples_not_run_still_compile_and_import(documented: dict[str, Any]):
    """Each block not run must parse, and its imports must resolve (checked together, in the examples' interpreter)."""
    for example in NOT_RUNNABLE:
        ast.parse(example.code, filename=example.name)
    assert not documented["imports"], f"imports of examples not run fail: {documented['imports']}"


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


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site as ``mkdocs build --strict`` writes it (built once for the module)."""
    try:
        import material  # noqa: F401  (mkdocs-material, the theme)
        import mkdocs  # noqa: F401
    except ImportError:
        pytest.skip("mkdocs and mkdocs-material are not installed (pip install -e '.[dev]')")
    base = tmp_path_factory.mktemp("site")
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
            str(base / "site"),
        ],
        cwd=base,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return base / "site"


def test_the_site_builds_strict(site: Path):
    assert (site / "index.html").exists()
    assert (site / "optimize-hdr-L1-pareto.png").exists()


# What a page makes the browser fetch by itself (not a link a reader follows): the elements' attributes that load a
# URL, a <link> unless its every rel only names another document, CSS's url() and @import, and a script's URL strings.
FETCHING = {
    "script": ("src",),
    "img": ("src", "srcset"),
    "source": ("src", "srcset"),
    "iframe": ("src",),
    "frame": ("src",),
    "embed": ("src",),
    "object": ("data",),
    "video": ("src", "poster"),
    "audio": ("src",),
    "track": ("src",),
    "input": ("src",),
    "image": ("href", "xlink:href"),
    "use": ("href", "xlink:href"),
}
NOT_FETCHED_REL = {"canonical", "alternate", "author", "license", "next", "prev", "help", "bookmark", "external", "me"}
HOSTED = re.compile(r"^\s*(?:[a-z][a-z0-9+.-]*:)?//", re.IGNORECASE)  # https://host/..., //host/...: another host
CSS_URL = re.compile(r"""url\(\s*(['"]?)(.*?)\1\s*\)|@import\s+(['"])(.*?)\3""", re.IGNORECASE)
JS_URL = re.compile(r"""["'`](https?://[^"'`\s]+)""")
# URL strings of the theme's script that it fetches only where this site never asks it to, each with the reason;
# test_the_site_fetches_nothing_from_another_host checks the site gives no such reason.
ONLY_IF = {
    "https://unpkg.com/mermaid": "a page holds a Mermaid diagram",
    "https://unpkg.com/resize-observer-polyfill": "the browser has no ResizeObserver (none since 2020)",
    "https://api.github.com/": "mkdocs.yml sets repo_url (the header's repository facts)",
    "https://${": "mkdocs.yml sets repo_url (a GitLab repository's facts)",
}


def _css_urls(css: str) -> list[str]:
    return [m[2] or m[4] for m in CSS_URL.finditer(css) if (m[2] or m[4])]


class _Fetches(HTMLParser):
    """(what, URL) for each URL an HTML page makes the browser fetch by itself."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, str]] = []
        self._inside: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        for name in FETCHING.get(tag, ()):
            urls = (
                [part.split()[0] for part in values.get(name, "").split(",") if part.strip()]
                if "srcset" in name
                else [values.get(name, "")]
            )
            self.found += [(f"<{tag} {name}>", url) for url in urls if url]
        if tag == "link" and values.get("href") and not set(values.get("rel", "").lower().split()) <= NOT_FETCHED_REL:
            self.found.append((f'<link rel="{values.get("rel", "")}">', values["href"]))
        self.found += [(f"<{tag} style>", url) for url in _css_urls(values.get("style", ""))]
        self._inside = tag if tag in ("style", "script") else None

    def handle_endtag(self, tag: str) -> None:
        self._inside = None

    def handle_data(self, data: str) -> None:
        if self._inside == "style":
            self.found += [("<style>", url) for url in _css_urls(data)]
        elif self._inside == "script":
            self.found += [("<script>", url) for url in JS_URL.findall(data)]


def test_the_site_fetches_nothing_from_another_host(site: Path):
    """No page asks another host for anything (fonts, styles, scripts, images): the site works offline and tells no
    one who reads it. Links a reader may follow to other sites are fine."""
    found: list[tuple[str, str, str]] = []
    for path in sorted(site.rglob("*")):
        where = str(path.relative_to(site))
        if path.suffix == ".html":
            parser = _Fetches()
            parser.feed(path.read_text(encoding="utf-8"))
            found += [(where, what, url) for what, url in parser.found]
        elif path.suffix == ".css":
            found += [(where, "url() or @import", url) for url in _css_urls(path.read_text(encoding="utf-8"))]
        elif path.suffix == ".js":
            found += [(where, "a URL in a script", url) for url in JS_URL.findall(path.read_text(encoding="utf-8"))]
    hosted = [(where, what, url) for where, what, url in found if HOSTED.match(url)]
    assert any(what.startswith("<link") and url.endswith(".css") for _, what, url in found)  # it sees the stylesheets
    conditional = [f for f in hosted if any(f[2].startswith(prefix) for prefix in ONLY_IF)]
    fetched = [f for f in hosted if f not in conditional]
    assert not fetched, f"the site fetches from other hosts: {fetched[:5]}"
    pages = "\n".join(p.read_text(encoding="utf-8") for p in site.rglob("*.html"))
    assert not re.search(r'class="[^"]*\bmermaid\b', pages), ONLY_IF["https://unpkg.com/mermaid"]
    repository = "md-source" in pages or re.search(r"^repo_url:", (ROOT / "mkdocs.yml").read_text(), re.M)
    assert not repository, ONLY_IF["https://api.github.com/"]


TABLE_RULE = re.compile(r"^\|(?:\s*:?-{3,}:?\s*\|)+\s*$")  # the row under a Markdown table's header
DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _table_header_cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def test_no_table_has_an_empty_header():
    """A table whose header cells are all empty renders as an empty grey row above its first row."""
    for document in sorted((ROOT / "docs").rglob("*.md")):
        lines, fenced = document.read_text(encoding="utf-8").splitlines(), False
        for number, line in enumerate(lines[1:], 2):
            fenced ^= lines[number - 2].startswith("```")
            header = lines[number - 2]
            if not fenced and TABLE_RULE.match(line) and header.startswith("|"):
                cells = _table_header_cells(header)
                assert any(cells), f"{document.relative_to(ROOT)}:{number - 1}: the table's header is empty: {header}"


def _results_index() -> list[tuple[str, str, str]]:
    """(page, the date its row names it by, the days it was measured) for each row of the results index, in its order:
    a row starts with the page's date, then, for a page measured over several days, ``(measured FIRST to LAST)``."""
    rows = []
    for line in (ROOT / "docs" / "results" / "index.md").read_text(encoding="utf-8").splitlines():
        row = re.match(
            r"^\| (?P<date>\d{4}-\d{2}-\d{2})(?: \(measured (?P<measured>[^)|]*)\))? \| \[[^\]]*\]\((?P<page>[^)]+\.md)\) \|",
            line,
        )
        if row:
            rows.append((row["page"], row["date"], row["measured"] or row["date"]))
    return rows


def _results_nav() -> list[tuple[str, str]]:
    """(page, the date its title starts with) for each dated entry of the Results section of mkdocs.yml."""
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    section = text[text.index("  - Results:\n") :]
    entries = re.findall(r'^      - "(\d{4}-\d{2}-\d{2}): [^"]*": results/(\S+\.md)$', section, flags=re.MULTILINE)
    return [(page, date) for date, page in entries]


def test_results_are_named_by_the_date_of_their_file_newest_first():
    """A results page is shown, in the index and in the Results navigation, by the date its file's name (and so its
    address) carries, newest first; for a page measured over several days the index gives the days, the last of them
    the last day its Measured row names."""
    index = _results_index()
    pages = sorted(page.name for page in (ROOT / "docs" / "results").glob("2*.md"))
    assert sorted(page for page, _, _ in index) == pages, "every results page has one row in docs/results/index.md"
    for page, date, measured in index:
        assert date == page[:10], f"docs/results/index.md shows {page} as of {date}, its name says {page[:10]}"
        days = DATE.findall(measured)
        assert days[0] <= date <= days[-1], f"{page}: the index's days {measured} do not hold the page's date"
        said = re.search(r"^\| \*\*Measured\*\* \|(.*)$", (ROOT / "docs" / "results" / page).read_text(encoding="utf-8"), re.M)
        assert said and max(DATE.findall(said[1])) == days[-1], f"{page}: the index's last day is not the page's"
    dates = [date for _, date, _ in index]
    assert dates == sorted(dates, reverse=True), f"docs/results/index.md is not newest first: {dates}"
    nav = _results_nav()
    for page, date in nav:
        assert date == page[:10], f"mkdocs.yml names results/{page} {date}: its name says {page[:10]}"
    assert nav == [(page, date) for page, date, _ in index], "the Results navigation lists the pages as the index does"


def test_results_headlines_are_short():
    """A headline is a line or two; the figures stay on the page."""
    for line in (ROOT / "docs" / "results" / "index.md").read_text(encoding="utf-8").splitlines():
        if re.match(r"^\| \d{4}-", line):
            headline = _table_header_cells(line)[-1]
            assert len(headline) <= 200, f"a headline of {len(headline)} characters: {headline}"


def test_results_appear_once_in_the_navigation():
    """The Results section's own page is the section (navigation.indexes), not a second "Results" under it."""
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "- navigation.indexes" in text
    assert "  - Results:\n      - results/index.md\n" in text
