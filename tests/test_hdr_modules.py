"""HDR's modules on a scripted LM: factor loop, generate-verify rounds, strict verification, the record."""

import json

import dspy
import pytest

from memreason.lm import ScriptedEngine
from memreason.programs import FactorExtractor, HypothesisGenerator, HypothesisVerifier, MemoryConsolidator
from memreason.signatures import Episode

from scripted_answers import Script, approve_all, given

EPISODES = [
    Episode(observation="A red square on a white background.", label="anomaly"),
    Episode(observation="A green circle on a white background.", label="normal"),
]


def run(module, script: Script, **inputs):
    engine = ScriptedEngine(script)
    with dspy.context(lm=engine.lm(), adapter=dspy.ChatAdapter()):
        return module(**inputs), engine


# -- FactorExtractor ----------------------------------------------------------------------


def test_factor_loop_stops_when_the_factors_repeat():
    script = Script(factors=[{"factors": ["colour", "shape"]}, {"factors": [" Shape", "COLOUR "]}, {"factors": ["x"]}])
    out, engine = run(FactorExtractor(K=5), script, episodes=EPISODES)
    assert len(engine.calls) == 2  # F_2 == F_1 as a set (case and whitespace do not count)
    assert out.factors == ["Shape", "COLOUR"] and out.passes == [["colour", "shape"], ["Shape", "COLOUR"]]
    first, second = engine.calls
    assert given(first, "current_factors") == [] and given(second, "current_factors") == ["colour", "shape"]


@pytest.mark.parametrize("K", [0, 1, 3])
def test_factor_loop_never_makes_more_than_K_calls(K):
    fresh = iter(range(100))
    out, engine = run(FactorExtractor(K=K), Script(factors=lambda call: {"factors": [f"factor {next(fresh)}"]}), episodes=EPISODES)
    assert len(engine.calls) == K and len(out.passes) == K
    assert out.factors == ([f"factor {K - 1}"] if K else [])


def test_an_empty_first_pass_stops_the_loop():
    out, engine = run(FactorExtractor(K=3), Script(factors={"factors": []}), episodes=EPISODES)
    assert len(engine.calls) == 1 and out.factors == []


# -- HypothesisGenerator and HypothesisVerifier -------------------------------------------


def test_generator_sends_factors_and_previous_hypotheses_and_drops_repeats():
    script = Script(hypotheses={"hypotheses": ["Red squares are anomalies.", "red squares are anomalies", " ", "B"]})
    out, engine = run(HypothesisGenerator(), script, episodes=EPISODES, factors=["colour"], previous=["A"])
    assert out.hypotheses == ["Red squares are anomalies.", "B"]
    assert given(engine.calls[0], "factors") == ["colour"] and given(engine.calls[0], "previous_hypotheses") == ["A"]


def test_verifier_judges_all_hypotheses_in_one_call():
    hypotheses = ["A", "B", "C"]
    out, engine = run(HypothesisVerifier(), Script(verdicts=approve_all), episodes=EPISODES, factors=["f"], hypotheses=hypotheses)
    assert len(engine.calls) == 1 and given(engine.calls[0], "hypotheses") == hypotheses
    assert out.valid == hypotheses


def test_verifier_keeps_only_explicitly_valid_hypotheses():
    verdicts = [
        {"hypothesis": "  a.", "reason": "fits", "verdict": "Valid"},  # same text up to case and punctuation
        {"hypothesis": "B", "reason": "episode 2", "verdict": "invalid"},
        {"hypothesis": "C", "reason": "fits", "verdict": "valid"},  # C is also called invalid: not kept
        {"hypothesis": "C", "reason": "episode 1", "verdict": "invalid"},
        {"hypothesis": "Z", "reason": "never asked", "verdict": "valid"},  # unknown: ignored
    ]  # D gets no verdict at all
    out, _ = run(HypothesisVerifier(), Script(verdicts={"verdicts": verdicts}), episodes=EPISODES, factors=[], hypotheses=["A", "B", "C", "D"])
    assert out.valid == ["A"]
    assert [(j.hypothesis, j.verdict) for j in out.judgements] == [("A", "valid"), ("B", "invalid"), ("C", "invalid"), ("D", "unjudged")]
    assert out.judgements[2].reason == "episode 1"


def test_verifier_with_too_few_verdicts_keeps_only_those_named():
    verdicts = [{"hypothesis": "B", "reason": "fits", "verdict": "valid"}]
    out, _ = run(HypothesisVerifier(), Script(verdicts={"verdicts": verdicts}), episodes=EPISODES, factors=[], hypotheses=["A", "B", "C"])
    assert out.valid == ["B"]


def test_verifier_makes_no_call_for_no_hypotheses():
    out, engine = run(HypothesisVerifier(), Script(), episodes=EPISODES, factors=[], hypotheses=[])
    assert engine.calls == [] and out.valid == [] and out.judgements == []


# -- MemoryConsolidator -------------------------------------------------------------------


def rejecting(*bad):
    """A verifier that calls the hypotheses in ``bad`` invalid and the rest valid."""

    def respond(call):
        return {"verdicts": [
            {"hypothesis": h, "reason": "-", "verdict": "invalid" if h in bad else "valid"} for h in given(call, "hypotheses")
        ]}

    return respond


def consolidate(K=2, N=3, proposals=None, verify=None):
    proposals = proposals or [["A", "B"], ["A", "C"], ["A", "C", "D"]]
    script = Script(
        factors={"factors": ["colour", "shape"]},
        hypotheses=[{"hypotheses": p} for p in proposals],
        verdicts=verify or rejecting("B", "D"),
    )
    out, engine = run(MemoryConsolidator(K=K, N=N), script, episodes=EPISODES)
    return out, engine, script


def test_exactly_N_generate_verify_rounds_after_the_factor_stage():
    _, _, script = consolidate()
    assert script.asked == ["factors", "factors"] + ["hypotheses", "verdicts"] * 3
    _, _, script = consolidate(N=1, proposals=[["A"]])
    assert script.asked == ["factors", "factors", "hypotheses", "verdicts"]


def test_the_generator_sees_the_factors_and_the_previous_survivors():
    _, engine, script = consolidate()
    generator_calls = script.calls_to(engine, "hypotheses")
    assert [given(c, "previous_hypotheses") for c in generator_calls] == [[], ["A"], ["A", "C"]]
    assert all(given(c, "factors") == ["colour", "shape"] for c in generator_calls)
    assert '"B"' not in generator_calls[1].user_text  # the rejected hypothesis is not fed back


def test_invalid_hypotheses_never_reach_memory():
    out, engine, script = consolidate()
    assert out.hypotheses == ["A", "C"] and out.factors == ["colour", "shape"]
    verifier_calls = script.calls_to(engine, "verdicts")
    assert [given(c, "hypotheses") for c in verifier_calls] == [["A", "B"], ["A", "C"], ["A", "C", "D"]]


def test_semantic_memory_is_the_last_rounds_survivors():
    out, _, _ = consolidate(proposals=[["A"], ["A", "B"], ["C"]], verify=rejecting("A"))
    assert out.hypotheses == ["C"]  # H_N, not the union of all rounds
    out, _, _ = consolidate(proposals=[["A"], ["B"], ["C"]], verify=rejecting("A", "B", "C"))
    assert out.hypotheses == []


def test_the_record_has_each_hypothesis_round_born_and_verdicts():
    out, _, _ = consolidate()
    record = json.loads(json.dumps(out.record))  # JSON-able
    history = {h["hypothesis"]: h for h in record["hypothesis_history"]}
    assert {k: h["born"] for k, h in history.items()} == {"A": 1, "B": 1, "C": 2, "D": 3}
    assert [v["verdict"] for v in history["A"]["verdicts"]] == ["valid"] * 3
    assert [v["round"] for v in history["C"]["verdicts"]] == [2, 3]
    assert history["B"]["verdicts"] == [{"round": 1, "verdict": "invalid", "reason": "-"}]
    assert record["rounds"][2] == {"round": 3, "proposed": ["A", "C", "D"], "valid": ["A", "C"]}
    assert record["factors"] == ["colour", "shape"] and len(record["factor_passes"]) == 2
    assert (record["K"], record["N"]) == (2, 3)


def test_knobs_are_checked():
    with pytest.raises(ValueError):
        MemoryConsolidator(N=0)
    with pytest.raises(ValueError):
        FactorExtractor(K=-1)
