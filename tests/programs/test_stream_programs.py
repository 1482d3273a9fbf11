"""The stream programs on their own: the guard, retrieval, the checks, the solver's retries, snapshots."""

from __future__ import annotations

import dspy
import pytest

from memreason.datasets.gym import GymData
from memreason.datasets.gym_checks import checker_for, expression_value
from memreason.lm import ScriptedEngine
from memreason.programs import build_program
from memreason.programs.registry import PROGRAMS, STREAM
from memreason.programs.stream import Entry, EntryMemory, Lesson, StreamSolver, similarity
from tests.helpers.stream_answers import SOLVER, respond

STREAMING = [name for name, spec in PROGRAMS.items() if spec.kind == STREAM]
PROBLEM = "Make 24 using 3, 4, 6, 8. You can only use each number once."


@pytest.mark.parametrize("program", [p for p in STREAMING if p != "stream_baseline"])
def test_an_item_is_never_shown_an_entry_written_from_itself(program):
    engine = ScriptedEngine(respond)
    built = build_program(program)
    solution = SOLVER if program == "stored_programs" else "3 * 8 * (6 - 4) / 2"  # stored programs keep functions
    with dspy.context(lm=engine.lm()):
        built.learn(Lesson("7", PROBLEM, solution, True, "", "reference"))
        own = built.read(PROBLEM, "7")
        other = built.read(PROBLEM, "8")
    assert own.withheld >= 1 and other.withheld == 0
    assert other.text.strip() and not own.text.strip()  # the only entry is item 7's: item 7 sees none
    restored = build_program(program)
    restored.load_memory(built.memory_state())
    assert restored.memory_state() == built.memory_state() and restored.memory_size() == built.memory_size()


def test_wrong_solutions_are_not_kept_as_examples_but_are_kept_as_pitfalls():
    engine = ScriptedEngine(respond)
    fewshot, failures = build_program("fewshot"), build_program("failure_memory")
    wrong = Lesson("1", PROBLEM, "1 + 1", False, "it is worth 2, not 24", "check")
    with dspy.context(lm=engine.lm()):
        fewshot.learn(wrong)
        failures.learn(wrong)
    assert fewshot.memory_size() == 0
    assert failures.memory_size() == 1 and failures.read(PROBLEM, "2").text.startswith("- Pitfall:")


def test_retrieval_finds_the_most_similar_problem():
    memory = EntryMemory()
    memory.add(Entry("a", ["1"], key="Calculate 5 - 3 - 6."))
    memory.add(Entry("b", ["2"], key="Make 24 using 1, 3, 5, 9."))
    assert [e.text for e in memory.nearest("Make 24 using 2, 3, 5, 9.", k=1)] == ["b"]
    assert similarity("make 24", "make 24") == pytest.approx(1.0) and similarity("abc", "xyz") == 0


def test_the_checks_read_the_problem_not_its_reference():
    item = GymData("puzzle24").items(seed=0, size=1)[0]
    check = checker_for("puzzle24")
    assert check(item.metadata, item.answer).ok
    assert "leaves out" in check(item.metadata, "1 * 3 * 5").feedback
    assert "not among" in check(item.metadata, "4 * 6").feedback
    assert "not an arithmetic expression" in check(item.metadata, "import os").feedback
    countdown = GymData("countdown").items(seed=0, size=1)[0]
    assert checker_for("countdown")(countdown.metadata, countdown.answer).ok
    assert checker_for("basic_arithmetic") is None
    assert expression_value("(8 - 5) * 10 - 6")[1] == [8, 5, 10, 6]


def test_the_solver_retries_on_a_failed_check_only():
    engine = ScriptedEngine(respond)
    solver = StreamSolver("text", retries=2)
    even = "Make 24 using 8, 5, 10, 6."  # the script answers "1 + 1" to problems whose first number is even
    check = checker_for("puzzle24")
    with dspy.context(lm=engine.lm()):
        checked = solver(memory="", problem=even, check=lambda a: check({"numbers": [8, 5, 10, 6]}, a))
        unchecked = solver(memory="", problem=even)
    assert len(checked.attempts) == 3 and checked.checked is False and "fails the check" in checked.attempts[0]["feedback"]
    assert len(unchecked.attempts) == 1 and unchecked.checked is None
    # the reasoning behind each try is kept, the final one's with the final answer
    assert [a["reasoning"] for a in checked.attempts] == ["worked it out", "fixed", "fixed"] and checked.reasoning == "fixed"
    assert unchecked.reasoning == "worked it out"


@pytest.mark.parametrize("program", [p for p in STREAMING if p != "stream_baseline"])
def test_the_writers_that_read_attempts_see_the_reasoning_the_others_the_answer(program):
    engine = ScriptedEngine(respond)
    built = build_program(program)
    solution = SOLVER if program == "stored_programs" else "3 * 8 * (6 - 4) / 2"
    why = "Pair 3 with 8 first, then halve what 6 and 4 leave"
    with dspy.context(lm=engine.lm()):
        built.learn(Lesson("7", PROBLEM, solution, True, "", "reference", why))
        shown = built.read(PROBLEM, "8").text
    written = "\n".join(c.user_text for c in engine.calls) + str(built.memory_state()) + shown
    assert (why in written) == PROGRAMS[program].reads_attempts  # read where the writer reads attempts, nowhere else
    assert solution.strip().splitlines()[0] in written  # the answer itself, always
    assert Lesson("7", PROBLEM, solution).attempt() == solution  # no reasoning kept: the answer alone, as it was


def test_memory_comes_before_the_problem_in_the_prompt():
    engine = ScriptedEngine(respond)
    program = build_program("cheatsheet_cu")
    with dspy.context(lm=engine.lm()):
        program.learn(Lesson("s0", PROBLEM, "3 * 8 * (6 - 4) / 2", True, "", "reference"))
        program(problem="Make 24 using 1, 3, 5, 9.", item_id="0")
    prompt = engine.calls[-1].user_text
    assert prompt.index("[[ ## memory ## ]]") < prompt.index("[[ ## problem ## ]]")
    assert "Try products" in prompt
