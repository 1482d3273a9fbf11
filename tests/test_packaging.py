"""One import package: nothing installed under a generic top-level name, and every entry point works from where the README says."""

import os
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from memreason.datasets.arc import ARC1D_SOLUTIONS, SEED_SOLUTIONS
from memreason.programs import shipped_memories

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
GENERIC = ("datasets", "programs", "signatures", "eval", "optimize")


def _env():
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("PYTHONPATH", None)
    return env


def run(argv, cwd, **kw):
    return subprocess.run(argv, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=120, **kw)


def run_together(*commands):
    """``run`` for each ``(argv, cwd)``, the processes started at once (each spends its time importing)."""
    started = [
        (argv, subprocess.Popen(argv, cwd=cwd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        for argv, cwd in commands
    ]
    done = []
    for argv, process in started:
        try:
            stdout, stderr = process.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            for _, other in started:
                other.kill()
            raise
        done.append(subprocess.CompletedProcess(argv, process.returncode, stdout, stderr))
    return done


def test_outside_the_repository_no_generic_name_is_ours_and_dspy_loaders_import(tmp_path):
    code = textwrap.dedent(f"""
        import importlib.util
        for name in {GENERIC!r}:
            spec = importlib.util.find_spec(name)
            assert spec is None or not (spec.origin or "").startswith({str(ROOT)!r}), (name, spec.origin)
        from dspy.datasets import HotPotQA            # DSPy's loaders are not shadowed by our datasets
        from memreason.datasets.experience_transfer import make_level
        from memreason.programs import HDR, ConceptSelector, Judgement, MemoryConsolidator, Reasoner
        assert len(make_level(1).test) == 150
        print("ok")
    """)
    done = run([sys.executable, "-c", code], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_console_script_anywhere_and_python_m_eval_from_the_repository_root(tmp_path):
    script = Path(sys.executable).parent / "memreason-eval"
    assert script.exists(), "pip install -e . installs the memreason-eval console script"
    anywhere, from_root, optimize = run_together(
        ([str(script), "hdr", "--level", "9"], tmp_path),
        ([sys.executable, "-m", "eval", "hdr", "--level", "9"], ROOT),
        ([str(script.with_name("memreason-optimize")), "nothing"], tmp_path),
    )
    assert anywhere.returncode == 2 and anywhere.stderr.strip() == "error: --level must be 1, 2 or 3, got 9"
    assert from_root.returncode == 2 and from_root.stderr.strip() == "error: --level must be 1, 2 or 3, got 9"
    assert optimize.returncode == 2 and optimize.stderr.startswith("error: unknown program 'nothing'")


# -- the wheel: what `pip install .` installs -------------------------------------------------------------


def _package_folders() -> dict[str, Path]:
    """pyproject's package-dir: each import package's folder in the repository (``memreason.eval`` -> ``eval/``)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    return {name: ROOT / folder for name, folder in config["package-dir"].items()}


def _installed_name(path: Path) -> str | None:
    """Where a repository file lands in the wheel (``datasets/arc/memories/x.json`` ->
    ``memreason/datasets/arc/memories/x.json``); None for a file outside the package's folders."""
    for name, folder in sorted(_package_folders().items(), key=lambda item: -len(item[0])):
        if path.is_relative_to(folder):
            return "/".join([*name.split("."), *path.relative_to(folder).parts])
    return None


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    """The wheel pip builds from a copy of the repository's files (tracked, or new and not ignored), offline."""
    work = tmp_path_factory.mktemp("wheel")
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True, check=True
    )
    for name in filter(None, listed.stdout.decode().split("\0")):
        if (ROOT / name).is_file():
            (work / "src" / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, work / "src" / name)
    built = run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(work / "src"),
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(work / "out"),
        ],
        cwd=work,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (found,) = (work / "out").glob("memreason-*.whl")
    return zipfile.ZipFile(found)


def test_the_wheel_holds_every_module_and_every_file_the_package_reads(wheel):
    names = set(wheel.namelist())
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True
    )
    expected = {
        installed
        for line in listed.stdout.splitlines()
        if (installed := _installed_name(ROOT / line)) is not None and "__pycache__" not in installed
    }
    assert expected and not sorted(expected - names), "left out of the wheel (pyproject's packages or package-data)"
    shipped = [
        *(f"memreason/datasets/arc/memories/{name}.json" for name in shipped_memories()),
        "memreason/datasets/arc/splits/val100.json",
        "memreason/datasets/arc/splits/barc_seeds.json",
        "memreason/datasets/experience_transfer/table1.json",
        "memreason/datasets/experience_transfer/example_table.json",
        "memreason/py.typed",
    ]
    assert len(shipped_memories()) >= 6 and not [name for name in shipped if name not in names]
    assert {p.stem for p in SEED_SOLUTIONS.glob("*.py")} <= {Path(n).stem for n in names if "/seed_solutions/" in n}
    assert {p.stem for p in ARC1D_SOLUTIONS.glob("*.py")} <= {Path(n).stem for n in names if "/arc1d_solutions/" in n}
    assert not [n for n in names if n.split("/")[0] in GENERIC or n.startswith("tests/")]  # one import package
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    scripts = wheel.read(entry_points).decode()
    assert "memreason-eval = memreason.eval.__main__:run" in scripts
    assert "memreason-optimize = memreason.optimize.__main__:run" in scripts


def test_the_unpacked_wheel_runs_outside_the_repository_by_name_and_hints_no_editable_install(wheel, tmp_path):
    site = tmp_path / "site"
    wheel.extractall(site)
    code = textwrap.dedent("""
        import memreason, pathlib, sys
        from memreason.installed import command, from_checkout, install_hint
        from memreason.programs import load_memory, shipped_memories
        from memreason.datasets.arc import split_ids
        from memreason.datasets.experience_transfer import load_rules
        assert pathlib.Path(memreason.__file__).parent == pathlib.Path(sys.argv[1]) / "memreason", memreason.__file__
        print(from_checkout(), install_hint("gym"), command("eval"))
        print(load_memory("arc1d_ps").format, len(shipped_memories()), len(split_ids("val100")), load_rules("example_table").name)
    """)
    env = {**_env(), "PYTHONPATH": str(site)}  # the unpacked wheel first: an editable finder comes after the path
    done = subprocess.run(
        [sys.executable, "-c", code, str(site)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert first == "False pip install 'memreason[gym]' memreason-eval"
    assert second.split()[:3] == ["ps", str(len(shipped_memories())), "100"]
    helped = subprocess.run(
        [sys.executable, "-m", "memreason.eval", "--help"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert helped.returncode == 0 and helped.stdout.startswith("usage: python -m memreason.eval "), helped.stdout + helped.stderr


def test_help_names_the_command_that_was_run(tmp_path):
    script = Path(sys.executable).parent / "memreason-eval"
    installed, from_root = run_together(
        ([str(script), "--help"], tmp_path),
        ([sys.executable, "-m", "optimize", "hdr", "--help"], ROOT),
    )
    assert installed.stdout.startswith("usage: memreason-eval [-h]") and "python -m" not in installed.stdout
    assert from_root.stdout.startswith("usage: python -m optimize hdr [-h]"), from_root.stderr
    assert "(python -m optimize compile consolidator)" in " ".join(from_root.stdout.split())  # commands it names
    assert "\n    python -m optimize hdr --level 1 --trials 8" in from_root.stdout  # its examples too


@pytest.mark.parametrize(
    "main_module, as_run",
    [
        (None, "memreason-{}"),  # the console scripts, or a call from Python
        ("eval.__main__", "python -m {}"),
        ("optimize.__main__", "python -m {}"),
        ("memreason.optimize.__main__", "python -m memreason.{}"),
    ],
)
def test_every_help_names_the_commands_as_run(main_module, as_run, monkeypatch, capsys):
    from importlib.machinery import ModuleSpec

    from memreason.eval.cli import main as eval_main
    from memreason.optimize.cli import main as optimize_main

    monkeypatch.setattr(sys.modules["__main__"], "__spec__", ModuleSpec(main_module, None) if main_module else None)
    other = "memreason-" if main_module else "python -m "
    for main, argv in [
        (eval_main, ["--help"]),
        (eval_main, ["hdr", "--help"]),
        (eval_main, ["arcmemo_ps", "--help"]),
        (optimize_main, ["--help"]),
        (optimize_main, ["hdr", "--help"]),
        (optimize_main, ["compile", "arcmemo_ps", "--help"]),
    ]:
        try:
            assert main(argv) == 0
        except SystemExit as exit:  # eval's parser exits after --help; optimize's main returns
            assert exit.code == 0
        shown = capsys.readouterr().out
        name = as_run.format("eval" if main is eval_main else "optimize")
        assert shown.startswith(f"usage: {name} {' '.join(argv[:-1])}".rstrip() + " [-h]"), shown[:200]
        named = {m.group(0) for m in re.finditer(r"(python -m (memreason\.)?|memreason-)(eval|optimize)\b", shown)}
        assert named <= {as_run.format("eval"), as_run.format("optimize")}, (argv, named)
        assert main_module or other not in " ".join(shown.split())


def test_install_hints_follow_the_installation(tmp_path, monkeypatch):
    from memreason import installed

    monkeypatch.chdir(ROOT)
    assert installed.from_checkout() and installed.install_hint("gym") == "pip install -e '.[gym]'"
    monkeypatch.chdir(tmp_path)
    assert installed.install_hint("mlflow") == f"pip install -e '{ROOT}[mlflow]'"
    monkeypatch.setattr(installed, "_ROOT", tmp_path)  # a copy in site-packages: no pyproject.toml beside it
    installed.from_checkout.cache_clear()
    try:
        assert installed.install_hint("gym") == "pip install 'memreason[gym]'"
    finally:
        installed.from_checkout.cache_clear()
    library = [
        p
        for folder in ("memreason", "signatures", "programs", "datasets", "eval", "optimize")
        for p in (ROOT / folder).rglob("*.py")
    ]
    assert not [p for p in library if "pip install -e" in p.read_text() and p.name != "installed.py"]


def test_a_memory_that_is_neither_a_file_nor_a_shipped_name_is_one_line_listing_the_shipped_ones(capsys):
    from memreason.eval.cli import main as eval_main

    assert eval_main(["arcmemo_ps", "--split", "val100", "--limit", "1", "--memory", "arc1d_nosuch"]) == 2
    shipped = ", ".join(shipped_memories())
    assert (
        capsys.readouterr().err
        == f"error: cannot read memory file arc1d_nosuch: no such file (nor a shipped memory: {shipped})\n"
    )
