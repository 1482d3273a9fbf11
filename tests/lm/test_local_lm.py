"""The real embedded model (Qwen2.5-Coder-1.5B-Instruct, Q4_K_M) on its local llama-server.

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

from memreason.lm import LlamaServer, resolve_lm

pytestmark = pytest.mark.local_lm
ROOT = Path(__file__).resolve().parents[2]


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
    server = embedded.lm.server
    before = server.decode_steps(timeout=60)
    with dspy.context(lm=embedded.lm, adapter=embedded.adapter()):
        result = dspy.Predict(Inventory)(text="A red square, a blue circle and a green square.")
    assert isinstance(result.squares, int)
    assert isinstance(result.colours, list) and all(isinstance(c, str) for c in result.colours)
    assert server.decode_steps(timeout=60) > before >= 0  # the stall watchdog can read the real server's counter


@pytest.mark.parametrize("text", ["There are no animals here.", "A cat, a dog, a cow, a hen and a fox."])
def test_list_bounds_hold_under_the_grammar(embedded, text):
    """Len(1, 2) reaches llama.cpp's grammar. DSPy's plain JSONAdapter gets [] and five animals here."""
    with dspy.context(lm=embedded.lm, adapter=embedded.adapter()):
        animals = dspy.Predict(Animals)(text=text).animals
    assert 1 <= len(animals) <= 2


def test_shared_prefix_is_reused(embedded):
    stats = embedded.lm.server.stats
    prefix = "Background: " + " ".join(f"fact {i} is about a shape;" for i in range(60))
    with dspy.context(lm=embedded.lm, adapter=embedded.adapter()):
        dspy.Predict("context, question -> answer")(context=prefix, question="first?")
        before = stats.reused_prompt_tokens
        dspy.Predict("context, question -> answer")(context=prefix, question="second?")
    assert stats.reused_prompt_tokens - before > 100


def test_concurrent_requests_start_from_the_shared_prefix(embedded):
    """After share_prefix, requests sent at once each reuse the prefix one request computed."""
    from concurrent.futures import ThreadPoolExecutor

    stats = embedded.lm.server.stats
    prefix = "Notes: " + " ".join(f"note {i} says the circle is {['red', 'blue'][i % 2]};" for i in range(80))
    ask = dspy.Predict("context, question -> answer")
    with dspy.context(lm=embedded.lm, adapter=embedded.adapter()):
        ask(context=prefix, question="Which colour is note 0?")
    assert embedded.lm.share_prefix() >= 3
    before = stats.reused_prompt_tokens

    def one(i):
        with dspy.context(lm=embedded.lm, adapter=embedded.adapter()):
            return ask(context=prefix, question=f"Which colour is note {i}?")

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(one, range(1, 5)))
    assert stats.reused_prompt_tokens - before > 4 * 300


def test_weights_are_not_repacked(embedded):
    """No extra buffer (AMX, CPU_REPACK) holds weights unless asked: llama.cpp's AMX path segfaults on some CPUs."""
    path = embedded.lm.server.model
    quiet = LlamaServer(path, slots=1, context=1024, extra=("-lv", "4"))
    try:
        quiet.ensure()
        log = quiet.log_path.read_text()
    finally:
        quiet.stop()
    assert "CPU_Mapped model buffer size" in log  # the log does list the weights' buffers
    assert "REPACK model buffer" not in log and "AMX model buffer" not in log
    if "amx" not in Path("/proc/cpuinfo").read_text():  # the check can fail: repacking shows up when on
        repacking = LlamaServer(path, slots=1, context=1024, repack=True, extra=("-lv", "4"))
        try:
            repacking.ensure()
            assert "CPU_REPACK model buffer size" in repacking.log_path.read_text()
        finally:
            repacking.stop()


def test_cli_runs_on_the_embedded_model(tmp_path):
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "eval", "semantic_oracle", "--level", "1", "--limit", "2", "--out", str(out), "--no-progress"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads((out / "results.json").read_text())
    assert results["examples"] == 2 and results["lm"] == "embedded"
    assert results["tokens"]["task"]["prompt"] > 0 and results["execution"]["engine"]["calls"] == 2
