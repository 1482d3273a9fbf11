"""The library's modules in a pipeline of the user's own, on a task that is neither ARC nor Experience-Transfer.

Fruit ripeness: episodes are plain strings, hypotheses come from HDR's ``MemoryConsolidator``,
tips come from an OE concept memory read by ``ConceptSelector``, and a ``Reasoner`` with the
user's own signature answers ``ripe: bool``. The pipeline runs with ``acall``, compiles with
``dspy.BootstrapFewShot``, and saves and loads with its memory -- on ``dspy.utils.DummyLM``.
"""

import asyncio
import logging

import dspy
import pytest
from dspy.utils import DummyLM

from memreason.programs import ConceptMemory, ConceptSelector, ExperienceMemory, MemoryConsolidator, Reasoner
from memreason.programs.shared.steps import arun, call, run

EPISODES = ["a yellow banana with brown spots: ripe", "a hard green banana: unripe", "a soft yellow banana: ripe"]
TIPS = [
    {"situation": "the skin has brown spots", "suggestion": "the fruit is ripe: its starch has turned to sugar"},
    {"situation": "the skin is green", "suggestion": "wait a few days"},
]
RULE = "Bananas with brown spots or soft yellow skin are ripe; hard green ones are not."
FRUITS = {"a yellow banana with brown spots": True, "a hard green banana": False, "a soft yellow banana": True}


class RipenessExpert(dspy.Module):
    """Is this fruit ripe? From remembered fruits, the rules drawn from them, and stored tips."""

    def __init__(self):
        super().__init__()
        self.consolidate = MemoryConsolidator(K=1, N=1)
        self.select = ConceptSelector("oe", top_k=1)
        self.answer = Reasoner(signature="tips: str, fruit: str -> ripe: bool")
        self.memory = ExperienceMemory()  # episodes and hypotheses: saved and loaded with the program
        self.tips = ConceptMemory("oe")  # lessons: saved and loaded with the program

    async def amemorize(self, episodes, tips):
        consolidated = await self.consolidate.acall(episodes=episodes)
        self.memory.set(episodes, consolidated.hypotheses, consolidated.record)
        self.tips.add(tips)

    def steps(self, fruit):  # one body for forward (what BootstrapFewShot runs) and aforward
        chosen = yield call(self.select, problem=fruit, memory=self.tips)
        return (yield call(self.answer, **self.memory.recall(), tips=chosen.concepts, fruit=fruit))

    def forward(self, fruit):
        return run(self.steps(fruit))

    async def aforward(self, fruit):
        return await arun(self.steps(fruit))


def stand_in_lm() -> DummyLM:
    """Answers by the output field the prompt asks for; ``ripe`` by the fruit asked about."""
    return DummyLM(
        {
            **{f"[[ ## fruit ## ]]\n{fruit}": {"ripe": ripe} for fruit, ripe in FRUITS.items()},
            "`[[ ## factors ## ]]`": {"factors": ["skin colour", "brown spots", "firmness"]},
            "`[[ ## hypotheses ## ]]`": {"hypotheses": [RULE]},
            "`[[ ## verdicts ## ]]`": {"verdicts": [{"hypothesis": RULE, "reason": "every episode agrees", "verdict": "valid"}]},
            "`[[ ## observations ## ]]`": {"observations": ["a banana"], "speculation": ["check the skin"]},
            "`[[ ## chosen ## ]]`": {"chosen": [1]},
        }
    )


def ripe(example, prediction, trace=None) -> bool:
    return prediction.ripe == example.ripe


@pytest.fixture
def lm():
    lm = stand_in_lm()
    with dspy.context(lm=lm):
        yield lm


def test_a_user_pipeline_memorizes_and_answers_with_acall_from_plain_strings(lm, caplog):
    expert = RipenessExpert()
    with caplog.at_level(logging.WARNING):
        asyncio.run(expert.amemorize(EPISODES, TIPS))
        answers = {fruit: asyncio.run(expert.acall(fruit=fruit)).ripe for fruit in FRUITS}
    assert answers == FRUITS
    assert expert.memory.hypotheses == [RULE] and expert.memory.consolidation["factors"][0] == "skin colour"
    assert [e.observation for e in expert.memory.episodes] == EPISODES and expert.memory.episodes[0].label is None
    assert not [r for r in caplog.records if "mismatch" in r.getMessage()]  # strings are episodes: no type warning
    prompt = lm.history[-1]["messages"][-1]["content"]
    assert '{"observation": "a yellow banana with brown spots: ripe"}' in prompt and RULE in prompt
    assert "the fruit is ripe" in prompt and "wait a few days" not in prompt  # only the tip the selector chose


def test_the_pipeline_compiles_with_bootstrap_few_shot_and_saves_and_loads_with_its_memory(lm, tmp_path):
    expert = RipenessExpert()
    asyncio.run(expert.amemorize(EPISODES, TIPS))
    trainset = [dspy.Example(fruit=f, ripe=r).with_inputs("fruit") for f, r in FRUITS.items()]
    compiled = dspy.BootstrapFewShot(metric=ripe, max_bootstrapped_demos=2, max_labeled_demos=2).compile(
        expert, trainset=trainset
    )
    demos = compiled.answer.answer.demos
    assert len(demos) == 2 and all(set(d) >= {"fruit", "tips", "ripe"} for d in demos)
    compiled(fruit="a hard green banana")
    messages = lm.history[-1]["messages"]
    assert len(messages) == 1 + 2 * 2 + 1  # system, two demos (user and assistant turns), the query
    assert ["[[ ## episodes ## ]]" in m["content"] for m in messages[1:]] == [False] * 4 + [True]  # memory once

    compiled.save(str(tmp_path / "expert.json"))
    loaded = RipenessExpert()
    loaded.load(str(tmp_path / "expert.json"))
    assert loaded.memory.hypotheses == [RULE] and [e.observation for e in loaded.memory.episodes] == EPISODES
    assert loaded.memory.consolidation == compiled.memory.consolidation
    assert [e.concept for e in loaded.tips.entries] == [e.concept for e in compiled.tips.entries]
    assert len(loaded.answer.answer.demos) == 2
    for fruit, expected in FRUITS.items():
        assert asyncio.run(loaded.acall(fruit=fruit)).ripe == compiled(fruit=fruit).ripe == expected


def test_a_reader_of_memory_given_none_refuses(lm):
    expert = RipenessExpert()  # memorize never ran
    expert.tips.add(TIPS)
    with pytest.raises(ValueError, match="reads episodic memory"):
        asyncio.run(expert.acall(fruit="a hard green banana"))


def test_every_public_module_documents_every_knob_of_its_constructor():
    import inspect

    import memreason.programs as programs

    modules = [getattr(programs, n) for n in programs.__all__ if inspect.isclass(getattr(programs, n))]
    modules = [m for m in modules if issubclass(m, dspy.Module)]
    assert len(modules) > 20
    for module in modules:
        doc = inspect.getdoc(module.__init__) or ""
        knobs = [p for p in inspect.signature(module.__init__).parameters if p != "self"]
        assert doc and all(k in doc for k in knobs), f"{module.__name__}: document {knobs} in __init__'s docstring"


def test_the_main_programs_import_from_the_top_and_importing_memreason_imports_nothing_else():
    import subprocess
    import sys

    code = (
        "import sys, memreason; loaded = sorted(m for m in sys.modules if m.startswith('memreason.') or m == 'dspy');"
        "from memreason import HDR, HDRGrounded, ArcMemoPS, ArcMemoOE, MemoryConsolidator, Reasoner, ConceptMemory;"
        "import memreason.programs as p; assert HDR is p.HDR and ArcMemoPS is p.ArcMemoPS; print(loaded)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"  # nothing imported until a name is used
    import memreason

    assert all(getattr(memreason, name) is not None for name in memreason.__all__)
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        memreason.Nothing  # noqa: B018


def test_every_public_module_of_the_programs_declares_what_it_exports():
    import importlib
    import pkgutil

    import memreason.programs as programs

    names = ["memreason.programs"] + [m.name for m in pkgutil.walk_packages(programs.__path__, "memreason.programs.")]
    assert {"memreason.programs.hdr.hdr", "memreason.programs.arcmemo.arcmemo", "memreason.programs.shared.reader_knobs"} <= set(
        names
    )
    for name in names:
        module = importlib.import_module(name)
        assert isinstance(getattr(module, "__all__", None), list), f"{name} has no __all__"
        assert all(hasattr(module, n) for n in module.__all__), name
    exported = set(programs.__all__)
    for package in ("hdr", "arcmemo"):
        assert set(importlib.import_module(f"memreason.programs.{package}").__all__) <= exported
