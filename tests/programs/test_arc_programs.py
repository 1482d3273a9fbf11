"""ArcMemo's modules and programs on the scripted engine: selection, abstraction, Algorithm 1."""

import copy
import pickle

import dspy
import pytest

from memreason.datasets.arc import puzzle_text
from memreason.lm import ScriptedEngine
from memreason.programs import (
    PROGRAMS,
    ConceptAbstractor,
    ConceptMemory,
    ConceptSelector,
    arc_problem,
    arc_problem_image,
    build_program,
    use_arc_demos,
)
from memreason.programs.arcmemo.arc_program import Feedback
from memreason.programs.arcmemo.cheatsheet import curated_entries
from memreason.programs.registry import GRIDS
from memreason.signatures import OEConcept, PSConcept
from tests.helpers.arc_helpers import FLIP, PS_CONCEPT, flip_task, last_given, recolor_task, sandbox  # noqa: F401
from tests.helpers.scripted_answers import Script, given


def ps_memory(*titles):
    memory = ConceptMemory("ps")
    memory.add([PSConcept(**{**PS_CONCEPT, "title": t}) for t in titles], source="seed")
    return memory


def in_context(engine, fn):
    with dspy.context(lm=engine.lm(), adapter=dspy.ChatAdapter()):
        return fn()


# -- ConceptSelector ---------------------------------------------------------------------


def test_ps_selection_drops_and_counts_hallucinated_names():
    memory = ps_memory("flip rows", "sort objects", "tile grid")
    script = Script(selected={"reasoning": "cues", "selected": ["Flip Rows", "draw spiral", "tile grid", "flip rows", "made up"]})
    engine = ScriptedEngine(script)
    out = in_context(engine, lambda: ConceptSelector("ps")(problem=arc_problem(flip_task()), memory=memory))
    assert out.names == ["flip rows", "tile grid"]
    assert out.record["hallucinated"] == ["draw spiral", "made up"]
    assert "## flip rows" in out.concepts and "## tile grid" in out.concepts and "sort objects" not in out.concepts
    assert [e.uses for e in memory.entries] == [1, 0, 1]
    shown = given(engine.calls[0], "memory")
    assert "- sort objects [routine] (grid: Grid) -> Grid; cues: outputs are mirror images" in shown
    assert engine.calls[0].user_text.index("[[ ## memory ## ]]") < engine.calls[0].user_text.index("[[ ## problem ## ]]")
    assert given(engine.calls[0], "problem") == arc_problem(flip_task())
    assert out.record["tokens"]["calls"] == 1


def test_ps_selection_reads_a_title_written_as_an_identifier():
    # the embedded model's spellings on 1D-ARC: snake case, a space lost, case changed
    memory = ps_memory("count number of 1s", "set its value to the first dot", "slide cells")
    asked = ["count_number_of_1s", "setits_value_to_the_first_dot", "Slide-Cells", "count_number_of_2s", "slide"]
    engine = ScriptedEngine(Script(selected={"reasoning": "-", "selected": asked}))
    out = in_context(engine, lambda: ConceptSelector("ps")(problem="p", memory=memory))
    assert out.names == ["count number of 1s", "set its value to the first dot", "slide cells"]
    assert out.record["hallucinated"] == ["count_number_of_2s", "slide"]
    assert out.record["asked"] == asked


def test_ps_titles_that_differ_only_in_separators_are_one_concept():
    memory = ps_memory("slide cells")
    added = memory.add([PSConcept(**{**PS_CONCEPT, "title": "Slide_Cells"})], source="other")
    assert added == {"added": [], "revised": ["slide cells"]} and len(memory) == 1
    memory.add([PSConcept(**{**PS_CONCEPT, "title": "slide-cells"})], revise=False)
    assert memory.names() == ["slide cells", "slide-cells (2)"]
    assert memory.resolve(["???"]) == ([], ["???"])


def test_ps_cues_copied_from_the_compressed_rendering_are_written_one_by_one():
    # the compressed line joins cues with "; "; a writer shown it hands such a line back as a single cue
    memory = ConceptMemory("ps")
    joined = "0 is background; cells keep their order; 0 is background"
    memory.add([PSConcept(**{**PS_CONCEPT, "title": "slide", "relevance_cues": ["0 is background", joined]})], source="a")
    assert memory.entries[0].concept.relevance_cues == ["0 is background", "cells keep their order"]
    revision = {**PS_CONCEPT, "title": "Slide", "relevance_cues": ["cells keep their order;0 is background; wraps around"]}
    memory.add([PSConcept(**revision)], source="b")
    assert memory.entries[0].concept.relevance_cues == ["0 is background", "cells keep their order", "wraps around"]
    assert "cues: 0 is background; cells keep their order; wraps around" in memory.render(compressed=True)


def test_ps_selection_respects_top_k_and_skips_an_empty_memory():
    memory = ps_memory("a", "b", "c")
    engine = ScriptedEngine(Script(selected={"reasoning": "-", "selected": ["c", "b", "a"]}))
    out = in_context(engine, lambda: ConceptSelector("ps", top_k=2)(problem="p", memory=memory))
    assert out.names == ["c", "b"]
    idle = ScriptedEngine(Script())
    empty = in_context(idle, lambda: ConceptSelector("ps")(problem="p", memory=ConceptMemory("ps")))
    assert empty.names == [] and idle.calls == []


def test_oe_selection_captions_then_picks_top_k_numbers():
    memory = ConceptMemory("oe")
    memory.add([OEConcept(situation=f"situation {i}", suggestion=f"do {i}") for i in range(1, 5)])
    script = Script(speculation={"observations": ["rows are mirrored"], "speculation": ["flip"]}, chosen={"chosen": [3, 9, 1, 2]})
    engine = ScriptedEngine(script)
    out = in_context(engine, lambda: ConceptSelector("oe", top_k=2)(problem=arc_problem(flip_task()), memory=memory))
    assert script.asked == ["speculation", "chosen"]
    assert out.names == ["3", "1"] and out.record["hallucinated"] == ["9"]
    assert "suggestion: do 3" in out.concepts and "do 2" not in out.concepts
    select = engine.calls[1]
    assert given(select, "observations") == ["rows are mirrored"] and given(select, "top_k") == 2
    assert "1. situation 1" in given(select, "situations") and "do 1" not in given(select, "situations")


def test_oe_caption_can_read_an_image():
    memory = ConceptMemory("oe")
    memory.add([OEConcept(situation="s", suggestion="x")])
    engine = ScriptedEngine(Script(speculation={"observations": [], "speculation": []}, chosen={"chosen": [1]}))
    in_context(engine, lambda: ConceptSelector("oe")(problem=arc_problem_image(flip_task()), memory=memory))
    assert engine.calls[0].images == 1 and engine.calls[1].images == 0


def test_arcmemo_oe_in_image_modality_captions_the_task_drawn():
    program = build_program("arcmemo_oe", modality="image")
    program.memory.add([OEConcept(situation="s", suggestion="x")])
    engine = ScriptedEngine(Script(speculation={"observations": [], "speculation": []}, chosen={"chosen": [1]}))
    concepts, read = in_context(engine, lambda: program.read(flip_task()))
    assert engine.calls[0].images == 1 and read["selected"] == ["1"] and "suggestion: x" in concepts


# -- ConceptAbstractor -------------------------------------------------------------------


def test_ps_abstraction_goes_through_pseudocode_and_sees_compressed_memory():
    memory = ps_memory("flip rows")
    revised = {**PS_CONCEPT, "relevance_cues": ["mirror symmetry"], "implementation_notes": ["numpy.fliplr"]}
    new = {
        "title": "map cells",
        "kind": "routine",
        "parameters": [{"name": "f", "type": "Callable[[int], int]", "description": "per-cell rule"}],
    }
    script = Script(pseudocode={"pseudocode": "1. reverse every row"}, concepts={"concepts": [revised, new]})
    engine = ScriptedEngine(script)
    out = in_context(engine, lambda: ConceptAbstractor("ps")(problem="p", solution=FLIP, memory=memory, source="flip"))
    assert script.asked == ["pseudocode", "concepts"]
    call = engine.calls[1]
    assert last_given(call, "pseudocode") == "1. reverse every row"
    assert last_given(call, "memory") == "- flip rows [routine] (grid: Grid) -> Grid; cues: outputs are mirror images"
    assert last_given(call, "solution").strip() == FLIP.strip()
    assert out.record["added"] == ["map cells"] and out.record["revised"] == ["flip rows"]
    assert memory.names() == ["flip rows", "map cells"]
    flip = memory.entries[0].concept
    assert flip.relevance_cues == ["outputs are mirror images", "mirror symmetry"]
    assert flip.implementation_notes == ["row[::-1]", "numpy.fliplr"]
    assert memory.entries[0].sources == ["seed", "flip"]


def test_a_memory_too_long_for_the_context_is_shown_short_to_abstraction_and_selection_and_recorded():
    memory = ps_memory(*[f"concept {i}" for i in range(40)])
    short, how = memory.shown(1000)
    assert how.startswith("cut ")
    program = build_program("arcmemo_ps")
    program.use_memory(memory)
    program.show_memory_within(1000)
    script = Script(
        selected={"reasoning": "-", "selected": ["concept 1"]},
        pseudocode={"pseudocode": "1. reverse every row"},
        concepts={"concepts": [PS_CONCEPT]},
    )
    engine = ScriptedEngine(script)
    _, read = in_context(engine, lambda: program.read(flip_task()))
    record = in_context(engine, lambda: program.write(flip_task(), FLIP))
    assert given(engine.calls[0], "memory") == short and read["memory_shown"] == how
    assert "concepts_shown" not in read  # one concept in full fits
    assert last_given(engine.calls[-1], "memory") == short and record["memory_shown"] == how
    program.show_memory_within(100)  # the concept read in full does not: the solver gets it cut, and the record says so
    _, read = in_context(engine, lambda: program.read(flip_task()))
    assert read["concepts_shown"] == "cut 1"
    selector = ConceptSelector("ps", reselect=True)  # a retry's re-selection keeps to the same limit, and says so
    selector.memory_chars = 1000
    engine = ScriptedEngine(Script(chosen={"chosen": ["concept 2"]}))
    again = in_context(engine, lambda: selector.reselect("p", memory, previous_program="x", feedback="wrong"))
    now, cut = memory.shown(1000)  # the write above added a concept
    assert given(engine.calls[0], "memory") == now and again.record["memory_shown"] == cut and cut.startswith("cut ")
    program.show_memory_within(None)  # a context not known: the whole memory, as before
    engine = ScriptedEngine(script)
    _, read = in_context(engine, lambda: program.read(flip_task()))
    assert given(engine.calls[0], "memory") == memory.render(compressed=True) and "memory_shown" not in read


@pytest.mark.parametrize("format", ["oe", "ps"])
def test_a_concept_copied_from_the_demonstration_is_not_written(format):
    from memreason.programs.arcmemo.abstraction_demos import OE_CONCEPTS, PS_CONCEPTS

    if format == "oe":
        copy = {"situation": OE_CONCEPTS[0].situation.upper() + ".", "suggestion": "other words"}
        own = {"situation": "rows are mirrored", "suggestion": "reverse each row"}
        script = Script(derivation={"derivation": ["Observation: mirrored"]}, concepts={"concepts": [copy, own]})
    else:
        copy = {**PS_CONCEPTS[1].model_dump(), "description": "other words"}  # the title and first note: a copy
        own = {**PS_CONCEPTS[0].model_dump(), "implementation_notes": ["reverse each row"]}  # the title alone: kept
        script = Script(pseudocode={"pseudocode": "1. reverse every row"}, concepts={"concepts": [copy, own]})
    abstractor = ConceptAbstractor(format)
    use_arc_demos(abstractor)
    memory = ConceptMemory(format)
    out = in_context(ScriptedEngine(script), lambda: abstractor(problem="p", solution=FLIP, memory=memory, source="t"))
    assert len(memory) == 1 and len(out.record["concepts"]) == 2
    if format == "oe":
        assert memory.entries[0].concept.situation == "rows are mirrored"
        assert out.record["copied_from_demos"] == [copy["situation"]]
    else:
        assert memory.names() == ["find objects"] and out.record["copied_from_demos"] == ["sort objects"]
    bare = ConceptMemory(format)  # no demonstration shown: nothing counts as a copy
    out = in_context(ScriptedEngine(script), lambda: ConceptAbstractor(format)(problem="p", solution=FLIP, memory=bare))
    assert len(bare) == 2 and "copied_from_demos" not in out.record


def test_abstraction_kept_apart_sees_no_memory_and_revises_nothing():
    memory = ps_memory("flip rows")
    script = Script(
        pseudocode={"pseudocode": "1. reverse every row"}, concepts={"concepts": [{**PS_CONCEPT, "title": "Flip rows"}]}
    )
    engine = ScriptedEngine(script)
    out = in_context(engine, lambda: ConceptAbstractor("ps", revise=False)(problem="p", solution=FLIP, memory=memory, source="t"))
    assert last_given(engine.calls[1], "memory") == "(empty)"
    assert out.record["added"] == ["Flip rows (2)"] and out.record["revised"] == []
    assert memory.names() == ["flip rows", "Flip rows (2)"]
    assert [e.sources for e in memory.entries] == [["seed"], ["t"]]


@pytest.mark.parametrize(
    "format, revise, drafted",
    [("ps", True, ["pseudocode"]), ("ps", False, ["pseudocode", "concepts"]), ("oe", True, ["derivation", "concepts"])],
)
def test_a_draft_makes_the_calls_that_read_no_memory_and_the_write_only_the_rest(format, revise, drafted):
    memory = ps_memory("flip rows") if format == "ps" else ConceptMemory("oe")
    script = Script(
        pseudocode={"pseudocode": "1. reverse every row"},
        derivation={"derivation": ["Observation: rows reversed"]},
        concepts=lambda call: (
            {"concepts": [{"situation": "mirror", "suggestion": "reverse rows"}]}
            if "situation" in call.system
            else {"concepts": [{**PS_CONCEPT, "title": "map cells"}]}
        ),
    )
    engine = ScriptedEngine(script)
    abstractor = ConceptAbstractor(format, revise=revise)
    draft = in_context(engine, lambda: abstractor.draft(problem="p", solution=FLIP))
    assert script.asked == drafted and draft["tokens"]["calls"] == len(drafted)
    if format == "ps" and revise:  # the memory is read at write time: a concept added after the draft is shown
        memory.add([PSConcept(**{**PS_CONCEPT, "title": "tile grid"})], source="later")
    out = in_context(engine, lambda: abstractor(problem="p", solution=FLIP, memory=memory, source="t", draft=draft))
    assert len(engine.calls) == 2 and out.record["tokens"]["calls"] == 2  # the draft's calls count in the write's record
    if format == "ps" and revise:
        assert script.asked == ["pseudocode", "concepts"] and "tile grid" in last_given(engine.calls[1], "memory")
    assert "map cells" in " ".join(memory.names()) or format == "oe"
    assert [e.sources for e in memory.entries][-1] == ["t"]


def test_oracle_selection_reads_the_concepts_of_the_tasks_own_concept_without_an_lm(sandbox):
    memory = ConceptMemory("ps")
    memory.add([PSConcept(**{**PS_CONCEPT, "title": "shift"})], source="move_1pix_solid_right@s0i0")
    memory.add([PSConcept(**{**PS_CONCEPT, "title": "fall"})], source="gravity_left@s0i0")
    memory.add([PSConcept(**{**PS_CONCEPT, "title": "shift"})], source="gravity_left@s0i1")
    program = build_program("arcmemo_ps_oracle", attempts=1, sandbox=sandbox)
    program.use_memory(memory)
    engine = ScriptedEngine(Script(program={"program": FLIP}))
    out = in_context(engine, lambda: program(task=flip_task("gravity_left@s9i0")))
    assert len(engine.calls) == 1  # the solver's: the read asks no LM
    assert out.read["selected"] == ["shift", "fall"] and out.read["oracle"] == "own"
    assert out.read["selected_sources"]["fall"] == ["gravity_left@s0i0"]
    concepts = given(engine.calls[0], "concepts")
    assert "## shift" in concepts and "## fall" in concepts
    assert "gravity" not in engine.calls[0].text  # the concept's name reaches no prompt
    assert [e.uses for e in memory.entries] == [1, 1]


def test_for_a_family_memory_never_saw_the_oracle_reads_the_families_that_cover_its_parts(sandbox):
    memory = ConceptMemory("ps")
    for title, source in [
        ("slide three", "move_3pix_solid_right@s0i0"),
        ("fall", "gravity_left@s0i0"),
        ("wrap around", "move_1pix_solid_wrapped_left@s0i0"),
        ("slide one", "move_1pix_solid_right@s0i0"),
    ]:
        memory.add([PSConcept(**{**PS_CONCEPT, "title": title})], source=source)
    program = build_program("arcmemo_ps_oracle", attempts=1, sandbox=sandbox)
    program.use_memory(memory)
    engine = ScriptedEngine(Script(program={"program": FLIP}))
    out = in_context(engine, lambda: program(task=flip_task("move_3pix_solid_wrapped_right@s9i0")))
    # move, 3pix, solid, right from the plain move by 3; wrapped from the wrapped move (fewest blocks the task lacks)
    assert out.read["selected"] == ["slide three", "wrap around"] and out.read["oracle"] == "parts"
    assert "wrapped" not in engine.calls[0].text and "move_" not in engine.calls[0].text


def test_covering_families_pick_greedily_and_only_for_1d_arc():
    from memreason.programs.arcmemo.arcmemo import covering_families

    held = {"move_3pix_solid_right", "move_3pix_solid_wrapped_left", "gravity_left", "move_3pix_colorful_wrapped_right"}
    assert covering_families("move_3pix_solid_wrapped_right", held) == [
        "move_3pix_solid_right",
        "move_3pix_colorful_wrapped_right",
    ]
    assert covering_families("gravity_counting_left", held) == ["gravity_left"]  # counting is held by no family
    assert covering_families("007bbfb7", held) == []  # an ARC task: no building blocks


def test_a_program_refuses_an_unknown_selection():
    with pytest.raises(ValueError, match="select must be True, False, 'oracle' or 'execute'"):
        build_program("arcmemo_ps", select="best")


def test_the_arc_programs_give_abstraction_its_few_shot_demos_the_module_carries_none():
    with_demos = ConceptAbstractor("ps")
    use_arc_demos(with_demos)
    engine = ScriptedEngine(Script(pseudocode={"pseudocode": "p"}, concepts={"concepts": []}))
    in_context(engine, lambda: with_demos(problem="p", solution=FLIP, memory=ConceptMemory("ps")))
    assert "sort objects" in engine.calls[1].user_text  # the demo's higher-order concept
    bare = ScriptedEngine(Script(pseudocode={"pseudocode": "p"}, concepts={"concepts": []}))
    in_context(bare, lambda: ConceptAbstractor("ps")(problem="p", solution=FLIP, memory=ConceptMemory("ps")))
    assert not any("sort objects" in c.text for c in bare.calls)
    assert (
        build_program("arcmemo_ps").abstractor.abstract.demos
        and not build_program("arcmemo_ps", demos=False).abstractor.abstract.demos
    )
    oe = build_program("arcmemo_oe").abstractor
    assert oe.derive.demos[0]["problem"].startswith(
        arc_problem(flip_task()).split("\n\n")[0]
    )  # stated as the program states tasks


def test_oe_abstraction_derives_then_abstracts_without_reading_memory():
    memory = ConceptMemory("oe")
    script = Script(
        derivation={"derivation": ["Observation: rows reversed", "Thought: mirror"]},
        concepts={"concepts": [{"situation": "output mirrors input", "suggestion": "reverse rows"}]},
    )
    engine = ScriptedEngine(script)
    problem = arc_problem(flip_task(), test_inputs=False)
    out = in_context(engine, lambda: ConceptAbstractor("oe")(problem=problem, solution=FLIP, memory=memory, source="flip"))
    assert script.asked == ["derivation", "concepts"]
    assert last_given(engine.calls[1], "derivation") == ["Observation: rows reversed", "Thought: mirror"]
    assert last_given(engine.calls[0], "problem") == problem and "Test 1" not in problem
    assert out.record["added"] == ["1"] and memory.entries[0].sources == ["flip"]


def test_arcmemo_states_the_task_to_its_memory_modules(sandbox):
    program = build_program("arcmemo_ps", attempts=1, continual_every=1, sandbox=sandbox)
    program.use_memory(ps_memory("flip rows"))
    script = Script(
        program={"program": FLIP},
        selected={"reasoning": "-", "selected": ["flip rows"]},
        pseudocode={"pseudocode": "p"},
        concepts={"concepts": [{"title": "c"}]},
    )
    engine = ScriptedEngine(script)
    writes = []
    in_context(engine, lambda: program.solve_all([flip_task("a")], on_write=lambda i, records: writes.append(records)))
    select = engine.calls[script.asked.index("selected")]
    assert last_given(select, "problem") == arc_problem(flip_task("a")) and puzzle_text(flip_task("a")) in select.user_text
    assert writes[0][0]["task"] == "a" and writes[0][0]["added"] == ["c"] and "source" not in writes[0][0]
    assert program.memory.entries[1].sources == ["a"]


@pytest.mark.parametrize("revise", [True, False])
def test_a_continual_write_keeps_the_verified_program_with_each_concept_it_adds_or_revises(sandbox, revise):
    program = build_program("arcmemo_ps", attempts=1, continual_every=1, revise=revise, sandbox=sandbox)
    program.use_memory(ps_memory("flip rows"))
    script = Script(
        program={"program": FLIP},
        selected={"reasoning": "-", "selected": []},
        pseudocode={"pseudocode": "p"},
        concepts={"concepts": [{"title": "flip rows"}, {"title": "c"}]},
    )
    engine = ScriptedEngine(script)
    in_context(engine, lambda: program.solve_all([flip_task("a")]))
    kept = dict(program.memory.stored_programs())
    if revise:  # "flip rows" revised, "c" added: both keep the solution's code
        assert kept == {"flip rows": [FLIP], "c": [FLIP]}
    else:  # kept apart: the seed concept is untouched, the new ones keep the code
        assert kept == {"flip rows": [], "flip rows (2)": [FLIP], "c": [FLIP]}


# -- programs and Algorithm 1 -------------------------------------------------------------


def test_the_arc_programs_are_registered():
    assert {n for n, s in PROGRAMS.items() if s.kind == GRIDS} == {
        "baseline",
        "cheatsheet",
        "arcmemo_oe",
        "arcmemo_ps",
        "arcmemo_ps_noselect",
        "arcmemo_ps_oracle",
        "arcmemo_ps_exec",
        "arcmemo_ps_exec_solution",
    }
    no_selector = ("arcmemo_ps_noselect", "arcmemo_ps_oracle", "arcmemo_ps_exec", "arcmemo_ps_exec_solution")
    assert all(build_program(name).selector is None for name in no_selector)
    assert build_program("arcmemo_ps_exec").top_k == 3 and build_program("arcmemo_ps_exec", top_k=5).top_k == 5
    program = build_program("arcmemo_ps", attempts=3, retries=2, top_k=4, continual_every=5)
    assert (program.solver.attempts, program.solver.retries, program.selector.top_k, program.continual_every) == (3, 2, 4, 5)
    with pytest.raises(ValueError):
        build_program("baseline", continual_every=3)


def test_continual_writes_happen_exactly_every_k_problems_and_only_from_verified_solutions(sandbox):
    tasks = [flip_task(f"f{i}") if i % 2 == 0 else recolor_task(f"r{i}") for i in range(7)]
    # only flips are solved (the solver returns FLIP for everything): f0 f2 f4 f6 verified, r1 r3 r5 not
    script = Script(
        program={"program": FLIP},
        selected={"reasoning": "-", "selected": []},
        pseudocode={"pseudocode": "p"},
        concepts={"concepts": [{"title": "c"}]},
    )
    engine = ScriptedEngine(script)
    program = build_program("arcmemo_ps", attempts=1, continual_every=3, sandbox=sandbox)
    writes = []
    in_context(
        engine, lambda: program.solve_all(tasks, on_write=lambda i, records: writes.append((i, [r["task"] for r in records])))
    )
    assert writes == [(3, ["f0", "f2"]), (6, ["f4"])]  # after problems 3 and 6; none after 7 (f6)
    assert program.memory.entries[0].sources == ["f0", "f2", "f4"]
    assert script.asked.count("pseudocode") == 3  # one abstraction per verified solution, no more


def test_the_test_write_gate_needs_the_train_pairs_and_the_test_labels():
    """As in the released code: a solution is written only if it also passes the train pairs."""
    program = build_program("arcmemo_ps", write_gate="test")
    task = flip_task()

    def attempt(passed_train: bool, test_outputs):
        step = type("Step", (), {"passed_train": passed_train, "program": FLIP, "test_outputs": test_outputs})()
        return type("Attempt", (), {"index": 0, "final": step})()

    right, wrong = [[[6, 5]], [[9, 8, 7]]], [[[5, 6]], [[9, 8, 7]]]
    assert program.feedback(task, [attempt(True, right)]) == Feedback(True, FLIP, "attempt 0 passes the train and test pairs")
    assert not program.feedback(task, [attempt(False, right)]).verified  # fails the train pairs
    assert not program.feedback(task, [attempt(True, wrong)]).verified  # fails a test pair
    train_gate = build_program("arcmemo_ps")
    assert train_gate.feedback(task, [attempt(True, wrong)]).verified  # the train gate reads no test label
    assert not train_gate.feedback(task, [attempt(False, right)]).verified
    assert not train_gate.feedback(task, None).verified


def test_frozen_memory_solves_every_task_in_one_batch_and_never_writes(sandbox):
    program = build_program("arcmemo_ps", attempts=1, sandbox=sandbox)
    batches = []

    def solve_batch(batch):
        batches.append(len(batch))
        return [program(task=t) for t in batch]

    engine = ScriptedEngine(Script(program={"program": FLIP}))
    in_context(
        engine,
        lambda: program.solve_all(
            [flip_task("a"), flip_task("b")],
            solve_batch=solve_batch,
            on_write=lambda *a: pytest.fail("frozen memory was written"),
        ),
    )
    assert batches == [2]


def test_noselect_puts_all_of_memory_in_context(sandbox):
    program = build_program("arcmemo_ps_noselect", attempts=1, sandbox=sandbox)
    program.use_memory(ps_memory("flip rows", "sort objects"))
    script = Script(program={"program": FLIP})
    engine = ScriptedEngine(script)
    in_context(engine, lambda: program(task=flip_task()))
    assert script.asked == ["program"]
    concepts = given(engine.calls[0], "concepts")
    assert "## flip rows" in concepts and "## sort objects" in concepts


def test_memory_lm_runs_selection_and_the_task_lm_solves(sandbox):
    program = build_program("arcmemo_ps", attempts=1, sandbox=sandbox)
    program.use_memory(ps_memory("flip rows"))
    memory_engine = ScriptedEngine(Script(selected={"reasoning": "-", "selected": ["flip rows"]}))
    task_engine = ScriptedEngine(Script(program={"program": FLIP}))
    program.set_memory_lm(memory_engine.lm())
    out = in_context(task_engine, lambda: program(task=flip_task()))
    assert len(memory_engine.calls) == 1 and len(task_engine.calls) == 1
    assert "## flip rows" in given(task_engine.calls[0], "concepts")
    assert out.attempts[0].final.passed_train and out.read["selected"] == ["flip rows"]


def test_an_unreadable_selection_answer_does_not_forfeit_the_puzzle(sandbox):
    """A looping selector (no parseable answer), or a selection prompt beyond the context, leaves the solver without
    concepts; other LM errors still stop."""
    from memreason.lm.faults import LMFailure

    program = build_program("arcmemo_ps", attempts=1, sandbox=sandbox)
    program.use_memory(ps_memory("flip rows"))
    program.set_memory_lm(ScriptedEngine(lambda call: '{ "reasoning": "the shape moves down and the shape moves down and').lm())
    task_engine = ScriptedEngine(Script(program={"program": FLIP}))
    out = in_context(task_engine, lambda: program(task=flip_task()))
    assert out.read["selected"] == [] and "parse" in out.read["failed"]
    assert given(task_engine.calls[0], "concepts") == "(none)" and out.attempts[0].final.passed_train

    from memreason.lm.faults import ResilientAdapter, RetryPolicy  # the harness's route: LMFailure("unparseable")

    with dspy.context(lm=task_engine.lm(), adapter=ResilientAdapter.around(dspy.JSONAdapter(), RetryPolicy(retries=1))):
        again = program(task=flip_task())
    assert again.read["failed"].startswith("unparseable after 2 attempts") and again.attempts[0].final.passed_train

    def too_long(call):  # llama-server's answer to a prompt beyond its context
        raise dspy.LMInvalidRequestError("request (8485 tokens) exceeds the available context size (8192 tokens)")

    program.set_memory_lm(ScriptedEngine(too_long).lm())
    long = in_context(task_engine, lambda: program(task=flip_task()))
    assert "exceeds the available context" in long.read["failed"] and long.attempts[0].final.passed_train

    def refused(call):
        raise dspy.LMInvalidRequestError("unknown parameter 'foo'")

    program.set_memory_lm(ScriptedEngine(refused).lm())
    with pytest.raises(Exception, match="unknown parameter"):
        in_context(task_engine, lambda: program(task=flip_task()))

    def rate_limited(call):
        raise LMFailure("rate_limit", "429", 4)

    program.set_memory_lm(ScriptedEngine(rate_limited).lm())
    with pytest.raises(Exception, match="rate_limit after 4 attempts"):
        in_context(task_engine, lambda: program(task=flip_task()))


def test_a_memory_of_the_wrong_format_is_refused():
    with pytest.raises(ValueError, match="needs a ps memory"):
        build_program("arcmemo_ps").use_memory(ConceptMemory("oe"))
    with pytest.raises(ValueError):
        build_program("baseline").use_memory(ConceptMemory("ps"))


def test_cheatsheet_reads_the_whole_sheet_and_curates_on_writes(sandbox):
    program = build_program("cheatsheet", attempts=1, continual_every=1, sandbox=sandbox)
    script = Script(
        program={"program": FLIP}, updated_cheatsheet=lambda call: {"updated_cheatsheet": ["flip rows with row[::-1]"]}
    )
    engine = ScriptedEngine(script)
    in_context(engine, lambda: program.solve_all([flip_task("a"), flip_task("b")]))
    assert script.asked == ["program", "updated_cheatsheet", "program", "updated_cheatsheet"]
    assert given(engine.calls[2], "concepts") == "- flip rows with row[::-1]"
    assert program.memory.sources == ["a", "b"]


def test_a_curated_entry_is_dropped_when_it_echoes_the_prompts_field_markers_or_repeats_one():
    answer = [
        "[[ ## cheatsheet ## ]]",
        "- Slide a block with row[k:] + row[:k]",
        "",
        "slide a block  with row[k:] + row[:k]",
        "Fill gaps",
    ]
    assert curated_entries(answer) == (["Slide a block with row[k:] + row[:k]", "Fill gaps"], 2)
    assert curated_entries("- one\n[[ ## puzzle ## ]] Example 1\n* two") == (["one", "two"], 1)
    assert curated_entries(["-1 fills the last cell"]) == (["-1 fills the last cell"], 0)  # a minus is not a bullet


def test_a_curation_of_nothing_but_field_markers_is_refused_and_the_cheatsheet_stays(sandbox):
    program = build_program("cheatsheet", attempts=1, continual_every=1, sandbox=sandbox)
    answers = iter([["flip rows with row[::-1]"], ["[[ ## cheatsheet ## ]]", "[[ ## cheatsheet ## ]] [[ ## puzzle ## ]]"]])
    script = Script(program={"program": FLIP}, updated_cheatsheet=lambda call: {"updated_cheatsheet": next(answers)})
    writes = []
    in_context(
        ScriptedEngine(script),
        lambda: program.solve_all([flip_task("a"), flip_task("b")], on_write=lambda i, records: writes.append(records)),
    )
    assert writes[0][0]["entries"] == 1 and "CurationRefused" in writes[1][0]["error"]
    assert program.memory.text == "- flip rows with row[::-1]" and program.memory.sources == ["a"]


def test_a_failed_write_is_recorded_and_the_loop_goes_on(sandbox):
    program = build_program("arcmemo_ps", attempts=1, continual_every=1, sandbox=sandbox)
    engine = ScriptedEngine(
        Script(
            program={"program": FLIP},
            selected={"reasoning": "-", "selected": []},
            pseudocode=["unparseable", "again (JSON fallback)", {"pseudocode": "p"}],
            concepts={"concepts": [{"title": "c"}]},
        )
    )

    writes = []
    results = in_context(
        engine, lambda: program.solve_all([flip_task("a"), flip_task("b")], on_write=lambda i, records: writes.append(records))
    )
    assert len(results) == 2 and len(writes) == 2
    assert "error" in writes[0][0] and writes[1][0]["added"] == ["c"]


# -- acall: one body for forward and aforward ---------------------------------------------------

ARC_SCRIPTS = {  # every ARC program, with the answers its read and its solver ask for
    "baseline": dict(program={"program": FLIP}),
    "cheatsheet": dict(program={"program": FLIP}),
    "arcmemo_ps": dict(program={"program": FLIP}, selected={"reasoning": "-", "selected": ["flip rows"]}),
    "arcmemo_oe": dict(
        program={"program": FLIP}, speculation={"observations": ["mirrored"], "speculation": ["flip"]}, chosen={"chosen": [1]}
    ),
    "arcmemo_ps_noselect": dict(program={"program": FLIP}),
    "arcmemo_ps_exec": dict(program={"program": FLIP}),
    "arcmemo_ps_exec_solution": dict(program={"program": FLIP}),
}


def arc_program_with_memory(name, sandbox):
    program = build_program(name, attempts=2, sandbox=sandbox)
    if name.startswith("arcmemo_oe"):
        program.memory.add([OEConcept(situation="the output mirrors the input", suggestion="reverse each row")])
    elif name.startswith("arcmemo"):
        program.use_memory(ps_memory("flip rows"))
        program.memory.entries[0].programs = [FLIP]  # what an execution-ranked read runs
    elif name == "cheatsheet":
        program.memory.text = "reverse each row with row[::-1]"
    return program


@pytest.mark.parametrize("name", ARC_SCRIPTS)
def test_every_arc_program_answers_the_same_through_acall(name, sandbox):
    import asyncio

    sync_engine, async_engine = ScriptedEngine(Script(**ARC_SCRIPTS[name])), ScriptedEngine(Script(**ARC_SCRIPTS[name]))
    expected = in_context(sync_engine, lambda: arc_program_with_memory(name, sandbox)(task=flip_task()))
    got = in_context(async_engine, lambda: asyncio.run(arc_program_with_memory(name, sandbox).acall(task=flip_task())))
    assert [a.to_json() for a in got.attempts] == [a.to_json() for a in expected.attempts]
    assert got.read == expected.read and got.concepts == expected.concepts
    assert all(a.final.passed_train for a in got.attempts) and len(got.attempts) == 2
    assert [c.text for c in async_engine.calls] == [c.text for c in sync_engine.calls] and sync_engine.calls


def test_an_unreadable_selection_answer_does_not_forfeit_the_puzzle_through_acall_either(sandbox):
    import asyncio

    program = build_program("arcmemo_ps", attempts=1, sandbox=sandbox)
    program.use_memory(ps_memory("flip rows"))
    program.set_memory_lm(ScriptedEngine(lambda call: '{ "reasoning": "the shape moves down and the shape').lm())
    task_engine = ScriptedEngine(Script(program={"program": FLIP}))
    out = in_context(task_engine, lambda: asyncio.run(program.acall(task=flip_task())))
    assert out.read["selected"] == [] and "parse" in out.read["failed"]
    assert given(task_engine.calls[0], "concepts") == "(none)" and out.attempts[0].final.passed_train


# -- memory writers out of optimizers' reach --------------------------------------------------------


@pytest.mark.parametrize("name, writer", [("arcmemo_ps", "abstractor"), ("arcmemo_oe", "abstractor"), ("cheatsheet", "curate")])
def test_the_memory_writers_are_frozen_out_of_optimizers_reach(name, writer):
    program = build_program(name)
    listed = [n for n, _ in program.named_predictors()]
    assert listed and not [n for n in listed if n.startswith(writer)]
    writers = program.memory_writer_predictors()
    assert writers and all(n.startswith(writer) for n, _ in writers)
    if writer == "abstractor":  # a module: DSPy's own listing skips it, as it skips a compiled sub-module
        assert program.abstractor._compiled and not [n for n, _ in dspy.Module.named_parameters(program) if n.startswith(writer)]
    opened = build_program(name, freeze_memory_writers=False)
    assert {n for n, _ in opened.memory_writer_predictors()} <= {n for n, _ in opened.named_predictors()}
    with pytest.raises(TypeError, match="freeze_memory_writers must be True or False"):
        build_program(name, freeze_memory_writers="yes")


def test_an_optimizer_leaves_the_abstractor_alone_and_the_program_still_writes_saves_and_loads(sandbox, tmp_path):
    program = build_program("arcmemo_ps", attempts=1, continual_every=1, sandbox=sandbox)
    program.use_memory(ps_memory("flip rows"))
    demos = {n: list(p.demos) for n, p in program.memory_writer_predictors()}
    assert all(demos.values())  # the hand-written ARC demos
    trainset = [
        dspy.Example(task=flip_task(), problem="p", memory="m", program=FLIP, selected=["flip rows"], reasoning="-").with_inputs(
            "task"
        )
    ]
    compiled = dspy.LabeledFewShot(k=1).compile(program, trainset=trainset)  # resets, then gives demos to what it sees
    assert {n: list(p.demos) for n, p in compiled.memory_writer_predictors()} == demos
    assert all(len(p.demos) == 1 for _, p in compiled.named_predictors())

    memory_engine = ScriptedEngine(
        Script(
            selected={"reasoning": "-", "selected": ["flip rows"]},
            pseudocode={"pseudocode": "p"},
            concepts={"concepts": [{"title": "mirror"}]},
        )
    )
    program.set_memory_lm(memory_engine.lm())
    assert all(p.lm is not None for _, p in program.memory_writer_predictors())  # the memory LM reaches the writers
    in_context(ScriptedEngine(Script(program={"program": FLIP})), lambda: program.solve_all([flip_task("a")]))
    assert [e.concept.title for e in program.memory.entries] == ["flip rows", "mirror"]  # the abstractor ran
    program.abstractor.abstract.demos = program.abstractor.abstract.demos[:0]  # a change of the user's own
    for _, predictor in program.named_predictors():  # as a harness saves: no LM of the run in the file
        predictor.lm = None
    program.save(str(tmp_path / "program.json"))  # the writers' state is saved, without their (scripted) LM
    for freeze in (True, False):
        fresh = build_program("arcmemo_ps", freeze_memory_writers=freeze)
        fresh.load(str(tmp_path / "program.json"))
        assert fresh.memory.to_json() == program.memory.to_json() and fresh.abstractor.abstract.demos == []
        assert fresh.abstractor.abstract.lm is None


def test_a_memory_module_given_none_for_its_memory_refuses_it_before_any_call():
    import asyncio

    engine = ScriptedEngine(Script())
    for module, inputs in [
        (ConceptSelector("ps"), {"problem": "p"}),
        (ConceptAbstractor("ps"), {"problem": "p", "solution": "s"}),
    ]:
        with pytest.raises(TypeError, match="needs a ConceptMemory, got None"):
            in_context(engine, lambda: module(**inputs, memory=None))
        with pytest.raises(TypeError, match="needs a ConceptMemory, got None"):
            in_context(engine, lambda: asyncio.run(module.acall(**inputs, memory=None)))
    with pytest.raises(TypeError, match="needs a ps memory, got None"):
        build_program("arcmemo_ps").use_memory(None)
    assert engine.calls == []


# -- copies and pickles ----------------------------------------------------------------------------------

COPIES = {"deepcopy": copy.deepcopy, "dspy deepcopy": lambda p: p.deepcopy(), "pickle": lambda p: pickle.loads(pickle.dumps(p))}


@pytest.mark.parametrize("name", sorted(n for n, s in PROGRAMS.items() if s.kind == GRIDS))
def test_every_arc_program_with_its_own_sandbox_copies_and_pickles_and_the_copy_runs_code_in_workers_of_its_own(name, sandbox):
    script = ARC_SCRIPTS.get(name, dict(program={"program": FLIP}))  # the oracle reads its concepts without an LM
    program = arc_program_with_memory(name, sandbox)
    expected = in_context(ScriptedEngine(Script(**script)), lambda: program(task=flip_task()))
    workers = sandbox.worker_pids()
    for how, make in COPIES.items():
        twin = make(program)
        box = twin.solver.sandbox
        try:
            assert box is not sandbox and box.worker_pids() == [], how  # a handle with the same settings, not started
            assert (box.limits, box.isolation) == (sandbox.limits, sandbox.isolation)
            assert twin.dump_state() == program.dump_state(), how
            got = in_context(ScriptedEngine(Script(**script)), lambda: twin(task=flip_task()))
            assert [a.to_json() for a in got.attempts] == [a.to_json() for a in expected.attempts], how
            assert all(a.final.passed_train for a in got.attempts), how  # the copy ran the program
            assert box.worker_pids() and not set(box.worker_pids()) & set(workers), how
        finally:
            box.close()
    assert sandbox.worker_pids() == workers  # the original's workers are untouched
    assert in_context(ScriptedEngine(Script(**script)), lambda: program(task=flip_task())).attempts[0].final.passed_train
