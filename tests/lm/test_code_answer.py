"""The code-answer adapter: programs asked for and read back as a fenced code block."""

import dspy
import pytest

from memreason.lm import ScriptedEngine
from memreason.lm.code_answer import CodeAdapter, read_code_answer
from memreason.lm.faults import ResilientAdapter
from memreason.programs import ArcSolver
from tests.helpers.arc_helpers import FLIP, IDENTITY, flip_task, sandbox  # noqa: F401

HELPER = "def helper(x):\n    return x\n"


@pytest.mark.parametrize(
    "completion, program, reasoning",
    [
        (f"```python\n{FLIP}```", FLIP, ""),
        (f"It mirrors each row.\n\n```python\n{FLIP}```\nThis reverses rows.", FLIP, "It mirrors each row."),
        (f"```python\n{HELPER}```\nand\n```\n{FLIP}```", FLIP, ""),  # the block that defines transform, not the first
        (f"```python\n{FLIP}", FLIP, ""),  # cut at the cap before the closing fence
        (FLIP, FLIP.strip(), ""),  # no block: the whole text
        ('{"reasoning": "r", "program": "def transform(g):\\n    return g\\n"}', "def transform(g):\n    return g\n", "r"),
        (f"[[ ## reasoning ## ]]\nr\n\n[[ ## program ## ]]\n{FLIP}\n[[ ## completed ## ]]", FLIP.strip(), "r"),
    ],
)
def test_an_answer_is_read_as_its_code_block(completion, program, reasoning):
    fields = read_code_answer(completion, "reasoning", "program", prefer="def transform")
    assert fields == {"reasoning": reasoning, "program": program}


def test_the_longest_block_when_none_defines_the_name():
    fields = read_code_answer("```\nx = 1\n```\n```\ny = [1, 2, 3]\n```", None, "program", prefer="def transform")
    assert fields == {"program": "y = [1, 2, 3]\n"}


class Write(dspy.Signature):
    """Write a program."""

    task: str = dspy.InputField()
    program: str = dspy.OutputField(desc="Python source")


class TwoOutputs(Write):
    note: str = dspy.OutputField()


def test_a_predictor_asks_for_a_block_without_a_grammar_and_reads_it():
    engine = ScriptedEngine(lambda call: f"Reverse each row.\n```python\n{FLIP}```")
    with dspy.context(lm=engine.lm(), adapter=CodeAdapter(defines="def transform")):
        out = dspy.ChainOfThought(Write)(task="mirror")
    assert out.program == FLIP and out.reasoning == "Reverse each row."
    call = engine.calls[0]
    assert call.response_format is None
    assert (
        "Respond with a few sentences of reasoning, then the program in one ```python code block." in call.user_text
        and "[[ ## task ## ]]\nmirror" in call.user_text
    )


def test_signatures_it_cannot_answer_are_refused():
    engine = ScriptedEngine(lambda call: FLIP)
    with dspy.context(lm=engine.lm(), adapter=CodeAdapter()), pytest.raises(ValueError, match="one str output"):
        dspy.Predict(TwoOutputs)(task="mirror")


@pytest.mark.parametrize("answer", ["code", "fields"])
def test_the_solver_reads_programs_in_either_answer_format(sandbox, answer):  # noqa: F811
    def respond(call):
        return f"```python\n{FLIP}```" if call.response_format is None and answer == "code" else {"program": FLIP}

    engine = ScriptedEngine(respond)
    solver = ArcSolver(sandbox=sandbox, with_concepts=False, attempts=1, answer=answer)
    session = ResilientAdapter.around(dspy.JSONAdapter())  # the local route: JSON under a grammar
    with dspy.context(lm=engine.lm(), adapter=session):
        attempt = solver(task=flip_task()).attempts[0]
    assert attempt.final.program == FLIP and attempt.final.passed_train
    asked_for_json = engine.calls[0].response_format is not None
    assert asked_for_json is (answer == "fields")  # the code answer is never under a grammar


def test_the_solver_refuses_an_unknown_answer_format():
    with pytest.raises(ValueError, match="answer must be 'code' or 'fields'"):
        ArcSolver(answer="yaml")


def test_a_code_answer_keeps_the_session_fault_policy():
    solver = ArcSolver(with_concepts=False, attempts=1)
    session = ResilientAdapter.around(dspy.ChatAdapter())
    with dspy.context(adapter=session), solver._answering():
        adapter = dspy.settings.adapter
    assert isinstance(adapter, ResilientAdapter) and adapter.policy is session.policy
    assert [type(f) for f in adapter.formats] == [CodeAdapter]
