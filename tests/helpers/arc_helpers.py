"""Shared pieces of the ARC tests: tiny tasks, programs, a small sandbox, scripted LMs."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from memreason.datasets.arc import ArcTask
from memreason.lm import LMChoice, ScriptedEngine
from memreason.sandbox import Isolation, Limits, Sandbox

FLIP = "def transform(grid):\n    return [row[::-1] for row in grid]\n"
RECOLOR = "def transform(grid):\n    return [[2 if c == 1 else c for c in row] for row in grid]\n"
IDENTITY = "def transform(grid):\n    return grid\n"
CRASH = "def transform(grid):\n    return 1 / 0\n"

_UIDS = itertools.count(63000, 50)  # our own program uids, apart from other sandboxes on this host


def flip_task(task_id: str = "flip") -> ArcTask:
    return ArcTask.from_json(
        task_id,
        {
            "train": [{"input": [[1, 2]], "output": [[2, 1]]}, {"input": [[3, 0, 0]], "output": [[0, 0, 3]]}],
            "test": [{"input": [[5, 6]], "output": [[6, 5]]}, {"input": [[7, 8, 9]], "output": [[9, 8, 7]]}],
        },
    )


def recolor_task(task_id: str = "recolor") -> ArcTask:
    return ArcTask.from_json(
        task_id,
        {
            "train": [{"input": [[1, 0]], "output": [[2, 0]]}, {"input": [[0, 1, 1]], "output": [[0, 2, 2]]}],
            "test": [{"input": [[1, 1]], "output": [[2, 2]]}],
        },
    )


def write_tasks(folder: Path, *tasks: ArcTask) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for task in tasks:
        (folder / f"{task.id}.json").write_text(json.dumps(task.to_json()))
    return folder


def choice(engine: ScriptedEngine, spec: str = "scripted") -> LMChoice:
    return LMChoice(spec, engine.lm(), local=False)


def small_sandbox() -> Sandbox:
    return Sandbox(workers=1, limits=Limits(wall_seconds=2.0, cpu_seconds=2), isolation=Isolation(uid_base=next(_UIDS)))


@pytest.fixture(scope="module")
def sandbox():
    with small_sandbox() as box:
        yield box


def solves(call) -> str:
    """The right program for the puzzle in a call (flip or recolour), read from its first example."""
    return FLIP if "input (1 rows x 2 columns):\n12" in call.user_text else RECOLOR


PS_CONCEPT = {
    "title": "flip rows",
    "description": "mirror left-right",
    "kind": "routine",
    "parameters": [{"name": "grid", "type": "Grid", "description": "the input"}],
    "output_typing": "Grid",
    "relevance_cues": ["outputs are mirror images"],
    "implementation_notes": ["row[::-1]"],
}


def last_given(call, name: str):
    """The value of input field ``name`` in the call's final message (after any few-shot demos)."""
    import re

    matches = re.findall(rf"\[\[ ## {name} ## \]\]\n(.*?)(?=\n\n\[\[ ## |\n\nRespond with|\Z)", call.user_text, re.S)
    text = matches[-1]
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def puzzle_of(call) -> str:
    """The puzzle a call carries: the solver's ``puzzle``, or the grids of a memory module's ``problem``."""
    from memreason.programs.arcmemo.arc_problem import ARC_INTRO

    if "[[ ## puzzle ## ]]" in call.user_text:
        return last_given(call, "puzzle")
    return last_given(call, "problem").removeprefix(ARC_INTRO).strip()


def with_pair(task: ArcTask, task_id: str, grid_in, grid_out) -> ArcTask:
    """``task`` under another id with one more train pair (the same rule, a different puzzle text)."""
    data = task.to_json()
    data["train"] = [*data["train"], {"input": grid_in, "output": grid_out}]
    return ArcTask.from_json(task_id, data)


def four_tasks() -> list[ArcTask]:
    """Two flips and two recolours, each puzzle text distinct (a, b, c, d in task order)."""
    return [
        flip_task("a_flip"),
        recolor_task("b_recolor"),
        with_pair(flip_task(), "c_flip", [[4, 5]], [[5, 4]]),
        with_pair(recolor_task(), "d_recolor", [[0, 0, 1]], [[0, 0, 2]]),
    ]


@pytest.fixture
def tiny(tmp_path) -> Path:
    """A split of two tasks: a flip (``a_flip``) and a recolour (``b_recolor``)."""
    return write_tasks(tmp_path / "tiny", flip_task("a_flip"), recolor_task("b_recolor"))


@pytest.fixture
def memory_file(tmp_path) -> Path:
    """A PS memory file holding :data:`PS_CONCEPT`."""
    from memreason.programs import ConceptMemory, save_memory
    from memreason.signatures import PSConcept

    memory = ConceptMemory("ps")
    memory.add([PSConcept(**PS_CONCEPT)], source="seed")
    save_memory(memory, tmp_path / "ps.json")
    return tmp_path / "ps.json"


def arc_responder(selected=("flip rows", "ghost concept")):
    """A scripted ARC LM: right on the first try for flips; wrong first and right on the retry for recolours;
    selection names ``selected``."""
    from .scripted_answers import Script

    def program(call):
        if "input (1 rows x 2 columns):\n12" in call.user_text:
            return {"program": FLIP}
        return {"program": RECOLOR if "previous_program" in call.user_text else IDENTITY}

    return Script(
        program=program,
        selected={"reasoning": "cues", "selected": list(selected)},
        pseudocode={"pseudocode": "1. do it"},
        concepts={"concepts": [{"title": "recolour cells", "kind": "routine"}]},
    )
