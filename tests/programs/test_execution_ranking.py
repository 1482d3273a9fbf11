"""Execution-ranked concept selection (``arcmemo_ps_exec``) on the scripted engine: concepts ranked by running
their stored programs on the train pairs, no LM call to select, test pairs never read."""

import itertools
import time

import dspy
import pytest

from memreason.datasets.arc import ArcTask
from memreason.lm import ScriptedEngine
from memreason.programs import ConceptMemory, build_program
from memreason.programs.arcmemo.execution_ranking import pair_score, rank_concepts
from memreason.sandbox import Isolation, Limits, Sandbox
from memreason.signatures import PSConcept
from tests.helpers.arc_helpers import CRASH, FLIP, IDENTITY, PS_CONCEPT, RECOLOR, flip_task, recolor_task
from tests.helpers.scripted_answers import Script, given, outputs

LOOP = "def transform(grid):\n    while True:\n        pass\n"
_UIDS = itertools.count(64000, 50)


@pytest.fixture(scope="module")
def quick():
    """A sandbox whose wall clock stops a looping program after half a second a grid."""
    limits = Limits(wall_seconds=0.5, cpu_seconds=1)
    with Sandbox(workers=1, limits=limits, isolation=Isolation(uid_base=next(_UIDS))) as box:
        yield box


class Recording:
    """A sandbox that remembers every grid it was given."""

    def __init__(self, sandbox):
        self.sandbox, self.grids = sandbox, []

    def run(self, source, grids):
        self.grids.extend(grids)
        return self.sandbox.run(source, grids)


def memory_of(*concepts: tuple[str, str | None]) -> ConceptMemory:
    """A PS memory of concepts (title, the program it keeps, or None), each from a source of its own."""
    memory = ConceptMemory("ps")
    for title, program in concepts:
        memory.add([PSConcept(**{**PS_CONCEPT, "title": title})], source=f"{title}_task", program=program)
    return memory


def unlabelled_flip() -> ArcTask:
    """A flip task whose test outputs are hidden."""
    data = flip_task().to_json()
    data["test"] = [{"input": pair["input"]} for pair in data["test"]]
    return ArcTask.from_json("hidden", data)


def in_context(engine, fn):
    with dspy.context(lm=engine.lm(), adapter=dspy.ChatAdapter()):
        return fn()


def test_a_pair_scores_the_share_of_cells_right_and_nothing_for_another_shape_or_no_output():
    assert pair_score([[1, 2]], [[1, 2]]) == 1.0
    assert pair_score([[1, 0, 0, 3]], [[1, 2, 0, 0]]) == 0.5
    assert pair_score([[1, 2, 0]], [[1, 2]]) == pair_score([[1], [2]], [[1, 2]]) == pair_score(None, [[1]]) == 0.0


def test_the_read_ranks_by_running_the_stored_programs_and_asks_no_lm(quick):
    memory = memory_of(
        ("no program", None),
        ("crashes", CRASH),
        ("loops", LOOP),
        ("keeps the grid", IDENTITY),  # one cell in six right
        ("recolours", RECOLOR),  # half of the first pair, a third of the second
        ("mirrors", FLIP),  # every pair right
    )
    program = build_program("arcmemo_ps_exec", attempts=1, sandbox=quick)
    program.use_memory(memory)
    engine = ScriptedEngine(Script(program={"program": FLIP}))
    started = time.monotonic()
    out = in_context(engine, lambda: program(task=unlabelled_flip()))
    assert time.monotonic() - started < 10  # the loop is stopped by the sandbox's wall clock
    read = out.read
    assert read["selected"] == ["mirrors", "recolours", "keeps the grid"]  # top_k 3, best first, all above 0
    assert read["scores"] == {"mirrors": 1.0, "recolours": 0.4167, "keeps the grid": 0.1667, "crashes": 0.0, "loops": 0.0}
    assert read["selected_sources"]["mirrors"] == ["mirrors_task"] and read["tokens"]["calls"] == 0
    assert read["programs_run"] == 5
    assert [outputs(call)[-1] for call in engine.calls] == ["program"]  # the solver's call alone: the read asks no LM
    concepts = given(engine.calls[0], "concepts")
    assert concepts.index("## mirrors") < concepts.index("## recolours") < concepts.index("## keeps the grid")
    assert "def transform" not in engine.calls[0].user_text  # no stored program reaches the prompt
    assert "_task" not in engine.calls[0].text  # nor any source
    assert [e.uses for e in memory.entries] == [0, 0, 0, 1, 1, 1]
    assert out.attempts[0].final.passed_train


def test_only_the_train_inputs_are_run_and_concepts_without_programs_are_never_selected(quick):
    task = recolor_task()
    recording = Recording(quick)
    program = build_program("arcmemo_ps_exec", sandbox=recording)
    program.use_memory(memory_of(("no program", None), ("mirrors", FLIP), ("recolours", RECOLOR)))
    text, read = program.read(task)
    assert recording.grids == [p.input for p in task.train] * 2  # two programs, train inputs only
    assert read["selected"] == ["recolours"] and read["scores"] == {"recolours": 1.0, "mirrors": 0.0}  # no cell right
    assert "## recolours" in text and "## no program" not in text and "## mirrors" not in text
    program.use_memory(memory_of(("no program", None), ("other", None)))
    assert program.read(task)[1]["selected"] == [] and program.read(task)[1]["programs_run"] == 0
    program.use_memory(memory_of(("crashes", CRASH)))  # every program scores 0: nothing is selected
    text, read = program.read(task)
    assert read["selected"] == [] and read["scores"] == {"crashes": 0.0} and text == ""


def test_a_program_kept_by_several_concepts_runs_once_and_ties_keep_memory_order(quick):
    recording = Recording(quick)
    memory = memory_of(("first", FLIP), ("second", FLIP), ("third", IDENTITY))
    ranking = rank_concepts(memory, flip_task().train, recording)
    assert ranking.scores[:2] == [("first", 1.0), ("second", 1.0)] and ranking.runs == 2
    assert len(recording.grids) == 2 * len(flip_task().train)
    assert ranking.selected(top_k=1) == ["first"]


def test_a_retry_keeps_the_first_execution_ranked_read(quick):
    program = build_program("arcmemo_ps_exec", attempts=1, retries=1, reselect=True, sandbox=quick)
    program.use_memory(memory_of(("recolours", RECOLOR), ("mirrors", FLIP)))
    script = Script(program=[{"program": IDENTITY}, {"program": RECOLOR}])
    engine = ScriptedEngine(script)
    out = in_context(engine, lambda: program(task=recolor_task()))
    first, retry = engine.calls
    assert given(retry, "concepts") == given(first, "concepts")  # no concept added, none asked for
    step = out.attempts[0].steps[1]
    assert step.read["reselected"] and step.read["kept_first"] and step.read["selected"] == []
    assert step.read["tokens"]["calls"] == 0 and step.program == RECOLOR


def test_a_read_by_solution_keeps_every_concept_abstracted_with_the_best_programs_in_memory_order(quick):
    memory = ConceptMemory("ps")
    memory.add([PSConcept(**{**PS_CONCEPT, "title": "keep the grid"})], source="identity_task", program=IDENTITY)
    memory.add(
        [PSConcept(**{**PS_CONCEPT, "title": t}) for t in ("reverse each row", "new row of the same length")],
        source="flip_task",
        program=FLIP,
    )
    memory.add([PSConcept(**{**PS_CONCEPT, "title": "recolour"})], source="recolor_task", program=RECOLOR)
    ranking = rank_concepts(memory, flip_task().train, quick)
    assert [round(score, 4) for score, _ in ranking.solutions] == [1.0, 0.4167, 0.1667]
    assert ranking.selected_by_solution(top_k=1) == ["reverse each row", "new row of the same length"]
    assert ranking.selected_by_solution(top_k=2) == ["reverse each row", "new row of the same length", "recolour"]
    assert ranking.selected(top_k=1) == ["reverse each row"]  # by concept: a fragment of the same solution
    program = build_program("arcmemo_ps_exec_solution", attempts=1, sandbox=quick)
    assert program.top_k == 1 and program.read_by == "solution"
    program.use_memory(memory)
    text, read = program.read(unlabelled_flip())
    assert read["selected"] == ["reverse each row", "new row of the same length"]
    assert read["solution_scores"] == [1.0, 0.4167, 0.1667] and read["tokens"]["calls"] == 0
    assert text == memory.render(["reverse each row", "new row of the same length"])
    assert read["selected_sources"] == {"reverse each row": ["flip_task"], "new row of the same length": ["flip_task"]}
    program.use_memory(memory_of(("crashes", CRASH)))  # no program scores above 0: nothing is read
    assert program.read(unlabelled_flip())[1]["selected"] == []


def test_read_by_solution_is_refused_without_an_execution_ranked_read():
    with pytest.raises(ValueError, match="read_by"):
        build_program("arcmemo_ps", read_by="whole")
    with pytest.raises(ValueError, match="select='execute'"):
        build_program("arcmemo_ps", read_by="solution")
