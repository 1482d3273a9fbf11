"""HDR's modules on a scripted LM: factor loop, generate-verify rounds, strict verification, the record;
and every composite module as a part of any pipeline: acall, plain-string episodes, any task's reasoner."""

import asyncio
import json
import logging

import dspy
import pytest

from memreason.lm import ScriptedEngine
from memreason.programs import (
    HDR,
    ConceptAbstractor,
    ConceptMemory,
    ConceptSelector,
    ExperienceMemory,
    FactorExtractor,
    GroundedConsolidator,
    HDRGrounded,
    HypothesisGenerator,
    HypothesisInterpreter,
    HypothesisJudge,
    HypothesisVerifier,
    Judgement,
    MemoryConsolidator,
    Reasoner,
    TwoStage,
    as_episodes,
    build_program,
    episode_from_json,
    episode_to_json,
)
from memreason.programs.hdr.memory_consolidator import reordered
from memreason.signatures import Episode, OEConcept, PSConcept, ReasonWithMemory
from tests.helpers.scripted_answers import Script, approve_all, given

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
    out, engine = run(
        FactorExtractor(K=K), Script(factors=lambda call: {"factors": [f"factor {next(fresh)}"]}), episodes=EPISODES
    )
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
    out, _ = run(
        HypothesisVerifier(),
        Script(verdicts={"verdicts": verdicts}),
        episodes=EPISODES,
        factors=[],
        hypotheses=["A", "B", "C", "D"],
    )
    assert out.valid == ["A"]
    assert [(j.hypothesis, j.verdict) for j in out.judgements] == [
        ("A", "valid"),
        ("B", "invalid"),
        ("C", "invalid"),
        ("D", "unjudged"),
    ]
    assert out.judgements[2].reason == "episode 1"


def test_verifier_with_too_few_verdicts_keeps_only_those_named():
    verdicts = [{"hypothesis": "B", "reason": "fits", "verdict": "valid"}]
    out, _ = run(
        HypothesisVerifier(), Script(verdicts={"verdicts": verdicts}), episodes=EPISODES, factors=[], hypotheses=["A", "B", "C"]
    )
    assert out.valid == ["B"]


def test_verifier_makes_no_call_for_no_hypotheses():
    out, engine = run(HypothesisVerifier(), Script(), episodes=EPISODES, factors=[], hypotheses=[])
    assert engine.calls == [] and out.valid == [] and out.judgements == []


# -- MemoryConsolidator -------------------------------------------------------------------


def rejecting(*bad):
    """A verifier that calls the hypotheses in ``bad`` invalid and the rest valid."""

    def respond(call):
        return {
            "verdicts": [
                {"hypothesis": h, "reason": "-", "verdict": "invalid" if h in bad else "valid"} for h in given(call, "hypotheses")
            ]
        }

    return respond


def consolidate(K=2, N=3, proposals=None, verify=None, episodes=EPISODES, resample=False):
    proposals = proposals or [["A", "B"], ["A", "C"], ["A", "C", "D"]]
    script = Script(
        factors={"factors": ["colour", "shape"]},
        hypotheses=[{"hypotheses": p} for p in proposals],
        verdicts=verify or rejecting("B", "D"),
    )
    out, engine = run(MemoryConsolidator(K=K, N=N, resample=resample), script, episodes=episodes)
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


def test_resample_asks_later_rounds_afresh_from_reordered_episodes_and_the_verifier_keeps_the_survivors():
    episodes = [
        Episode(observation=f"A {c} square on a white background.", label="anomaly" if i % 2 else "normal")
        for i, c in enumerate(["red", "green", "blue", "pink", "cyan", "brown"])
    ]
    out, engine, script = consolidate(proposals=[["A", "B"], ["C"], ["D", "A"]], episodes=episodes, resample=True)
    generator_calls = script.calls_to(engine, "hypotheses")
    assert [given(c, "previous_hypotheses") for c in generator_calls] == [[], [], []]  # nothing to copy
    orders = [[e["observation"] for e in given(c, "episodes")] for c in generator_calls]
    shown = [e.observation for e in episodes]
    assert orders[0] == shown  # round 1 is the paper's
    assert [sorted(o) for o in orders[1:]] == [sorted(shown)] * 2 and shown not in orders[1:] and orders[1] != orders[2]
    assert orders[1:] == [[e.observation for e in reordered(episodes, j)] for j in (2, 3)]  # seeded by the round
    verifier_calls = script.calls_to(engine, "verdicts")
    assert [given(c, "hypotheses") for c in verifier_calls] == [["A", "B"], ["A", "C"], ["A", "C", "D"]]
    assert all([e["observation"] for e in given(c, "episodes")] == shown for c in verifier_calls)
    assert out.hypotheses == ["A", "C"] and out.record["resample"] is True
    out, _, _ = consolidate(proposals=[["A"], ["B"], ["C"]], verify=rejecting("A"), resample=True)
    assert out.hypotheses == ["B", "C"]  # a survivor stays until the verifier rejects it


def test_knobs_are_checked():
    with pytest.raises(ValueError):
        MemoryConsolidator(N=0)
    with pytest.raises(ValueError):
        FactorExtractor(K=-1)


@pytest.mark.parametrize("value", [2.5, "3", True, None])
@pytest.mark.parametrize(
    "build",
    [
        lambda v: FactorExtractor(K=v),
        lambda v: MemoryConsolidator(K=v),
        lambda v: MemoryConsolidator(N=v),
        lambda v: GroundedConsolidator(K=v),
        lambda v: GroundedConsolidator(N=v),
        lambda v: HDR(K=v),
        lambda v: HDR(N=v),
        lambda v: HDRGrounded(N=v),
        lambda v: TwoStage(K=v),
    ],
)
def test_K_and_N_must_be_whole_numbers(build, value):
    with pytest.raises(TypeError, match=rf"must be a whole number >= \d, got {type(value).__name__}"):
        build(value)


def test_K_and_N_take_any_integer_type():
    import numpy as np

    consolidator = MemoryConsolidator(K=np.int64(1), N=np.int64(2))  # what a study's sampler may hand over
    assert (consolidator.K, consolidator.N) == (1, 2) and type(consolidator.K) is int


# -- nothing to draw a memory from -------------------------------------------------------------

EMPTY = {  # a module that would draw a memory from episodes, and its other inputs
    "factor_extractor": (lambda: FactorExtractor(K=2), {}),
    "hypothesis_generator": (HypothesisGenerator, {"factors": ["colour"]}),
    "hypothesis_verifier": (HypothesisVerifier, {"hypotheses": ["A"]}),
    "memory_consolidator": (lambda: MemoryConsolidator(K=1, N=2), {}),
    "grounded_consolidator": (lambda: GroundedConsolidator(K=1, N=2), {}),
}


@pytest.mark.parametrize("name", EMPTY)
def test_an_empty_list_of_episodes_is_refused_before_any_call(name):
    build, inputs = EMPTY[name]
    engine = ScriptedEngine(Script())
    with dspy.context(lm=engine.lm(), adapter=dspy.ChatAdapter()):
        with pytest.raises(ValueError, match="needs at least one episode"):
            build()(episodes=[], **inputs)
        with pytest.raises(ValueError, match="needs at least one episode"):
            asyncio.run(build().acall(episodes=[], **inputs))
    assert engine.calls == []


@pytest.mark.parametrize("name", ["hdr", "hdr_grounded", "two_stage", "direct_hypothesis", "reflexion_all", "episodic"])
def test_memorize_refuses_an_empty_list_of_episodes_before_any_call(name):
    program, engine = build_program(name), ScriptedEngine(Script())
    with dspy.context(lm=engine.lm(), adapter=dspy.ChatAdapter()):
        with pytest.raises(ValueError, match=r"memorize needs at least one episode"):
            program.memorize([])
        with pytest.raises(ValueError, match=r"memorize needs at least one episode"):
            asyncio.run(program.amemorize([], ["a rule"]))
    assert engine.calls == [] and program.hypotheses is None  # no memory drawn from nothing


# -- a string is not a list --------------------------------------------------------------------


def test_a_string_in_place_of_the_hypotheses_is_refused_naming_what_was_given():
    engine = ScriptedEngine(Script(count={"count": 1}))
    with dspy.context(lm=engine.lm(), adapter=dspy.ChatAdapter()):
        for reasoner in (Reasoner(), Reasoner(per_object=True, retrieve_k=1)):
            with pytest.raises(TypeError, match=r"hypotheses must be a list of strings, got a str \('Red is odd.'\)"):
                reasoner(episodes=EPISODES, hypotheses="Red is odd.", query="Count the anomaly objects.", scene="s")
            with pytest.raises(TypeError, match="hypotheses must be a list of strings, got a str"):
                asyncio.run(
                    reasoner.acall(episodes=EPISODES, hypotheses="Red is odd.", query="Count the anomaly objects.", scene="s")
                )
        with pytest.raises(TypeError, match="hypotheses must be a list of strings; item 0 is a int"):
            Reasoner()(episodes=EPISODES, hypotheses=[3], query="How many?", scene="s")
        with pytest.raises(TypeError, match="oracle_hypotheses must be a list of strings, got a str"):
            build_program("semantic_oracle").memorize(EPISODES, "Red is odd.")
    assert engine.calls == []


def test_experience_memory_refuses_a_string_or_none_and_keeps_what_it_had():
    memory = ExperienceMemory()
    memory.set(EPISODES, ["Red is odd."], {"factors": ["colour"]})
    for episodes, hypotheses, message in [
        (EPISODES, "Red is odd.", "hypotheses must be a list of strings, got a str"),
        (EPISODES, None, "hypotheses must be a list of strings, got None"),
        (EPISODES, {"rule": 1}, "got a dict"),
        (None, ["A"], "episodes must be a list, got None"),
        ("an episode", ["A"], "episodes must be a list, got one str"),
    ]:
        with pytest.raises(TypeError, match=message):
            memory.set(episodes, hypotheses)
    assert (
        memory.hypotheses == ["Red is odd."] and memory.episodes == EPISODES and memory.consolidation == {"factors": ["colour"]}
    )
    memory.set(EPISODES, ("A", "B"))  # any sequence of strings
    assert memory.hypotheses == ["A", "B"]


# -- the consolidator's prompts speak of any task -------------------------------------------------

EXPERIENCE_TRANSFER_WORDS = ("colour", "color", "shape", "background", "position or size", "object")
FRUITS = [
    Episode(observation="a banana with brown spots", label="ripe", attributes={"skin": "spotted"}),
    Episode(observation="a hard green banana", label="unripe", attributes={"skin": "green"}),
]


def instructions_sent(call) -> str:
    """What a call's system message says beyond DSPy's field list (the task's instructions)."""
    return call.system.split("your objective is:", 1)[1]


def test_the_consolidators_default_prompts_name_no_experience_transfer_attribute():
    script = Script(
        factors={"factors": ["skin"]},
        hypotheses={"hypotheses": ["Spotted bananas are ripe."]},
        verdicts=approve_all,
        rules={"rules": [{"conditions": {"skin": ["spotted"]}, "label": "ripe", "sentence": "-"}]},
        attribute_values={"attribute_values": {"skin": "spotted"}},
    )
    engine = ScriptedEngine(script)
    with dspy.context(lm=engine.lm(), adapter=dspy.ChatAdapter()):
        MemoryConsolidator(K=1, N=1)(episodes=FRUITS)
        GroundedConsolidator(K=1, N=1)(episodes=FRUITS)
        GroundedConsolidator(K=0, N=1, perceive=["skin"])(episodes=[Episode(observation="a banana", label="ripe")])
        HDR(K=1, N=1).memorize(FRUITS)
    assert set(script.asked) == {"factors", "hypotheses", "verdicts", "rules", "attribute_values"}
    for call in engine.calls:
        said = instructions_sent(call).lower() + call.system.split("Your output fields are:")[0].lower()
        assert not [w for w in EXPERIENCE_TRANSFER_WORDS if w in said], said


def test_a_task_description_rewords_the_consolidators_prompts():
    from dataclasses import replace

    from memreason.signatures import NEUTRAL_TASK

    fruit = replace(
        NEUTRAL_TASK,
        episodes="episodic memory: bananas, each labelled ripe or unripe",
        factor_extraction=NEUTRAL_TASK.factor_extraction.replace(
            "an episode's label.", "a banana's ripeness: for example the colour of its skin."
        ),
    )
    engine = ScriptedEngine(Script(factors={"factors": ["skin"]}, hypotheses={"hypotheses": ["h"]}, verdicts=approve_all))
    with dspy.context(lm=engine.lm(), adapter=dspy.ChatAdapter()):
        MemoryConsolidator(K=1, N=1, task_description=fruit)(episodes=FRUITS)
    assert "a banana's ripeness: for example the colour of its skin." in instructions_sent(engine.calls[0])
    assert all("bananas, each labelled ripe or unripe" in c.system for c in engine.calls) and len(engine.calls) == 3
    with pytest.raises(ValueError, match="there are none to perceive"):  # the neutral task perceives nothing
        GroundedConsolidator(K=0, N=1)(episodes=[Episode(observation="a banana", label="ripe")])


# -- every composite module, async ------------------------------------------------------------


def oe_memory():
    memory = ConceptMemory("oe")
    memory.add([OEConcept(situation=f"situation {i}", suggestion=f"do {i}") for i in (1, 2)])
    return memory


def ps_memory():
    memory = ConceptMemory("ps")
    memory.add([PSConcept(title="flip rows", relevance_cues=["mirrored"])])
    return memory


COMPOSITES = {  # name: (build the module, its inputs, the script's answers)
    "factor_extractor": (
        lambda: FactorExtractor(K=3),
        lambda: {"episodes": EPISODES},
        {"factors": [{"factors": ["colour"]}, {"factors": ["colour", "shape"]}, {"factors": ["shape", "colour"]}]},
    ),
    "hypothesis_generator": (
        HypothesisGenerator,
        lambda: {"episodes": EPISODES, "factors": ["colour"]},
        {"hypotheses": {"hypotheses": ["Red is odd.", "red is odd"]}},
    ),
    "hypothesis_verifier": (
        HypothesisVerifier,
        lambda: {"episodes": EPISODES, "hypotheses": ["A", "B"]},
        {"verdicts": lambda call: rejecting("B")(call)},
    ),
    "memory_consolidator": (
        lambda: MemoryConsolidator(K=1, N=2),
        lambda: {"episodes": EPISODES},
        {
            "factors": {"factors": ["colour"]},
            "hypotheses": [{"hypotheses": ["A", "B"]}, {"hypotheses": ["A"]}],
            "verdicts": lambda call: rejecting("B")(call),
        },
    ),
    "reasoner": (
        lambda: Reasoner(cot=True),
        lambda: {"episodes": EPISODES, "hypotheses": ["A"], "query": "How many?", "scene": "s"},
        {"count": {"reasoning": "r", "count": 2}},
    ),
    "reasoner_any_task": (
        lambda: Reasoner(signature="question -> yes: bool", semantic=False),
        lambda: {"episodes": ["a red square: anomaly"], "question": "Is a red square odd?"},
        {"yes": {"yes": True}},
    ),
    "hypothesis_interpreter": (
        HypothesisInterpreter,
        lambda: {
            "hypotheses": ["Red is odd."],
            "labels": ["odd", "fine"],
            "combinations": [{"colour": "red"}, {"colour": "blue"}],
        },
        {"implied": {"implied": {"colour: red": "odd", "colour: blue": "silent"}}},
    ),
    "hypothesis_judge": (
        HypothesisJudge,
        lambda: {"hypotheses": ["Red is odd.", "x"], "rules": ["Red is odd"]},
        {"matches": [{"matches": ["red is odd."]}, {"matches": []}]},
    ),
    "concept_selector_oe": (
        lambda: ConceptSelector("oe", top_k=1),
        lambda: {"problem": "Is it ripe?", "memory": oe_memory()},
        {"speculation": {"observations": ["o"], "speculation": ["s"]}, "chosen": {"chosen": [2, 1]}},
    ),
    "concept_selector_ps": (
        ConceptSelector,
        lambda: {"problem": "Mirror it.", "memory": ps_memory()},
        {"selected": {"reasoning": "cues", "selected": ["Flip Rows", "ghost"]}},
    ),
    "concept_abstractor_oe": (
        lambda: ConceptAbstractor("oe"),
        lambda: {"problem": "p", "solution": "s", "memory": oe_memory(), "source": "x"},
        {"derivation": {"derivation": ["Thought: t"]}, "concepts": {"concepts": [{"situation": "new", "suggestion": "try"}]}},
    ),
    "concept_abstractor_ps": (
        ConceptAbstractor,
        lambda: {"problem": "p", "solution": "s", "memory": ps_memory(), "source": "x"},
        {"pseudocode": {"pseudocode": "1. flip"}, "concepts": {"concepts": [{"title": "flip rows"}]}},
    ),
}


def outputs_of(prediction) -> dict:
    return dict(prediction.items())


@pytest.mark.parametrize("name", COMPOSITES)
def test_every_composite_module_answers_the_same_through_acall(name):
    build, inputs, answers = COMPOSITES[name]
    sync_engine, async_engine = ScriptedEngine(Script(**answers)), ScriptedEngine(Script(**answers))
    with dspy.context(lm=sync_engine.lm(), adapter=dspy.ChatAdapter()):
        expected = build()(**inputs())
    with dspy.context(lm=async_engine.lm(), adapter=dspy.ChatAdapter()):
        got = asyncio.run(build().acall(**inputs()))
    assert outputs_of(got) == outputs_of(expected)
    assert [c.text for c in async_engine.calls] == [c.text for c in sync_engine.calls] and sync_engine.calls


def test_an_lm_error_inside_acall_reaches_the_caller():
    def broken(call):
        raise RuntimeError("the model is down")

    with dspy.context(lm=ScriptedEngine(broken).lm(), adapter=dspy.ChatAdapter()):
        with pytest.raises(Exception, match="the model is down"):
            asyncio.run(MemoryConsolidator(K=1, N=1).acall(episodes=EPISODES))


def test_an_interrupt_inside_a_module_unwinds_its_steps():
    def interrupted(call):
        raise KeyboardInterrupt  # Ctrl-C while the LM answers

    for via_acall in (False, True):
        with dspy.context(lm=ScriptedEngine(interrupted).lm(), adapter=dspy.ChatAdapter()):
            with pytest.raises(KeyboardInterrupt) as stopped:  # its traceback keeps the steps alive
                selector = ConceptSelector()
                asyncio.run(selector.acall(problem="p", memory=ps_memory())) if via_acall else selector(
                    problem="p", memory=ps_memory()
                )
            assert dspy.settings.usage_tracker is None and stopped  # the selector's usage count closed where it opened


# -- episodes as users give them ------------------------------------------------------------


def test_plain_strings_and_dicts_are_episodes_without_a_type_warning(caplog):
    mixed = ["a yellow banana with brown spots: ripe", {"observation": "a hard green banana", "label": "unripe"}, EPISODES[0]]
    with caplog.at_level(logging.WARNING):
        out, engine = run(HypothesisGenerator(), Script(hypotheses={"hypotheses": ["h"]}), episodes=mixed)
    assert out.hypotheses == ["h"] and not [r for r in caplog.records if "mismatch" in r.getMessage()]
    assert given(engine.calls[0], "episodes") == [
        {"observation": "a yellow banana with brown spots: ripe"},  # no label key: the text states the outcome
        {"observation": "a hard green banana", "label": "unripe"},
        {"observation": "A red square on a white background.", "label": "anomaly"},
    ]
    with pytest.raises(TypeError, match="episodes must be a list"):
        as_episodes("one string")
    with pytest.raises(TypeError, match="episode 1 is a int"):
        as_episodes(["ok", 3])


def test_episodes_round_trip_through_json_images_included():
    image = dspy.Image(
        url="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg=="
    )
    for episode in [Episode(observation=image, label="anomaly"), Episode(observation="text"), EPISODES[0]]:
        data = json.loads(json.dumps(episode_to_json(episode)))
        assert episode_from_json(data) == episode


def test_the_verifier_defaults_factors_as_the_generator_does():
    out, engine = run(HypothesisVerifier(), Script(verdicts=approve_all), episodes=EPISODES, hypotheses=["A"])
    assert out.valid == ["A"] and given(engine.calls[0], "factors") == []
    assert isinstance(out.judgements[0], Judgement)


# -- the Reasoner, for any task --------------------------------------------------------------


def test_the_default_reasoner_is_experience_transfers_unchanged():
    for episodic, semantic in [(True, True), (True, False), (False, True)]:
        for cot in (False, True):
            reasoner = Reasoner(episodic=episodic, semantic=semantic, cot=cot)
            predictor = reasoner.answer.predict if cot else reasoner.answer
            expected = ReasonWithMemory
            for name, kept in (("episodes", episodic), ("hypotheses", semantic)):
                expected = expected if kept else expected.delete(name)
            assert predictor.signature.instructions == ReasonWithMemory.instructions
            fields = {k: v for k, v in predictor.signature.fields.items() if k != "reasoning"}
            assert list(fields) == list(expected.fields) and all(
                (fields[k].annotation, fields[k].json_schema_extra) == (f.annotation, f.json_schema_extra)
                for k, f in expected.fields.items()
            )


def test_a_reasoner_answers_any_signature_with_neutral_instructions_and_its_memory_first():
    reasoner = Reasoner(signature="question: str -> ripe: bool")
    signature = reasoner.answer.signature
    assert list(signature.input_fields) == ["episodes", "hypotheses", "question"] and list(signature.output_fields) == ["ripe"]
    assert "memory of past experience" in signature.instructions and "whole number" not in signature.instructions

    class Ripe(dspy.Signature):
        """Say whether the fruit is ripe."""

        fruit: str = dspy.InputField()
        ripe: bool = dspy.OutputField()

    own = Reasoner(signature=Ripe, episodic=False).answer.signature
    assert own.instructions == "Say whether the fruit is ripe." and list(own.input_fields) == ["hypotheses", "fruit"]
    out, engine = run(
        Reasoner(signature=Ripe),
        Script(ripe={"ripe": True}),
        episodes=["a spotted banana: ripe"],
        hypotheses=[],
        fruit="a spotted banana",
    )
    assert out.ripe is True and given(engine.calls[0], "hypotheses") == []  # an empty memory is a memory


def test_a_reasoner_that_reads_memory_refuses_none():
    reasoner = Reasoner(episodic=True, semantic=True)
    with pytest.raises(ValueError, match="reads episodic memory"):
        reasoner(query="q", scene="s", hypotheses=[])
    with pytest.raises(ValueError, match="reads semantic memory"):
        reasoner(query="q", scene="s", episodes=[])
    with pytest.raises(ValueError, match="reads semantic memory"):
        asyncio.run(reasoner.acall(query="q", scene="s", episodes=[]))


def test_a_reasoners_demos_never_repeat_the_memory():
    reasoner = Reasoner(cot=False)
    reasoner.answer.demos = [
        dspy.Example(episodes=[EPISODES[0]], hypotheses=["A"], query="q", scene="demo scene", count=1),
        {"query": "q", "scene": "other scene", "count": 0, "episodes": []},
    ]
    _, engine = run(reasoner, Script(count={"count": 1}), episodes=EPISODES, hypotheses=["B"], query="q", scene="now")
    text = engine.calls[0].user_text
    assert "demo scene" in text and "other scene" in text
    assert text.count("[[ ## episodes ## ]]") == 1 and text.count("[[ ## hypotheses ## ]]") == 1
    assert "episodes" in reasoner.answer.demos[0]  # what is shown is filtered; the demos stay as they were
