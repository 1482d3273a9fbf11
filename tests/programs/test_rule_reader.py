"""Checked rules applied per object as they were checked (``hdr_grounded``'s reader), on a Level-3 table."""

import re

import dspy

from memreason.datasets.experience_transfer import RuleTable, make_level
from memreason.eval.experience_transfer.masked import masked_results, object_masks
from memreason.eval.experience_transfer.run import level_episodes
from memreason.lm import ScriptedEngine
from memreason.programs import HDRGrounded, Reasoner, build_program
from memreason.programs.hdr.rule_reader import RuleReader
from tests.helpers.scripted_answers import Script, given, perceiver

# Red objects are anomalies on either background, the rest normal; Level 3 hides the red square on black.
TABLE = RuleTable.from_dict(
    {
        "name": "red-alone",
        "attributes": {"shape": ["square", "circle"], "color": ["red", "green", "blue"], "background": ["white", "black"]},
        "labels": ["normal", "anomaly"],
        "count_label": "anomaly",
        "rules": [
            {"shape": s, "color": c, "background": b, "label": "anomaly" if c == "red" else "normal"}
            for s in ("square", "circle")
            for c in ("red", "green", "blue")
            for b in ("white", "black")
        ],
        "level3_mask": [{"shape": "square", "color": "red", "background": "black"}],
    }
)


def exact_rules(call):
    """The generator: one exact rule per episode it is asked to explain (at most 8 a round)."""
    return {
        "rules": [
            {"sentence": "-", "conditions": {k: [v] for k, v in r.items() if k != "label"}, "label": r["label"]}
            for r in given(call, "to_explain")
        ][:8]
    }


def first_rule_labeller(call):
    """Labels an object as the first rule shown says; with none shown, "normal" (a guess that is wrong for red)."""
    rules = given(call, "hypotheses")
    if not rules:
        return {"reasoning": "-", "label": "normal"}
    return {"reasoning": "-", "label": re.search(r"labelled (\w+)", rules[0]).group(1)}


def read(program, data, scenes):
    with dspy.context(lm=ScriptedEngine(Script(factors={"factors": []}, rules=exact_rules)).lm()):
        program.memorize(level_episodes(data.episodes, "text"), data.oracle_hypotheses)
    script = Script(objects=perceiver, label=first_rule_labeller)
    engine = ScriptedEngine(script)
    with dspy.context(lm=engine.lm()):
        return [program(query=data.query, scene=s.text()) for s in scenes], script.calls_to(engine, "label")


def records(scenes, outs):
    return [
        {
            "id": s.id,
            "objects": len(s.objects),
            "target": s.target,
            "prediction": o.count,
            "correct": o.count == s.target,
            "object_labels": o.objects,
            "true_labels": s.labels,
        }
        for s, o in zip(scenes, outs)
    ]


def test_a_masked_combination_decided_only_by_a_general_rule_is_answered_right():
    data = make_level(3, rules=TABLE)
    scenes = [s for s in data.test if any(object_masks(s, data))][:6]
    assert scenes  # the test scenes hold the red square on black, which no episode shows
    program = HDRGrounded(K=1, N=3, per_object=True, retrieve_k=3, generalise=True, apply_rules=True)
    assert isinstance(program.reasoner, RuleReader)
    outs, calls = read(program, data, scenes)
    assert [o.count for o in outs] == [s.target for s in scenes]
    masked = [obj for o, s in zip(outs, scenes) for obj, m in zip(o.objects, object_masks(s, data)) if m]
    assert masked and all(obj["label"] == "anomaly" for obj in masked)
    assert all(obj["rules"]["rules"] == ["Objects with color red are labelled anomaly."] for obj in masked)
    assert all(obj["attributes"] == {"shape": "square", "color": "red", "background": "black"} for obj in masked)
    # each call shows the rules that apply, matched in code, not the nearest by words
    assert all(len(given(c, "hypotheses")) == 1 for c in calls) and all(len(given(c, "episodes")) == 3 for c in calls)
    result = masked_results([records(scenes, outs)], [program.memory_record()], data)
    assert result["objects"]["masked"]["accuracy"] == 1.0 and result["objects"]["masked"]["n"] == len(masked)

    # the exact rules alone (no generalising) reach no unseen combination: no rule applies, the guess is wrong
    specific = HDRGrounded(K=1, N=3, per_object=True, retrieve_k=3, generalise=False, apply_rules=True)
    outs, _ = read(specific, data, scenes)
    masked = [obj for o, s in zip(outs, scenes) for obj, m in zip(o.objects, object_masks(s, data)) if m]
    assert all(obj["rules"]["rules"] == [] and obj["label"] == "normal" for obj in masked)
    apart = masked_results([records(scenes, outs)], [specific.memory_record()], data)
    assert apart["objects"]["masked"]["accuracy"] == 0.0
    assert apart["objects"]["visible"]["accuracy"] == 1.0  # the visible objects are still right: scored apart
    assert apart["objects"]["masked"]["ci"][1] < 0.5 < apart["objects"]["visible"]["ci"][0]


def test_the_retrieval_reader_stays_unless_rules_are_applied():
    assert type(HDRGrounded(per_object=True, retrieve_k=3).reasoner) is Reasoner  # off by default
    assert type(build_program("hdr_grounded", per_object=True, retrieve_k=3).reasoner) is Reasoner
    assert type(build_program("hdr_grounded_unrefined", per_object=True, retrieve_k=3).reasoner) is Reasoner
    assert isinstance(build_program("hdr_grounded", per_object=True, retrieve_k=3, apply_rules=True).reasoner, RuleReader)
    assert type(HDRGrounded(per_object=True, apply_rules=True).reasoner) is Reasoner  # one call for the scene: every rule
    # the rule reader's predictors are the retrieval reader's, so saved states fit either
    a = HDRGrounded(per_object=True, retrieve_k=3, apply_rules=True)
    b = HDRGrounded(per_object=True, retrieve_k=3, apply_rules=False)
    assert [n for n, _ in a.named_predictors()] == [n for n, _ in b.named_predictors()]
    assert list(a.reasoner.answer.predict.signature.fields) == list(b.reasoner.answer.predict.signature.fields)


def test_the_rule_learner_applies_its_rules_per_object_when_asked():
    data = make_level(3, rules=TABLE)
    scenes = [s for s in data.test if any(object_masks(s, data))][:4]
    assert type(build_program("rule_learner", per_object=True, retrieve_k=3).reasoner) is Reasoner  # as measured
    learner = build_program("rule_learner", per_object=True, retrieve_k=3, apply_rules=True)
    assert isinstance(learner.reasoner, RuleReader)
    outs, calls = read(learner, data, scenes)
    assert [o.count for o in outs] == [s.target for s in scenes]
    masked = [obj for o, s in zip(outs, scenes) for obj, m in zip(o.objects, object_masks(s, data)) if m]
    assert masked and all(obj["rules"]["rules"] == ["Objects with color red are labelled anomaly."] for obj in masked)
