"""What reasoning models take (memreason.lm.reasoning): a given setting the provider refuses is refused in one line
naming it and the role; a default it would refuse is adapted, and the change recorded."""

import pytest

from memreason.lm import LMConfigError, resolve_lm
from memreason.lm.reasoning import fit_settings, is_openai_reasoning_model, reasoning_family
from memreason.lm.resolve import wire_extras

DEFAULTS = {"temperature": 0.0, "max_tokens": None}
THINKING = {"type": "enabled", "budget_tokens": 2048}


def fit(spec, given=None, role="task LM", **settings):
    return fit_settings(spec, {**DEFAULTS, **settings}, given=given or {}, role=role)


@pytest.mark.parametrize(
    "spec, reasoning",
    [
        ("openai/o4-mini", True),
        ("openai/o3", True),
        ("openai/o1-2024-12-17", True),
        ("openai/gpt-5", True),
        ("openai/gpt-5-mini", True),
        ("openai/gpt-5-chat-latest", False),
        ("openai/gpt-4.1", False),
        ("openai/gpt-4o-mini", False),
        ("azure/o4-mini", True),
    ],
)
def test_openai_reasoning_models_as_dspy_tells_them(spec, reasoning):
    assert is_openai_reasoning_model(spec) is reasoning


def test_families():
    assert reasoning_family("openai/o4-mini", {}) == "openai"
    assert reasoning_family("anthropic/claude-sonnet-4-5", {}) is None
    assert reasoning_family("anthropic/claude-sonnet-4-5", {"thinking": THINKING}) == "anthropic"
    assert reasoning_family("anthropic/claude-sonnet-4-5", {"reasoning_effort": "low"}) == "anthropic"
    assert reasoning_family("gemini/gemini-2.5-flash", {"thinking": {"budget_tokens": 512}}) == "gemini"
    assert reasoning_family("vertex_ai/gemini-2.5-pro", {"reasoning_effort": "high"}) == "gemini"
    assert reasoning_family("hosted_vllm/Qwen/Qwen3-8B", {"reasoning_effort": "high"}) is None


# -- OpenAI's reasoning models ------------------------------------------------------------------------


def test_openai_reasoning_defaults_are_adapted_and_recorded():
    fitted = fit("openai/o4-mini", role="memory LM", temperature=0.3, max_tokens=1000)
    assert fitted.settings == {"temperature": 1.0, "max_tokens": 16000}
    assert [(a.role, a.setting, a.asked, a.sent) for a in fitted.adapted] == [
        ("memory LM", "temperature", 0.3, 1.0),
        ("memory LM", "max_tokens", 1000, 16000),
    ]
    assert fit("openai/o4-mini", temperature=1.0, max_tokens=32000).adapted == []
    assert fit("openai/o4-mini", temperature=None).adapted == []  # no temperature at all is fine too


@pytest.mark.parametrize(
    "settings, given, message",
    [
        ({"temperature": 0.0}, {"temperature": "--temperature"}, "--temperature 0 cannot be sent to the task LM openai/o4-mini"),
        ({"max_tokens": 1000}, {"max_tokens": "--max-tokens"}, "--max-tokens 1000 cannot be sent .* at least 16,000"),
        ({"top_p": 0.9}, {"top_p": "--lm-arg top_p"}, "--lm-arg top_p 0.9 cannot be sent .* refuse top_p"),
        ({"logit_bias": {"1": 2}}, {"logit_bias": "--lm-arg logit_bias"}, 'logit_bias {"1":2} cannot'),
        ({"reasoning_effort": "extreme"}, {"reasoning_effort": "x"}, "reasoning_effort is one of none, minimal"),
        ({"thinking": THINKING}, {"thinking": "--lm-arg thinking"}, "take reasoning_effort, not thinking"),
    ],
)
def test_openai_reasoning_refusals_name_the_setting_and_the_role(settings, given, message):
    with pytest.raises(LMConfigError, match=message) as caught:
        fit("openai/o4-mini", given=given, **settings)
    assert "\n" not in str(caught.value)


def test_reasoning_effort_is_refused_by_openais_chat_models_and_taken_by_its_reasoning_ones():
    assert fit("openai/o3", reasoning_effort="high").settings["reasoning_effort"] == "high"
    with pytest.raises(LMConfigError, match="non-reasoning chat models refuse reasoning_effort"):
        fit("openai/gpt-4.1", given={"reasoning_effort": "--lm-arg reasoning_effort"}, reasoning_effort="medium")


# -- Anthropic's extended thinking -----------------------------------------------------------------------


def test_anthropic_thinking_adapts_its_defaults():
    fitted = fit("anthropic/claude-sonnet-4-5", given={"thinking": "t"}, thinking=THINKING)
    assert fitted.settings["temperature"] == 1.0 and fitted.settings["max_tokens"] == 2048 + 4096
    fitted = fit("anthropic/claude-sonnet-4-5", given={"thinking": "t"}, thinking=THINKING, max_tokens=1000)
    assert fitted.settings["max_tokens"] == 3048  # the answer's cap on top of the budget


@pytest.mark.parametrize(
    "settings, given, message",
    [
        ({"temperature": 0.5}, {"temperature": "--memory-temperature"}, "--memory-temperature 0.5 .* temperature 1 only"),
        ({"max_tokens": 2048}, {"max_tokens": "--max-tokens"}, "--max-tokens 2048 .* max_tokens above thinking.budget_tokens"),
        ({"top_k": 5}, {"top_k": "--lm-arg top_k"}, "refuses top_k"),
        ({"top_p": 0.5}, {"top_p": "--lm-arg top_p"}, r"top_p within \[0.95, 1\]"),
    ],
)
def test_anthropic_thinking_refusals(settings, given, message):
    with pytest.raises(LMConfigError, match=message):
        fit("anthropic/claude-sonnet-4-5", given={"thinking": "t", **given}, thinking=THINKING, **settings)


def test_anthropic_thinking_budget_has_a_floor_and_plain_temperatures_a_ceiling():
    with pytest.raises(LMConfigError, match="budget_tokens of at least 1,024"):
        fit(
            "anthropic/claude-sonnet-4-5",
            given={"thinking": "--lm-arg thinking"},
            thinking={"type": "enabled", "budget_tokens": 100},
        )
    with pytest.raises(LMConfigError, match=r"within \[0, 1\]"):
        fit("anthropic/claude-sonnet-4-5", given={"temperature": "--temperature"}, temperature=1.5)


# -- Gemini's thinking budget -------------------------------------------------------------------------


def test_gemini_thinking_budget():
    assert fit("gemini/gemini-2.5-flash", thinking={"budget_tokens": 1024}).adapted == []  # no cap: Gemini's own
    fitted = fit("gemini/gemini-2.5-flash", role="memory LM", thinking={"budget_tokens": 1024}, max_tokens=1000)
    assert fitted.settings["max_tokens"] == 2024 and fitted.adapted[0].setting == "max_tokens"
    with pytest.raises(LMConfigError, match="--max-tokens 500 .* counts the thinking tokens"):
        fit("gemini/gemini-2.5-flash", given={"max_tokens": "--max-tokens"}, thinking={"budget_tokens": 1024}, max_tokens=500)
    with pytest.raises(LMConfigError, match="Pro models cannot turn thinking off"):
        fit(
            "gemini/gemini-2.5-pro",
            given={"thinking": "x"},
            thinking={"type": "enabled", "budget_tokens": 0},
            reasoning_effort="low",
        )
    assert fit("gemini/gemini-2.5-flash", temperature=0.0, reasoning_effort="low").adapted == []  # Gemini takes temperature 0


# -- resolution ----------------------------------------------------------------------------------


def test_resolve_lm_sends_any_keyword_and_puts_top_k_where_a_server_reads_it(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    choice = resolve_lm("hosted_vllm/Qwen/Qwen3-8B", api_base="http://127.0.0.1:9/v1", extra={"top_k": 20, "seed": 3})
    assert choice.lm.kwargs["extra_body"] == {"top_k": 20} and choice.lm.kwargs["seed"] == 3 and choice.adapted == ()
    assert wire_extras("anthropic/claude-sonnet-4-5", {"top_k": 5}) == {"top_k": 5}  # Anthropic's own field


def test_resolve_lm_refuses_credentials_among_the_settings():
    with pytest.raises(LMConfigError, match="api_key carries a credential, which is no setting of the memory LM"):
        resolve_lm("openai/gpt-4.1", extra={"api_key": "sk-secret"}, role="memory LM")
    with pytest.raises(LMConfigError, match=r"extra_headers\.Authorization carries a credential") as refused:
        resolve_lm("openai/gpt-4.1", extra={"extra_headers": {"Authorization": "Bearer sk-secret"}})
    assert "sk-secret" not in str(refused.value)


def test_resolve_lm_adapts_the_default_temperature_of_a_reasoning_model(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    choice = resolve_lm("openai/o4-mini")  # temperature's default is 0: it was sent as 0.0
    assert choice.lm.kwargs["temperature"] == 1.0 and [a.setting for a in choice.adapted] == ["temperature"]
    with pytest.raises(LMConfigError, match="temperature 0.3 cannot be sent to the task LM openai/o4-mini"):
        resolve_lm("openai/o4-mini", temperature=0.3)
