"""``build_memory --solutions rearc`` (re-ARC's verifiers as seed solutions) and ``--solutions DIR``
matched by concept, on the scripted engine and a real sandbox."""

import importlib.util
import inspect
import json
import re
from pathlib import Path

import pytest

import memreason.datasets.arc.rearc_solutions as rearc
import memreason.eval.arc.sandbox as arc_sandbox
import memreason.eval.arc.solutions as solutions
from memreason.datasets.arc import (
    ArcDataError,
    abstraction_text,
    dsl_reference,
    load_split,
    runnable_program,
    verifier_ids,
    verifier_source,
)
from memreason.eval.arc.seeding import passes_all
from memreason.eval.cli import main as eval_main
from memreason.lm import LMChoice, ScriptedEngine

from arc_helpers import FLIP, IDENTITY, flip_task, last_given, recolor_task, sandbox, small_sandbox, write_tasks  # noqa: F401
from scripted_answers import Script

GOOD = "4258a5f9"  # a barc_seeds task whose verifier reproduces every pair and calls ofcolor
OTHER = "0ca9ddb6"  # another such task
FAILS = "6cf79266"  # a barc_seeds task whose verifier gets a train pair wrong


def dsl_module():
    """re-ARC's DSL, loaded from the installed file on its own (it imports only typing)."""
    folder = Path(importlib.util.find_spec("reasoning_gym").submodule_search_locations[0]) / "arc" / "rearc_utils"
    spec = importlib.util.spec_from_file_location("rearc_dsl_for_tests", folder / "dsl.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def script() -> Script:
    return Script(
        pseudocode={"pseudocode": "1. find the cells of the rarest colour\n2. paint their neighbours"},
        concepts=lambda call: (
            {"concepts": [{"situation": "isolated cells", "suggestion": "paint around them"}]}
            if "situation" in call.system
            else {"concepts": [{"title": "paint neighbours", "kind": "routine"}]}
        ),
        derivation={"derivation": ["Observation: cells gain a ring", "Thought: paint the neighbours"]},
    )


def use(monkeypatch, engine: ScriptedEngine) -> None:
    monkeypatch.setattr(
        "memreason.eval.harness.lms.resolve_lm", lambda spec, **kw: LMChoice(spec or "embedded", engine.lm(), local=False)
    )
    monkeypatch.setattr(arc_sandbox, "make_sandbox", lambda workers, wall_seconds: small_sandbox())


def build(tmp_path, *args: str, format: str = "ps", run_dir: str = "log") -> int:
    argv = ["build_memory", "--format", format, "--out", str(tmp_path / f"{format}.json"), "--run-dir", str(tmp_path / run_dir)]
    return eval_main([*argv, *args, "--no-progress", "--no-report"])


def records(tmp_path, run_dir: str = "log") -> list[dict]:
    return [json.loads(line) for line in (tmp_path / run_dir / "examples.jsonl").read_text().splitlines()]


def results(tmp_path, run_dir: str = "log") -> dict:
    return json.loads((tmp_path / run_dir / "results.json").read_text())


# -- the module ----------------------------------------------------------------------------


def test_dsl_reference_lists_exactly_the_primitives_and_constants_used():
    dsl = dsl_module()
    for task_id in (GOOD, OTHER, FAILS, "007bbfb7"):
        source = verifier_source(task_id)
        names = set(re.findall(r"\b[A-Za-z_]\w*\b", source.split("\n", 1)[1]))  # the body's words
        functions = {n for n in names if inspect.isfunction(getattr(dsl, n, None))}
        constants = {n for n in names if isinstance(getattr(dsl, n, None), (int, tuple))}
        reference = dsl_reference(source).splitlines()
        assert {m.group(1) for line in reference if (m := re.match(r"(\w+)\(", line))} == functions
        assigned = [m.group(1) for line in reference if (m := re.match(r"(\w+) = ", line))]
        assert {n for n in assigned if isinstance(getattr(dsl, n), (int, tuple))} == constants
        assert all(hasattr(dsl, n) for n in assigned)  # the rest: the DSL's type aliases
        assert len(reference) == len(functions) + len(assigned)
        for name in functions:
            line = next(line for line in reference if line.startswith(f"{name}("))
            assert inspect.getdoc(getattr(dsl, name)).splitlines()[0] in line
            assert list(inspect.signature(getattr(dsl, name)).parameters) == re.findall(r"(\w+): ", line.split("->")[0])


def test_the_shown_text_holds_the_verifier_and_its_reference_but_not_the_task_id():
    text = abstraction_text(GOOD)
    body = verifier_source(GOOD).split("\n", 1)[1]
    assert body in text and GOOD not in text and text.startswith("def transform(I: Grid) -> Grid:")
    assert inspect.getdoc(dsl_module().ofcolor) in text and dsl_reference(verifier_source(GOOD)) in text
    assert len(text) < 4 * len(verifier_source(GOOD)) + 2000


def test_verifier_lookup_of_an_unknown_task_is_one_line():
    assert len(verifier_ids()) == 400 and GOOD in verifier_ids()
    with pytest.raises(ArcDataError, match="no verifier for task 'deadbeef'") as info:
        verifier_source("deadbeef")
    assert "\n" not in str(info.value)
    with pytest.raises(ArcDataError):
        runnable_program("deadbeef")


def test_runnable_programs_reproduce_their_tasks_in_the_sandbox(sandbox):  # noqa: F811
    tasks = {t.id: t for t in load_split("barc_seeds", ids=[GOOD, OTHER, FAILS])}
    assert passes_all(tasks[GOOD], runnable_program(GOOD), sandbox)
    assert passes_all(tasks[OTHER], runnable_program(OTHER), sandbox)
    assert not passes_all(tasks[FAILS], runnable_program(FAILS), sandbox)
    assert not passes_all(tasks[GOOD], runnable_program(OTHER), sandbox)


# -- build_memory --solutions rearc --------------------------------------------------------


@pytest.mark.parametrize("format", ["ps", "oe"])
def test_a_verifier_is_verified_and_abstracted_with_its_dsl_reference(tmp_path, monkeypatch, format):
    engine = ScriptedEngine(script())
    use(monkeypatch, engine)
    assert build(tmp_path, "--split", "barc_seeds", "--tasks", f"{GOOD},{FAILS}", "--solutions", "rearc", format=format) == 0
    good, failing = records(tmp_path)
    assert (good["id"], good["source"], good["verified"], good["solution"]) == (GOOD, "rearc", True, verifier_source(GOOD))
    assert "write" in good and not failing["verified"] and "write" not in failing
    shown = [last_given(c, "solution") for c in engine.calls if "[[ ## solution ## ]]" in c.user_text]
    assert shown and all(s.strip() == abstraction_text(GOOD).strip() for s in shown)
    assert all(verifier_source(GOOD).split("\n", 1)[1] in s and "indices of all grid cells with value" in s for s in shown)
    assert not [c for c in engine.calls if GOOD in c.user_text or FAILS in c.user_text or GOOD in c.system]
    r = results(tmp_path)
    assert (r["examples"], r["verified"], r["written"], r["concepts"]) == (2, 1, 1, 1)
    assert r["calls"] == len(engine.calls) == 2 and r["tokens"]["memory"]["calls"] == 2  # pseudocode or derivation, then concepts
    memory = json.loads((tmp_path / f"{format}.json").read_text())
    assert memory["format"] == format and [c["sources"] for c in memory["concepts"]] == [[GOOD]]


def test_a_wrong_verifier_is_refused_and_not_abstracted(tmp_path, monkeypatch):
    original = rearc.verifier_source

    def broken(task_id: str) -> str:  # the output grid is the input: wrong on every pair
        source = original(task_id)
        return re.sub(r"return \w+\s*$", "return I", source) if task_id == OTHER else source

    monkeypatch.setattr(rearc, "verifier_source", broken)  # runnable_program and abstraction_text read it
    monkeypatch.setattr(solutions, "verifier_source", broken)
    engine = ScriptedEngine(script())
    use(monkeypatch, engine)
    assert build(tmp_path, "--split", "barc_seeds", "--tasks", f"{OTHER},{GOOD}", "--solutions", "rearc") == 0
    wrong, right = records(tmp_path)
    assert (wrong["id"], wrong["verified"], wrong["solution"].rstrip().endswith("return I")) == (OTHER, False, True)
    assert "write" not in wrong and right["verified"] and "write" in right
    assert not [c for c in engine.calls if "return I\n" in c.user_text]
    assert (results(tmp_path)["verified"], results(tmp_path)["written"]) == (1, 1)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--split", "val100", "--tasks", "97239e3d"], "re-ARC has no verifier for task '97239e3d'"),
        (["--split", "{tiny}"], "no task of split"),
    ],
)
def test_rearc_on_a_task_without_a_verifier_is_one_line(tmp_path, monkeypatch, capsys, args, message):
    engine = ScriptedEngine(script())
    use(monkeypatch, engine)
    tiny = write_tasks(tmp_path / "tiny", flip_task("a_flip"))
    args = [str(tiny) if a == "{tiny}" else a for a in args]
    assert build(tmp_path, *args, "--solutions", "rearc") == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1 and not engine.calls


class Crash(BaseException):
    """A crash nothing in the harness catches (as a SIGKILL would end the process)."""


def test_a_rearc_build_continues_its_run_dir(tmp_path, monkeypatch):
    answer, seen = script(), []

    def crashing(call):  # dies on the second task's first abstraction call
        if "dneighbors" in call.user_text and not seen:
            seen.append(True)
            raise Crash()
        return answer(call)

    args = ["--split", "barc_seeds", "--tasks", f"{GOOD},{OTHER}", "--solutions", "rearc"]
    use(monkeypatch, ScriptedEngine(crashing))
    with pytest.raises(Crash):
        build(tmp_path, *args)
    assert [r["id"] for r in records(tmp_path)] == [GOOD]
    engine = ScriptedEngine(script())
    use(monkeypatch, engine)
    assert build(tmp_path, *args) == 0
    assert engine.calls and not [c for c in engine.calls if "leastcolor" in c.user_text]  # GOOD is not abstracted again
    assert [r["id"] for r in records(tmp_path)] == [GOOD, OTHER]
    r = results(tmp_path)
    assert (r["verified"], r["written"], r["concepts"]) == (2, 2, 1)  # the same title twice: revised


# -- build_memory --solutions DIR, matched by id or concept ---------------------------------


def test_a_solutions_directory_matches_tasks_by_id_or_concept(tmp_path, monkeypatch):
    split = write_tasks(
        tmp_path / "split", flip_task("flip@s0i0"), flip_task("flip@s0i1"), flip_task("flip@s0i2"), recolor_task("recolor@s0i0")
    )
    folder = tmp_path / "solutions"
    folder.mkdir()
    (folder / "flip.py").write_text(FLIP)  # the family's solution
    (folder / "flip@s0i1.py").write_text(IDENTITY)  # this instance's own file wins (and is wrong)
    engine = ScriptedEngine(script())
    use(monkeypatch, engine)
    assert build(tmp_path, "--split", str(split), "--solutions", str(folder)) == 0
    assert [(r["id"], r["verified"], r["solution"]) for r in records(tmp_path)] == [
        ("flip@s0i0", True, FLIP),
        ("flip@s0i1", False, IDENTITY),
        ("flip@s0i2", True, FLIP),
    ]
    r = results(tmp_path)
    assert (r["examples"], r["verified"], r["written"]) == (3, 2, 2)
    memory = json.loads((tmp_path / "ps.json").read_text())
    assert [c["sources"] for c in memory["concepts"]] == [["flip@s0i0", "flip@s0i2"]]


def test_named_tasks_without_a_solution_file_are_one_line(tmp_path, monkeypatch, capsys):
    split = write_tasks(tmp_path / "split", flip_task("flip@s0i0"), recolor_task("recolor@s0i0"))
    folder = tmp_path / "solutions"
    folder.mkdir()
    (folder / "flip.py").write_text(FLIP)
    use(monkeypatch, ScriptedEngine(script()))
    assert build(tmp_path, "--split", str(split), "--tasks", "recolor@s0i0", "--solutions", str(folder)) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "no solution for task 'recolor@s0i0'" in err and err.count("\n") == 1
