"""Memory programs register themselves: ``register_program`` on the class, ``MEMREASON_PROGRAMS`` and the
``memreason.programs`` entry points from outside the package, and one line for each mistake."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import dspy
import pytest

from memreason.plugins import PluginError
from memreason.programs import PROGRAMS, build_program, load_programs, register_program
from memreason.programs.registry import PLUGINS, STREAM, programs_for
from memreason.programs.stream import StreamProgram

PROGRAM_FILE = textwrap.dedent(
    '''
    from memreason.programs import register_program
    from memreason.programs.stream import Read, StreamProgram


    @register_program
    class LastSolvedFromFile(StreamProgram):
        """stream tasks: nothing kept, for the test"""

        name = "last_solved_from_file"
    '''
)


@pytest.fixture
def registry():
    """PROGRAMS as it was, and the plugin loader's memory of what it imported, put back after the test."""
    before, loaded = dict(PROGRAMS), set(PLUGINS.loaded)
    yield PROGRAMS
    PROGRAMS.clear()
    PROGRAMS.update(before)
    PLUGINS.loaded.clear()
    PLUGINS.loaded.update(loaded)


def test_a_class_registers_with_its_facts_declared_on_it(registry):
    @register_program
    class KeepLast(StreamProgram):
        """stream tasks: the last k solved problems (knob: k)"""

        memory_format = "examples"
        space = {"k": ("int", 1, 8)}

        def __init__(self, *, k: int = 3, **solver: Any):
            super().__init__(**solver)
            self.k = k

    spec = registry["keep_last"]
    assert (spec.kind, spec.summary, spec.memory_format, dict(spec.space)) == (
        STREAM,
        "stream tasks: the last k solved problems (knob: k)",
        "examples",
        {"k": ("int", 1, 8)},
    )
    assert "keep_last" in programs_for(STREAM) and spec.program.load() is KeepLast
    program = build_program("keep_last", k=5)
    assert isinstance(program, KeepLast) and program.k == 5


def test_a_second_name_fixes_knobs_and_facts_given_override_the_class(registry):
    @register_program(name="keep_two", knobs={"k": 2}, summary="two of them", selects=True)
    @register_program
    class KeepSome(StreamProgram):
        name = "keep_some"

        def __init__(self, *, k: int = 3, **solver: Any):
            super().__init__(**solver)
            self.k = k

    assert build_program("keep_some").k == 3 and build_program("keep_two").k == 2
    assert registry["keep_two"].summary == "two of them" and registry["keep_two"].selects
    assert registry["keep_some"].summary == "keep_some" and not registry["keep_some"].selects


def test_name_and_summary_are_the_classs_own_never_inherited(registry):
    @register_program
    class Parent(StreamProgram):
        """The parent."""

        name = "parent_program"

    @register_program
    class ChildOfIt(Parent):
        pass

    assert "child_of_it" in registry and registry["child_of_it"].summary == "child_of_it"


def test_a_name_held_by_another_class_is_refused_in_one_line(registry):
    class Mine(StreamProgram):
        name = "fewshot"

    with pytest.raises(
        ValueError, match=r"^register_program: the name 'fewshot' is taken \(by \S*stream.fewshot:FewShot\)"
    ) as err:
        register_program(Mine)
    assert "\n" not in str(err.value) and registry["fewshot"].program.path.endswith("stream.fewshot:FewShot")

    @register_program
    class Once(StreamProgram):
        name = "once_only"

    class Other(StreamProgram):
        name = "once_only"

    with pytest.raises(ValueError, match="the name 'once_only' is taken"):
        register_program(Other)


def test_a_class_without_a_kind_or_not_a_module_is_refused_in_one_line(registry):
    class NoKind(dspy.Module):
        pass

    with pytest.raises(
        ValueError, match=r"^register_program: NoKind has no kind; set kind = one of scenes, grids, problems, stream"
    ):
        register_program(NoKind)

    class OddKind(dspy.Module):
        kind = "poems"

    with pytest.raises(ValueError, match="OddKind has kind 'poems'"):
        register_program(OddKind)

    class NotAModule:
        kind = STREAM

    with pytest.raises(TypeError, match=r"^register_program takes a dspy.Module subclass, got .*NotAModule$"):
        register_program(NotAModule)
    with pytest.raises(TypeError, match="unknown fact colour"):
        register_program(colour="red")
    with pytest.raises(ValueError, match="is not a name one can type"):
        register_program(name="two words")(StreamProgram)


def test_a_program_of_scenes_builds_from_its_knobs(registry):
    @register_program
    class Counter(dspy.Module):
        kind = "scenes"

        def __init__(self, cot: bool = False):
            super().__init__()
            self.cot = cot

    assert build_program("counter", cot=True).cot and "counter" in programs_for("scenes")


def test_memreason_programs_imports_a_file_once(registry, tmp_path, monkeypatch):
    path = tmp_path / "mine_program.py"
    path.write_text(PROGRAM_FILE)
    monkeypatch.setenv("MEMREASON_PROGRAMS", str(path))
    load_programs()
    load_programs()  # once a process: no duplicate
    assert registry["last_solved_from_file"].summary == "stream tasks: nothing kept, for the test"
    assert isinstance(build_program("last_solved_from_file"), StreamProgram)


@pytest.mark.parametrize(
    "source, said",
    [
        ("def broken(:\n", "could not be loaded: SyntaxError: invalid syntax (bad_program.py, line 1)"),
        ("raise ValueError('no memory here')\n", "could not be loaded: ValueError: no memory here"),
        ("import sys\nsys.exit(0)\n", "called sys.exit(0) while being imported"),
    ],
)
def test_a_bad_program_module_is_one_error_naming_it_and_refused_again(source, said, registry, tmp_path, monkeypatch):
    (tmp_path / "bad_program.py").write_text(source)
    monkeypatch.setenv("MEMREASON_PROGRAMS", str(tmp_path / "bad_program.py"))
    for _ in range(2):  # never marked loaded: a second look-up cannot skip it silently
        with pytest.raises(PluginError) as err:
            load_programs()
        assert str(err.value).startswith("MEMREASON_PROGRAMS: ") and said in str(err.value) and "\n" not in str(err.value)


def test_an_entry_point_registers_its_class(registry, monkeypatch):
    class FromAPackage(StreamProgram):
        """stream tasks: published by a package"""

        name = "from_a_package"

    class Point:
        name, value = "from_a_package", "their_package.memory:FromAPackage"

        def load(self):
            return FromAPackage

    monkeypatch.setattr("memreason.plugins.entry_points", lambda group: [Point()] if group == "memreason.programs" else [])
    PLUGINS.loaded.discard("memreason.programs")
    load_programs()
    assert registry["from_a_package"].program.load() is FromAPackage
    load_programs()  # read once a process


def _cli(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    environ = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", **env}
    environ.pop("PYTHONPATH", None)
    return subprocess.run(
        [sys.executable, "-m", "memreason.eval", *args], cwd=cwd, env=environ, capture_output=True, text=True, timeout=240
    )


def test_the_command_line_lists_a_program_of_memreason_programs(tmp_path):
    (tmp_path / "mine_program.py").write_text(PROGRAM_FILE)
    done = _cli(["tasks"], tmp_path, MEMREASON_PROGRAMS="mine_program.py")
    assert done.returncode == 0, done.stderr
    assert "last_solved_from_file" in done.stdout.splitlines()[-1]  # the stream tasks' programs
    helped = _cli(["last_solved_from_file", "--help"], tmp_path, MEMREASON_PROGRAMS="mine_program.py")
    assert helped.returncode == 0 and "--task" in helped.stdout


@pytest.mark.parametrize("command", [["tasks"], ["fewshot", "--task", "rg:puzzle24"]])
def test_a_bad_program_file_on_the_command_line_is_one_line_and_exit_2(command, tmp_path):
    (tmp_path / "bad_program.py").write_text("def broken(:\n")
    done = _cli(command, tmp_path, MEMREASON_PROGRAMS="bad_program.py")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("error: MEMREASON_PROGRAMS: bad_program.py could not be loaded: SyntaxError")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    missing = _cli(command, tmp_path, MEMREASON_PROGRAMS="not_here.py")
    assert missing.returncode == 2 and missing.stderr == "error: MEMREASON_PROGRAMS: no such file not_here.py\n"


def test_a_file_named_in_both_variables_is_imported_once(tmp_path):
    both = PROGRAM_FILE + "\nprint('imported')\n"
    (tmp_path / "both.py").write_text(both)
    done = _cli(["tasks"], tmp_path, MEMREASON_PROGRAMS="both.py", MEMREASON_TASKS="both.py")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("imported") == 1


# -- the library's programs register themselves: read from source to list them, the same once imported ----------


def test_the_programs_read_from_source_are_what_their_classes_register():
    # in a fresh interpreter: the registry as read from source (no DSPy), then as each class registers on import
    probe = textwrap.dedent(
        """
        import importlib, json, sys
        from memreason.programs import PROGRAMS
        from memreason.programs.registry import SELF_REGISTERED
        facts = ("kind", "summary", "needs_attributes", "needs", "memory_format", "space", "selects")
        def listed():
            return {n: {**{f: getattr(s, f) for f in facts}, "on_problems": s.on_problems is not None} for n, s in PROGRAMS.items()}
        read, dspy_then = listed(), "dspy" in sys.modules
        for module in SELF_REGISTERED:
            importlib.import_module(module, "memreason.programs")
        paths = sorted({PROGRAMS[n].program.path for n in read})
        print(json.dumps({"read": read, "registered": listed(), "dspy_then": dspy_then, "paths": paths}))
        """
    )
    environ = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=environ, timeout=120)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    assert not found["dspy_then"] and found["read"] == found["registered"]
    stream = [name for name, facts in found["read"].items() if facts["kind"] == "stream"]
    assert all(path.startswith("memreason.programs.") for path in found["paths"]) and len(found["paths"]) == 9 + 15
    assert [name for name in found["read"] if name not in stream] == [  # the order listings have always shown
        "episodic",
        "episodic_cot",
        "semantic_oracle",
        "semantic_oracle_cot",
        "episodic_semantic_oracle",
        "episodic_semantic_oracle_cot",
        "hdr",
        "hdr_checked",
        "hdr_grounded",
        "hdr_grounded_unrefined",
        "hdr_grounded_general",
        "rule_learner",
        "reflexion_individual",
        "reflexion_all",
        "direct_hypothesis",
        "two_stage",
        "baseline",
        "cheatsheet",
        "arcmemo_oe",
        "arcmemo_ps",
        "arcmemo_ps_noselect",
        "arcmemo_ps_oracle",
        "arcmemo_ps_exec",
        "arcmemo_ps_exec_solution",
    ]
    assert [name for name in found["read"] if found["read"][name]["on_problems"]] == [
        "episodic_cot",
        "semantic_oracle_cot",
        "episodic_semantic_oracle_cot",
        "hdr",
        "hdr_checked",
    ]
    assert stream == [
        "stream_baseline",
        "fewshot",
        "reflexion_stream",
        "cheatsheet_cu",
        "cheatsheet_rs",
        "arcmemo_oe_stream",
        "arcmemo_ps_stream",
        "failure_memory",
        "stored_programs",
        "ace",
    ]
    assert build_program("arcmemo_oe_stream").format == "oe" and build_program("arcmemo_ps_stream").format == "ps"


def test_every_decorated_class_of_the_library_is_in_a_module_read_from_source():
    from pathlib import Path

    from memreason.programs.registry import SELF_REGISTERED

    root = Path(__file__).resolve().parents[2] / "programs"
    decorated = {
        "." + ".".join(path.relative_to(root).with_suffix("").parts)
        for path in root.rglob("*.py")
        if "\n@register_program" in path.read_text(encoding="utf-8")
    }
    assert decorated == set(SELF_REGISTERED), "a module with @register_program classes is listed in SELF_REGISTERED"


def test_a_declaration_that_is_no_literal_is_named(tmp_path, monkeypatch):
    from memreason.programs.declared import DeclarationError, declared

    package = tmp_path / "declared_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "mine.py").write_text(
        "from memreason.programs import register_program\n"
        "from memreason.programs.stream import StreamProgram\n"
        "SIZE = 3\n"
        "@register_program(knobs={'k': SIZE})\n"
        "class Mine(StreamProgram):\n"
        "    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(DeclarationError, match=r"declared_pkg.mine: \{'k': SIZE\} is no literal"):
        declared((".mine",), "declared_pkg")


def test_optimize_loads_memreason_programs_too(tmp_path):
    (tmp_path / "bad_program.py").write_text("def broken(:\n")
    environ = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "MEMREASON_PROGRAMS": "bad_program.py"}
    environ.pop("PYTHONPATH", None)
    done = subprocess.run(
        [sys.executable, "-m", "memreason.optimize", "hdr", "--trials", "1"],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert done.stderr.startswith("error: MEMREASON_PROGRAMS: bad_program.py could not be loaded: SyntaxError")
    (tmp_path / "mine_program.py").write_text(PROGRAM_FILE)
    environ["MEMREASON_PROGRAMS"] = "mine_program.py"
    done = subprocess.run(
        [sys.executable, "-m", "memreason.optimize", "last_solved_from_file", "--task", "rg:puzzle24", "--param", "depth=1"],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=240,
    )
    # known to the study command, its space read (a stream program that keeps no memory: chain of thought alone)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert done.stderr.startswith("error: unknown parameter 'depth'; this program's space has: cot\n")
