"""The real embedded model (Qwen2.5-Coder-1.5B-Instruct, Q4_K_M) through llama.cpp.

Marked ``local_lm``: skipped, with the reason, when the ``local`` extra is not installed.
"""

import json
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import dspy
import pytest
from annotated_types import Len

from eval.lm import resolve_lm

pytestmark = pytest.mark.local_lm
ROOT = Path(__file__).resolve().parents[1]


class Inventory(dspy.Signature):
    """List the colours mentioned and count the squares."""

    text: str = dspy.InputField()
    colours: list[str] = dspy.OutputField()
    squares: int = dspy.OutputField()


class Animals(dspy.Signature):
    """List the animals the text mentions."""

    text: str = dspy.InputField()
    animals: Annotated[list[str], Len(1, 2)] = dspy.OutputField()


@pytest.fixture(scope="module")
def embedded():
    return resolve_lm(None, cache=False)


def test_typed_outputs_parse_under_the_grammar(embedded):
    with dspy.context(lm=embedded.lm, adapter=embedded.adapter()):
        result = dspy.Predict(Inventory)(text="A red square, a blue circle and a green square.")
    assert isinstance(result.squares, int)
    assert isinstance(result.colours, list) and all(isinstance(c, str) for c in result.colours)


@pytest.mark.parametrize("text", ["There are no animals here.", "A cat, a dog, a cow, a hen and a fox."])
def test_list_bounds_hold_under_the_grammar(embedded, text):
    """Len(1, 2) reaches llama.cpp's grammar. DSPy's plain JSONAdapter gets [] and five animals here."""
    with dspy.context(lm=embedded.lm, adapter=embedded.adapter()):
        animals = dspy.Predict(Animals)(text=text).animals
    assert 1 <= len(animals) <= 2


def test_shared_prefix_is_reused(embedded):
    engine = embedded.lm.engine
    prefix = "Background: " + " ".join(f"fact {i} is about a shape;" for i in range(60))
    with dspy.context(lm=embedded.lm, adapter=embedded.adapter()):
        dspy.Predict("context, question -> answer")(context=prefix, question="first?")
        before = engine.stats.reused_prompt_tokens
        dspy.Predict("context, question -> answer")(context=prefix, question="second?")
    assert engine.stats.reused_prompt_tokens - before > 100


def test_cli_runs_on_the_embedded_model(tmp_path):
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "eval", "semantic_oracle", "--level", "1", "--limit", "2", "--out", str(out), "--no-progress"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads((out / "results.json").read_text())
    assert results["examples"] == 2 and results["lm"] == "embedded"
    assert results["tokens"]["task"]["prompt"] > 0 and results["execution"]["engine"]["calls"] == 2
