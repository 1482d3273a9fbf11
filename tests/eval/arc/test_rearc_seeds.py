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
from tests.helpers.arc_helpers import FLIP, IDENTITY, flip_task, last_given, recolor_task, sandbox, small_sandbox, write_tasks  # noqa: F401
from tests.helpers.scripted_answers import Script

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


def script(title: str = "paint neighbours") -> Script:
    return Script(
        pseudocode={"pseudocode": "1. find the cells of the rarest colour\n2. paint their neighbours"},
        concepts=lambda call: (
            {"concepts": [{"situation": "isolated cells", "suggestion": "paint around them"}]}
            if "situation" in call.system
            else {"concepts": [{"title": title, "kind": "routine"}]}
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


# -- the abstractor's demonstration in the DSL, drafts side by side, the memory's quality ----


def _puzzle_pairs(text: str) -> list[tuple[tuple[tuple[int, ...], ...], tuple[tuple[int, ...], ...]]]:
    grids = [
        tuple(tuple(int(c) for c in row) for row in block.strip().splitlines())
        for block in re.findall(r"columns\):\n((?:\d+\n?)+)", text)
    ]
    return list(zip(grids[0::2], grids[1::2]))


def test_the_demonstration_solves_its_puzzle_in_python_and_in_the_dsl():
    from memreason.programs.arcmemo import abstraction_demos as demos

    pairs = _puzzle_pairs(demos.PUZZLE)
    namespace = vars(dsl_module()).copy()
    exec(demos.DSL_SOLUTION, namespace)
    plain: dict = {}
    exec(demos.SOLUTION, plain)
    assert len(pairs) == 2
    for grid, output in pairs:
        assert namespace["transform"](grid) == output
        assert tuple(map(tuple, plain["transform"]([list(r) for r in grid]))) == output


DSL_DEMO_LINE = "x2 = order(x1, compose(invert, size))"
PLAIN_DEMO_LINE = "stack, cells = [(r, c)], []"


@pytest.mark.parametrize("format", ["ps", "oe"])
def test_rearc_solutions_are_abstracted_with_the_demonstration_written_in_their_dsl(tmp_path, monkeypatch, format):
    engine = ScriptedEngine(script())
    use(monkeypatch, engine)
    assert build(tmp_path, "--split", "barc_seeds", "--tasks", GOOD, "--solutions", "rearc", format=format) == 0
    assert engine.calls and all(DSL_DEMO_LINE in c.user_text and PLAIN_DEMO_LINE not in c.user_text for c in engine.calls)
    assert all("fix the leftmost argument" not in c.user_text or "lbind" in c.user_text for c in engine.calls)
    assert "mpapply(function: Callable, a: tuple, b: tuple)" in engine.calls[0].user_text  # the demo's own reference
    split = write_tasks(tmp_path / "split", flip_task("flip@s0i0"))
    folder = tmp_path / "solutions"
    folder.mkdir()
    (folder / "flip.py").write_text(FLIP)
    plain = ScriptedEngine(script())
    use(monkeypatch, plain)
    assert build(tmp_path, "--split", str(split), "--solutions", str(folder), format=format, run_dir="plain") == 0
    assert plain.calls and all(PLAIN_DEMO_LINE in c.user_text and DSL_DEMO_LINE not in c.user_text for c in plain.calls)


def test_drafts_run_side_by_side_and_each_write_reads_the_memory_its_predecessors_left(tmp_path, monkeypatch):
    titles = {GOOD: "paint neighbours", OTHER: "ring cells"}

    def answer(call):  # each task's concept named after it; the pseudocode says which task it is
        if "[[ ## pseudocode ## ]]" in call.user_text and "concepts" in call.system and "memory" in call.system:
            task = GOOD if "task=" + GOOD in last_given(call, "pseudocode") else OTHER
            return {"concepts": [{"title": titles[task], "kind": "routine"}]}
        task = GOOD if "ofcolor" in last_given(call, "solution") and "dneighbors" not in last_given(call, "solution") else OTHER
        return {"pseudocode": f"task={task}"}

    args = ["--split", "barc_seeds", "--tasks", f"{GOOD},{OTHER}", "--solutions", "rearc"]
    engine = ScriptedEngine(answer)
    use(monkeypatch, engine)
    assert build(tmp_path, *args, "--threads", "2") == 0
    abstracts = [c for c in engine.calls if "[[ ## pseudocode ## ]]" in c.user_text and "memory" in c.system]
    written = [last_given(c, "pseudocode") for c in abstracts]
    assert written == [f"task={GOOD}", f"task={OTHER}"]  # in task order, whichever draft finished first
    assert last_given(abstracts[0], "memory") == "(empty)" and "paint neighbours" in last_given(abstracts[1], "memory")
    r = results(tmp_path)
    assert (r["written"], r["concepts"], r["calls"]) == (2, 2, 4)
    for record in records(tmp_path):  # the draft's call counts in the task's write, under the abstractor
        assert record["write"]["tokens"]["calls"] == 2 and list(record["usage"]["memory"]) == ["concept_abstractor"]
    assert r["quality"] == {"concepts": 2, "copied_from_demos": 0, "near_copies_of_demos": 0, "naming_dsl_primitives": 0}
    side_by_side = json.loads((tmp_path / "ps.json").read_text())
    serial = ScriptedEngine(answer)
    use(monkeypatch, serial)
    assert build(tmp_path, *args, "--threads", "1", run_dir="serial") == 0
    assert json.loads((tmp_path / "ps.json").read_text()) == side_by_side
    assert [last_given(c, "pseudocode") for c in serial.calls if "memory" in c.system] == written


def test_a_draft_that_fails_is_made_again_when_written(tmp_path, monkeypatch, capsys):
    answer, failed = script(), []

    def flaky(call):  # the first call (the draft's derivation) fails, the rest answer
        if not failed:
            failed.append(True)
            raise ValueError("not this time")
        return answer(call)

    engine = ScriptedEngine(flaky)
    use(monkeypatch, engine)
    assert build(tmp_path, "--split", "barc_seeds", "--tasks", GOOD, "--solutions", "rearc", "--threads", "2", format="oe") == 0
    (record,) = records(tmp_path)
    assert failed and "write" in record and "write_error" not in record
    assert results(tmp_path)["concepts"] == 1 and len(engine.calls) == 3  # the failed call, then derive and abstract
    assert f"drafting the write of {GOOD} failed" in capsys.readouterr().err


def test_a_built_memory_counts_concepts_copied_or_nearly_copied_from_the_demonstration_or_naming_dsl_primitives():
    from memreason.datasets.arc import dsl_primitives
    from memreason.eval.arc.build_quality import concept_quality
    from memreason.programs import ConceptMemory
    from memreason.programs.arcmemo.abstraction_demos import OE_CONCEPTS, PS_CONCEPTS
    from memreason.signatures import OEConcept, PSConcept

    oe = ConceptMemory("oe")
    oe.add([OEConcept(situation=" " + OE_CONCEPTS[0].situation.upper(), suggestion="anything")], source="a")  # a copy
    oe.add([OEConcept(situation="isolated cells", suggestion="call `ofcolor` on the rarest colour")], source="b")
    oe.add([OEConcept(situation="isolated cells gain a ring", suggestion="fill(grid, 4, ring)")], source="c")
    oe.add([OEConcept(situation="a shape is filled", suggestion="fill the enclosed cells with yellow")], source="d")
    reworded = OE_CONCEPTS[1].situation.replace("separate ", "")  # one word left out: nearly the demonstration's
    oe.add([OEConcept(situation=reworded, suggestion="count the shapes")], source="e")
    oe.add([OEConcept(situation="lines cross", suggestion=OE_CONCEPTS[1].suggestion.lower())], source="f")  # its suggestion
    oe.add([OEConcept(situation="The grid holds several lines", suggestion="trace each line")], source="g")  # alike, not near
    assert concept_quality(oe, dsl_primitives()) == {
        "concepts": 7,
        "copied_from_demos": 1,
        "near_copies_of_demos": 3,
        "naming_dsl_primitives": 2,
    }
    ps = ConceptMemory("ps")
    demo = PS_CONCEPTS[1]
    ps.add([PSConcept(title="Palette", kind="routine"), PSConcept(title="fill enclosed regions", kind="routine")], source="a")
    ps.add([demo.model_copy(update={"description": "other words"})], source="b")  # title and first note: a copy
    ps.add([PSConcept(title="find objects", kind="routine", implementation_notes=["scan rows"])], source="c")  # same title only
    note = PS_CONCEPTS[0].implementation_notes[0]
    kept = PSConcept(title="gather cells", kind="routine", implementation_notes=["start here", note])  # a note kept
    ps.add([kept], source="d")
    quality = {"concepts": 5, "copied_from_demos": 1, "near_copies_of_demos": 2}
    assert concept_quality(ps, dsl_primitives()) == {**quality, "naming_dsl_primitives": 1}
    assert concept_quality(ps) == quality  # no DSL: primitives not counted


# -- --extend: a memory file continued where its run directory is gone ----------------------


def test_extend_starts_from_the_memory_in_out_and_skips_the_tasks_it_holds(tmp_path, monkeypatch, capsys):
    use(monkeypatch, ScriptedEngine(script()))
    assert build(tmp_path, "--split", "barc_seeds", "--tasks", GOOD, "--solutions", "rearc", run_dir="first") == 0
    first = json.loads((tmp_path / "ps.json").read_text())
    assert [c["sources"] for c in first["concepts"]] == [[GOOD]]
    engine = ScriptedEngine(script())
    use(monkeypatch, engine)
    args = ["--split", "barc_seeds", "--tasks", f"{GOOD},{OTHER}", "--solutions", "rearc", "--extend"]
    assert build(tmp_path, *args, run_dir="elsewhere") == 0  # a new run directory: the first one is gone
    assert [r["id"] for r in records(tmp_path, "elsewhere")] == [OTHER]  # GOOD is among the memory's sources
    assert engine.calls and not [c for c in engine.calls if "leastcolor" in c.user_text]  # GOOD's verifier not shown
    grown = json.loads((tmp_path / "ps.json").read_text())
    assert [c["sources"] for c in grown["concepts"]] == [[GOOD, OTHER]]  # the same title: revised, as one build would
    assert results(tmp_path, "elsewhere")["extended"] == {"concepts": 1, "tasks": 1}
    # continued in its own run directory, it starts from the memory it began with, not the grown file
    again = ScriptedEngine(script())
    use(monkeypatch, again)
    assert build(tmp_path, *args, run_dir="elsewhere") == 0 and not again.calls
    assert json.loads((tmp_path / "ps.json").read_text()) == grown
    # a write that adds a concept: the results still count the memory the build began from
    use(monkeypatch, ScriptedEngine(script("recolour the rest")))
    (tmp_path / "ps.json").write_text(json.dumps(first))
    assert build(tmp_path, *args, run_dir="adds") == 0
    assert len(json.loads((tmp_path / "ps.json").read_text())["concepts"]) == 2
    assert results(tmp_path, "adds")["extended"] == {"concepts": 1, "tasks": 1}
    (tmp_path / "ps.json").write_text(json.dumps(grown))
    # without --extend the file is rebuilt from nothing
    use(monkeypatch, ScriptedEngine(script()))
    assert build(tmp_path, "--split", "barc_seeds", "--tasks", OTHER, "--solutions", "rearc", run_dir="fresh") == 0
    assert [c["sources"] for c in json.loads((tmp_path / "ps.json").read_text())["concepts"]] == [[OTHER]]


def test_extend_refuses_a_memory_of_another_format_in_one_line(tmp_path, monkeypatch, capsys):
    (tmp_path / "ps.json").write_text(json.dumps({"format": "oe", "concepts": []}))
    engine = ScriptedEngine(script())
    use(monkeypatch, engine)
    assert build(tmp_path, "--split", "barc_seeds", "--tasks", GOOD, "--solutions", "rearc", "--extend") == 2
    err = capsys.readouterr().err
    assert err == f"error: --extend: {tmp_path / 'ps.json'} holds a memory of format 'oe', not 'ps'\n" and not engine.calls


def test_the_shipped_rearc_memories_come_from_verified_seed_verifiers():
    from memreason.datasets.arc import MEMORIES
    from memreason.eval.arc.build_quality import concept_quality
    from memreason.eval.arc.seeding import memory_sources
    from memreason.programs.arcmemo.memory_file import load_memory

    memory = load_memory(MEMORIES / "rearc_ps.json")
    held = memory_sources(memory)
    seeds = {t.id for t in load_split("barc_seeds")}
    assert memory.format == "ps" and len(memory) == 155
    assert held == seeds - {FAILS, "7e0986d6", "97a05b5b"}  # every verifier that reproduces every pair, and only those

    oe = load_memory(MEMORIES / "rearc_oe.json")
    assert oe.format == "oe" and len(oe) == 91
    # only verified verifiers, less the one whose prompt exceeds the context; tasks that wrote only copies give none
    assert memory_sources(oe) <= seeds - {FAILS, "7e0986d6", "97a05b5b", "264363fd"} and len(memory_sources(oe)) == 83
    assert concept_quality(oe)["copied_from_demos"] == 0  # copies of the demonstration were dropped as written
