"""Stream programs as DSPy modules: memory survives save and load, copies own their memory, and they run async."""

from __future__ import annotations

import asyncio
import copy
import pickle
import threading
import uuid

import dspy
import pytest

from memreason.lm import ScriptedEngine
from memreason.programs import PROGRAMS, build_program
from memreason.programs.registry import STREAM
from memreason.programs.stream import Lesson
from tests.helpers.stream_answers import SOLVER, respond

NAMES = [name for name, spec in PROGRAMS.items() if spec.kind == STREAM and name != "stream_baseline"]
PROBLEM = "Make 24 using 3, 3, 8, 8. Use each number once."


def _program(name: str):
    knobs = {"answer": "function"} if name == "stored_programs" else {}
    return build_program(name, **knobs)


def _written(name: str, engine: ScriptedEngine, item: str = "1"):
    """The program after one write (a right attempt; stored_programs gets a working solve)."""
    program = _program(name)
    solution = SOLVER if name == "stored_programs" else "8 / (3 - 8 / 3)"
    with dspy.context(lm=engine.lm()):
        program.learn(Lesson(item, PROBLEM, solution, True, "", "reference", "Bullets used: none"))
    assert program.memory_size() > 0
    return program


@pytest.mark.parametrize("name", NAMES)
def test_memory_survives_save_and_load(name, tmp_path):
    engine = ScriptedEngine(respond)
    program = _written(name, engine)
    program.save(tmp_path / "p.json")
    again = _program(name)
    again.load(tmp_path / "p.json")
    assert again.memory_state() == program.memory_state() and again.memory_size() == program.memory_size()


@pytest.mark.parametrize("name", NAMES)
def test_a_copy_owns_its_memory(name):
    engine = ScriptedEngine(respond)
    program = _written(name, engine)
    before = program.memory_state()
    for copied in (copy.deepcopy(program), program.deepcopy(), program.reset_copy()):
        assert copied.memory_state() == before
        with dspy.context(lm=engine.lm()):
            copied.learn(Lesson("2", "Make 24 using 1, 2, 3, 4.", "1 * 2 * 3 * 4", True, "", "reference"))
        assert program.memory_state() == before  # a write to the copy leaves the original as it was


@pytest.mark.parametrize("name", NAMES)
def test_the_whole_program_pickles_with_its_memory(name, tmp_path):
    program = _written(name, ScriptedEngine(respond))
    back = pickle.loads(pickle.dumps(program))
    assert back.memory_state() == program.memory_state()
    program.save(tmp_path / "whole", save_program=True)
    loaded = dspy.load(tmp_path / "whole", allow_pickle=True)
    assert loaded.memory_state() == program.memory_state()


def test_copies_written_from_threads_stay_apart():
    engine = ScriptedEngine(respond)
    original = _written("fewshot", engine)
    copies = [original.deepcopy() for _ in range(4)]

    def write(index: int) -> None:
        with dspy.context(lm=engine.lm()):
            copies[index].learn(Lesson(f"t{index}", f"Make 24 using {index + 1}, 2, 3, 4.", "1 + 1", True, "", "reference"))

    threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert original.memory_size() == 1 and all(c.memory_size() == 2 for c in copies)


def test_a_stream_program_answers_async():
    engine = ScriptedEngine(respond)
    program = _written("fewshot", engine)

    async def ask():
        with dspy.context(lm=engine.lm()):
            return await program.acall(problem="Make 24 using 1, 3, 4, 6. Use each number once.", item_id="9")

    out = asyncio.run(ask())
    assert out.answer and "Example 1" in out.memory


def test_a_state_saved_before_memory_was_saved_still_loads(tmp_path):
    program = _written("fewshot", ScriptedEngine(respond))
    state = program.dump_state()
    del state["stream_memory"]  # as saved before the memory was a parameter
    fresh = _program("fewshot")
    fresh.load_state(state)
    assert fresh.memory_size() == 0
    assert _program("fewshot").load_state(program.dump_state()).memory_size() == 1


def test_each_retry_is_a_new_call_even_when_its_prompt_repeats():
    from memreason.datasets.gym_checks import Check
    from memreason.programs.stream import StreamSolver

    engine = ScriptedEngine(lambda call: {"reasoning": "same", "answer": "1 + 1"})
    solver = StreamSolver("text", retries=2)
    problem = f"{PROBLEM} ({uuid.uuid4()})"  # asked nowhere else: DSPy's cache holds nothing for it yet
    with dspy.context(lm=engine.lm(cache=True)):
        out = solver(memory="", problem=problem, check=lambda answer: Check(False, "it is not 24"))
    assert len(out.attempts) == 3
    assert len(engine.calls) == 3  # attempts 2 and 3 send the same prompt; the third is asked again all the same
