"""Real providers' response shapes, recorded as their APIs document them (``tests/data/provider_shapes``) and served by
the loopback stub: each reaches DSPy through that provider's own client route (OpenAI's chat completions,
Anthropic's messages with thinking, Gemini's generateContent, a vLLM server as ``hosted_vllm/``), the requests
carry the settings the provider takes, and the reasoning tokens are counted apart from the visible answer, from a
live answer and from the cache alike."""

from pathlib import Path

import dspy
import pytest

from memreason.lm import resolve_lm
from memreason.lm.faults import GuardedLM
from memreason.lm.response_cache import open_response_cache
from memreason.lm.stub_server import StubServer, as_chat, fill_shape, load_shape, route_of
from memreason.lm.tokens import Meter, Tokens, metering

SHAPES = Path(__file__).resolve().parents[1] / "data" / "provider_shapes"


def shape(name: str) -> tuple[str, dict]:
    return load_shape(SHAPES / f"{name}.json")


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(name, "stub-key")


def ask(choice, question: str = "what is the rule?") -> tuple[dspy.Prediction, dict]:
    """One ChatAdapter call through a guarded LM (as runs make them): the prediction and the meter's record."""
    meter = Meter()
    with dspy.context(lm=GuardedLM(choice.lm, role="task"), adapter=dspy.ChatAdapter()), metering(meter):
        out = dspy.Predict("question -> answer")(question=question)
    return out, meter.record()


def base(stub: StubServer, route: str) -> str:
    """The address a client of ``route`` is given: OpenAI-style clients add ``/chat/completions`` to ``.../v1``;
    Anthropic's adds ``/v1/messages`` to the root; Gemini's adds ``/models/NAME:generateContent``."""
    return stub.url if route == "openai" else stub.url.removesuffix("/v1")


# -- the recorded shapes themselves ------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["openai_reasoning_chat", "openai_chat", "anthropic_thinking_messages", "gemini_thinking_generate", "vllm_chat"]
)
def test_every_recorded_shape_has_a_route_and_a_slot_for_the_answer(name):
    route, response = shape(name)
    filled = fill_shape(response, "the answer", "m")
    assert "{{answer}}" not in str(filled) and "the answer" in str(filled)


def test_the_stub_reads_each_providers_request_as_chat_messages():
    anthropic = {
        "system": [{"type": "text", "text": "rules"}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
    }
    assert as_chat("anthropic", anthropic)["messages"] == [
        {"role": "system", "content": "rules"},
        {"role": "user", "content": "hi"},
    ]
    gemini = {"system_instruction": {"parts": [{"text": "rules"}]}, "contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    assert as_chat("gemini", gemini)["messages"] == [{"role": "system", "content": "rules"}, {"role": "user", "content": "hi"}]
    assert [route_of(p) for p in ("/v1/chat/completions", "/v1/messages", "/models/gemini-2.5-flash:generateContent", "/x")] == [
        "openai",
        "anthropic",
        "gemini",
        None,
    ]


# -- each provider's route, against its shape --------------------------------------------------------


def test_openai_reasoning_model_usage_block_and_fingerprint():
    route, response = shape("openai_reasoning_chat")
    with StubServer(latency=0, fail_rate=0, shapes={route: response}) as stub:
        choice = resolve_lm("openai/o4-mini", api_base=base(stub, route), cache=False, extra={"reasoning_effort": "medium"})
        out, record = ask(choice)
        (body,) = stub.bodies("openai")
    assert out.answer == "stub answer"
    assert body["model"] == "o4-mini" and body["reasoning_effort"] == "medium"
    assert body["temperature"] == 1.0 and "max_tokens" not in body  # never 0 for a reasoning model
    assert [a.setting for a in choice.adapted] == ["temperature"]  # the default 0 became 1, and says so
    entry = choice.lm.history[-1] if choice.lm.history else None
    tokens = Tokens.of(record["usage"]["task"]["predict"]) if "predict" in record["usage"]["task"] else None
    tokens = tokens or Tokens.of(next(iter(record["usage"]["task"].values())))
    assert (tokens.prompt, tokens.completion, tokens.reasoning, tokens.visible) == (612, 1920, 1792, 128)
    assert record["tokens"]["reasoning"] == 1792
    assert entry is None or entry.get("response_model", "").startswith("o4-mini")
    assert response["system_fingerprint"] == "fp_o4mini_3f2c1a"  # the recorded shape carries it (a run manifest reads it)


def test_anthropic_messages_with_thinking_through_its_own_route():
    route, response = shape("anthropic_thinking_messages")
    thinking = {"type": "enabled", "budget_tokens": 2048}
    with StubServer(latency=0, fail_rate=0, shapes={route: response}) as stub:
        choice = resolve_lm("anthropic/claude-sonnet-4-5", api_base=base(stub, route), cache=False, extra={"thinking": thinking})
        out, record = ask(choice)
        (body,) = stub.bodies("anthropic")
    assert out.answer == "stub answer"
    # what Anthropic's extended thinking takes: temperature 1, a cap above the budget (both adapted from the defaults)
    assert body["thinking"] == thinking and body["temperature"] == 1.0 and body["max_tokens"] > 2048
    assert {a.setting for a in choice.adapted} == {"temperature", "max_tokens"}
    tokens = Tokens.of(next(iter(record["usage"]["task"].values())))
    # Anthropic reports the thinking inside output_tokens; LiteLLM counts the thinking block's tokens apart
    assert tokens.completion == 1310 and 0 < tokens.reasoning < 1310


def test_gemini_generate_content_with_thoughts_token_count():
    route, response = shape("gemini_thinking_generate")
    with StubServer(latency=0, fail_rate=0, shapes={route: response}) as stub:
        choice = resolve_lm(
            "gemini/gemini-2.5-flash", api_base=base(stub, route), cache=False, extra={"thinking": {"budget_tokens": 1024}}
        )
        out, record = ask(choice)
        (body,) = stub.bodies("gemini")
    assert out.answer == "stub answer"
    config = body.get("generationConfig") or body.get("generation_config")
    assert config["thinkingConfig"]["thinkingBudget"] == 1024
    tokens = Tokens.of(next(iter(record["usage"]["task"].values())))
    # thoughtsTokenCount apart from candidatesTokenCount; both billed as output, so completion holds both
    assert (tokens.prompt, tokens.completion, tokens.reasoning, tokens.visible) == (590, 1112, 1024, 88)


def test_a_vllm_server_as_hosted_vllm_gets_its_own_keywords():
    route, response = shape("vllm_chat")
    with StubServer(latency=0, fail_rate=0, shapes={route: response}) as stub:
        choice = resolve_lm(
            "hosted_vllm/Qwen/Qwen3-8B",
            api_base=stub.url,
            cache=False,
            temperature=0.6,
            extra={"top_k": 20, "top_p": 0.95, "chat_template_kwargs": {"enable_thinking": True}},
        )
        out, record = ask(choice)
        (body,) = stub.bodies("openai")
    assert out.answer == "stub answer"
    assert (body["model"], body["temperature"], body["top_k"], body["top_p"]) == ("Qwen/Qwen3-8B", 0.6, 20, 0.95)
    assert body["chat_template_kwargs"] == {"enable_thinking": True}
    tokens = Tokens.of(next(iter(record["usage"]["task"].values())))
    assert (tokens.completion, tokens.reasoning) == (172, 0)  # vLLM reports no reasoning count: none is invented


@pytest.mark.parametrize(
    "spec, name, extra, expected",
    [
        ("openai/o4-mini", "openai_reasoning_chat", {}, (1920, 1792)),
        ("gemini/gemini-2.5-flash", "gemini_thinking_generate", {"thinking": {"budget_tokens": 1024}}, (1112, 1024)),
    ],
)
def test_an_answer_from_the_cache_counts_as_the_live_one(tmp_path, spec, name, extra, expected):
    route, response = shape(name)
    open_response_cache(tmp_path / "cache")
    with StubServer(latency=0, fail_rate=0, shapes={route: response}) as stub:
        choice = resolve_lm(spec, api_base=base(stub, route), cache=True, extra=extra)
        _, live = ask(choice)
        _, cached = ask(choice)
        assert len(stub.received) == 1  # the second answer came from the cache
    for record in (live, cached):
        tokens = Tokens.of(next(iter(record["usage"]["task"].values())))
        assert (tokens.completion, tokens.reasoning) == expected
