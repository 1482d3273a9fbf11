"""The LM layer: scripted engine, LM resolution errors, weight assembly."""

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import dspy
import pytest

from memreason.lm import LMConfigError, ScriptedEngine, resolve_lm
from memreason.lm.weights import EmbeddedModelMissing, ModelParts, embedded_model_path

ROOT = Path(__file__).resolve().parents[2]


class Ask(dspy.Signature):
    question: str = dspy.InputField()
    answer: int = dspy.OutputField()


@pytest.mark.parametrize("adapter", [dspy.ChatAdapter(), dspy.JSONAdapter()])
def test_scripted_engine_answers_in_the_adapters_format(adapter):
    engine = ScriptedEngine(lambda call: {"answer": len(call.user_text.split("?")) - 1})
    with dspy.context(lm=engine.lm(), adapter=adapter):
        assert dspy.Predict(Ask)(question="how? why?").answer == 2
    call = engine.calls[-1]
    assert "how? why?" in call.user_text
    assert (call.response_format is not None) == isinstance(adapter, dspy.JSONAdapter)


def test_scripted_engine_reports_usage():
    engine = ScriptedEngine([{"answer": 1}])
    with dspy.context(lm=engine.lm(), track_usage=True):
        result = dspy.Predict(Ask)(question="one")
    usage = next(iter(result.get_lm_usage().values()))
    assert usage["prompt_tokens"] == len(engine.calls[0].text.split()) and usage["completion_tokens"] > 0


RACE = """
import importlib, sys, threading, time
from memreason.lm import resolve_lm
if sys.argv[1] == "resolve":
    resolve_lm("llamacpp/x", api_base="http://127.0.0.1:9/v1")
# a worker reads a cached LiteLLM response (unpickling imports litellm) while another makes the first live call
reader = threading.Thread(target=importlib.import_module, args=("litellm.types.utils",))
reader.start()
time.sleep(0.3)
from dspy.clients._litellm import get_litellm
try:
    get_litellm(feature="a live call")
    print("whole")
except AttributeError as exc:
    print(exc)
reader.join()
"""


def test_litellm_is_imported_whole_before_a_run_starts_its_threads():
    # without resolve_lm first, DSPy 3.4 hands the live call the half-imported module:
    # "partially initialized module 'litellm' has no attribute 'completion'"
    run = subprocess.run([sys.executable, "-c", RACE, "resolve"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "whole"


def test_a_local_model_file_that_is_not_there_is_refused_before_litellm_is_imported(tmp_path):
    script = (
        "import sys\n"
        "from memreason.eval.cli import main\n"
        "code = main(['hdr', '--level', '1', '--lm', 'local:/no/such.gguf', '--out', sys.argv[1]])\n"
        "print(code, 'litellm' in sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", script, str(tmp_path / "run")], capture_output=True, text=True, timeout=120)
    assert run.stdout.split() == ["2", "False"], run.stderr[-2000:]
    assert run.stderr.strip().splitlines() == ["error: no GGUF file at /no/such.gguf"]
    assert not (tmp_path / "run").exists()


def test_unknown_lm_and_missing_key(monkeypatch):
    with pytest.raises(LMConfigError, match="unknown LM"):
        resolve_lm("nonsense-model-xyz")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(LMConfigError, match="OPENAI_API_KEY"):
        resolve_lm("openai/gpt-4o-mini")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    choice = resolve_lm("openai/gpt-4o-mini")
    assert not choice.local and isinstance(choice.adapter(), dspy.ChatAdapter)
    with pytest.raises(LMConfigError, match="no GGUF file"):
        resolve_lm("local:/does/not/exist.gguf")


def test_api_base_needs_no_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    choice = resolve_lm("hosted_vllm/my-model", api_base="http://127.0.0.1:9/v1")
    assert choice.lm.model == "hosted_vllm/my-model"


def test_a_llama_server_of_your_own_needs_its_address():
    with pytest.raises(LMConfigError, match="--api-base"):
        resolve_lm("llamacpp/qwen")
    choice = resolve_lm("llamacpp/qwen", api_base="http://127.0.0.1:9/v1")
    assert choice.lm.model == "llamacpp/qwen" and choice.lm.supports_response_schema


def _fake_parts(tmp_path, monkeypatch, slices):
    """Install fake weight packages fakepartN/data/partNN.bin on sys.path."""
    for i, payload in enumerate(slices, 1):
        folder = tmp_path / "site" / f"fakepart{i}" / "data"
        folder.mkdir(parents=True)
        (folder.parent / "__init__.py").write_text("")
        (folder / f"part{i:02d}.bin").write_bytes(payload)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("MEMREASON_CACHE", str(tmp_path / "cache"))
    whole = b"".join(slices)
    return ModelParts("fake.gguf", "fakepart", len(slices), len(whole), hashlib.sha256(whole).hexdigest())


def test_weights_are_assembled_once_and_verified(tmp_path, monkeypatch):
    slices = [b"alpha" * 1000, b"beta" * 999, b"gamma"]
    parts = _fake_parts(tmp_path, monkeypatch, slices)
    path = embedded_model_path(parts, progress=False)
    assert path.read_bytes() == b"".join(slices)
    mtime = path.stat().st_mtime_ns
    assert embedded_model_path(parts, progress=False).stat().st_mtime_ns == mtime  # reused, not rebuilt
    assert not list(path.parent.glob("*.partial"))


def test_corrupt_weights_are_refused(tmp_path, monkeypatch):
    parts = _fake_parts(tmp_path, monkeypatch, [b"one", b"two"])
    bad = ModelParts(parts.filename, parts.package_prefix, parts.count, parts.size, "0" * 64)
    with pytest.raises(EmbeddedModelMissing, match="does not verify"):
        embedded_model_path(bad, progress=False)
    assert not (tmp_path / "cache" / "models" / "fake.gguf").exists()


def test_missing_weight_package_says_how_to_install(tmp_path, monkeypatch):
    parts = _fake_parts(tmp_path, monkeypatch, [b"one"])
    more = ModelParts(parts.filename, parts.package_prefix, 2, parts.size, parts.sha256)
    with pytest.raises(EmbeddedModelMissing, match=re.escape(f"pip install -e '{ROOT}[local]'")):  # this checkout
        embedded_model_path(more, progress=False)
    assert "fakepart2" not in sys.modules


def test_json_requests_carry_a_signatures_list_bounds():
    """Len(1, 4) on a list output must reach the engine as minItems/maxItems (DSPy alone drops it)."""
    from memreason.lm.bounded_json import BoundedJSONAdapter
    from memreason.signatures import AbstractPSConcepts, HypothesisGeneration

    concept = {"title": "recolour by size rank", "kind": "routine"}
    engine = ScriptedEngine([{"concepts": [concept]}, {"hypotheses": ["shape=circle -> label=a"]}])
    with dspy.context(lm=engine.lm(), adapter=BoundedJSONAdapter()):
        dspy.Predict(AbstractPSConcepts)(memory="(empty)", pseudocode="1. recolour", solution="def transform(g): return g")
        dspy.Predict(HypothesisGeneration)(episodes=[], factors=[], previous_hypotheses=[])
    bounded, unbounded = (call.response_format["schema"]["properties"] for call in engine.calls)
    assert (bounded["concepts"]["minItems"], bounded["concepts"]["maxItems"]) == (1, 4)
    assert "minItems" not in unbounded["hypotheses"] and "maxItems" not in unbounded["hypotheses"]


def test_an_answer_cut_at_the_token_cap_keeps_its_finished_list_items_and_drops_the_unfinished_one():
    """A generator repeating its last rule until the cap, and a verifier cut mid-verdict: what they finished is read."""
    from memreason.lm.bounded_json import BoundedJSONAdapter
    from memreason.signatures import HypothesisGeneration, HypothesisVerification

    rules = ["A red circle on a white background is labelled hot.", "A blue square on a black background is labelled cold."]
    verdicts = [{"hypothesis": rule, "reason": "no episode contradicts it", "verdict": "valid"} for rule in rules]
    engine = ScriptedEngine([{"hypotheses": rules + [rules[-1]] * 40}, {"verdicts": verdicts}])
    with dspy.context(lm=engine.lm(max_tokens=30), adapter=BoundedJSONAdapter()):  # each answer is cut at 30 words
        generated = dspy.Predict(HypothesisGeneration)(episodes=[], factors=[], previous_hypotheses=[])
        judged = dspy.Predict(HypothesisVerification)(episodes=[], factors=[], hypotheses=rules)
    assert generated.hypotheses[:2] == rules and all(h in rules for h in generated.hypotheses)  # no half-written rule
    assert len(generated.hypotheses) < 42
    assert [v.hypothesis for v in judged.verdicts] == rules[:1]  # the second verdict was cut before its verdict
    with dspy.context(lm=ScriptedEngine([{"hypotheses": rules}]).lm(), adapter=BoundedJSONAdapter()):  # not cut: all of it
        assert dspy.Predict(HypothesisGeneration)(episodes=[], factors=[], previous_hypotheses=[]).hypotheses == rules


def test_local_and_arc_routes_use_the_bounded_json_adapter():
    from memreason.eval.harness.session import shared_adapter
    from memreason.lm.bounded_json import BoundedJSONAdapter
    from memreason.lm.faults import ResilientAdapter
    from memreason.lm.resolve import LMChoice

    local = LMChoice("embedded", dspy.LM("openai/x"), local=True)
    remote = LMChoice("openai/x", dspy.LM("openai/x"), local=False)
    assert isinstance(local.adapter(), BoundedJSONAdapter)
    assert isinstance(shared_adapter(remote, local), BoundedJSONAdapter)
    assert isinstance(ResilientAdapter.around(remote.adapter()).formats[1], BoundedJSONAdapter)


def test_a_model_assembled_before_is_not_used_without_the_local_extra(tmp_path, monkeypatch):
    parts = _fake_parts(tmp_path, monkeypatch, [b"one", b"two"])
    assert embedded_model_path(parts, progress=False).exists()  # assembled into the cache once
    gone = ModelParts(parts.filename, "notinstalledpart", parts.count, parts.size, parts.sha256)
    (tmp_path / "cache" / "models" / "fake.gguf").rename(tmp_path / "cache" / "models" / gone.filename)
    with pytest.raises(EmbeddedModelMissing, match=r"comes with the local extra, which is not installed.*--lm"):
        embedded_model_path(gone, progress=False)


def test_the_embedded_model_is_said_once_before_its_first_call(tmp_path, monkeypatch, caplog):
    import logging

    from memreason.lm import resolve as resolve_module

    monkeypatch.setattr(resolve_module, "_SAID", set())
    with caplog.at_level(logging.INFO, logger="memreason"):
        resolve_module._say_embedded(Path("model.gguf"))
        resolve_module._say_embedded(Path("model.gguf"))
    said = [r.getMessage() for r in caplog.records if "embedded model answers" in r.getMessage()]
    assert said == ["no --lm given: the embedded model answers (model.gguf, on llama-server at loopback)"]
