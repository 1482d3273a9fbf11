"""The most general rule the episodes allow (``hdr_grounded``): generalising, repairing, precedence, open combinations."""

import dspy

from memreason.lm import ScriptedEngine
from memreason.programs import HDRGrounded, Reasoner, build_program
from memreason.programs.hdr.rule_application import apply_rules, object_attributes, undecidable
from memreason.programs.hdr.rule_check import LabelledEpisode, Rule, check
from memreason.programs.hdr.rule_generality import entails, generalise, repair
from memreason.signatures import EXPERIENCE_TRANSFER_TASK, NEUTRAL_TASK, Episode, GroundedHypothesisGeneration
from tests.helpers.scripted_answers import Script

# red objects are anomalies whatever their shape or background; green and blue ones are normal.
# No episode shows a red square on black, a green square on black or a blue square on black.
ROWS = [
    ("square", "red", "white", "anomaly"),
    ("circle", "red", "white", "anomaly"),
    ("circle", "red", "black", "anomaly"),
    ("square", "green", "white", "normal"),
    ("circle", "green", "black", "normal"),
    ("circle", "blue", "white", "normal"),
    ("circle", "blue", "black", "normal"),
]


def labelled(rows=ROWS):
    return [LabelledEpisode(i, {"shape": s, "color": c, "background": b}, label) for i, (s, c, b, label) in enumerate(rows)]


def test_generalising_keeps_the_rule_with_the_fewest_conditions_that_no_episode_contradicts():
    exact = Rule.of({"shape": ["square"], "color": ["red"], "background": ["white"]}, "anomaly")
    general = generalise(exact, labelled())
    assert general == Rule.of({"color": ["red"]}, "anomaly")
    assert check(general, labelled()).accepted and len(check(general, labelled()).coverage) == 3
    # it now reaches the red square on black, which no episode shows
    assert general.matches({"shape": "square", "color": "red", "background": "black"})
    assert not exact.matches({"shape": "square", "color": "red", "background": "black"})
    # a rule whose every drop meets a counterexample stays as it was; so does a refuted one
    green_square = Rule.of({"shape": ["square"], "color": ["green"]}, "normal")
    assert generalise(green_square, labelled()) == Rule.of({"color": ["green"]}, "normal")
    refuted = Rule.of({"shape": ["circle"]}, "normal")
    assert generalise(refuted, labelled()) == refuted


def test_among_equally_general_rules_the_one_that_explains_more_episodes_is_kept():
    rows = [
        ("square", "red", "white", "anomaly"),
        ("square", "red", "black", "anomaly"),
        ("circle", "red", "white", "anomaly"),
        ("circle", "green", "white", "normal"),
    ]
    exact = Rule.of({"shape": ["square"], "color": ["red"], "background": ["white"]}, "anomaly")
    # shape=square (2 episodes) and color=red (3 episodes) both pass; the colour explains more
    assert generalise(exact, labelled(rows)) == Rule.of({"color": ["red"]}, "anomaly")


def test_repair_adds_the_one_condition_that_removes_the_counterexamples():
    circles = Rule.of({"shape": ["circle"]}, "normal")  # the red circles contradict it
    repaired = repair(circles, labelled())
    assert repaired == Rule.of({"shape": ["circle"], "color": ["green", "blue"]}, "normal")
    assert set(repaired.conditions) == {"shape", "color"} and repaired.conditions["shape"] == circles.conditions["shape"]
    assert check(repaired, labelled()).accepted
    # the widest condition: every value the episodes show but the counterexamples' own
    squares = Rule.of({"shape": ["square"]}, "anomaly")  # the green square contradicts it
    assert repair(squares, labelled()) == Rule.of({"shape": ["square"], "color": ["red", "blue"]}, "anomaly")
    # no single attribute removes the counterexamples without losing all support: None (the caller narrows)
    twins = [
        LabelledEpisode(0, {"shape": "square", "color": "red"}, "A"),
        LabelledEpisode(1, {"shape": "square", "color": "red"}, "N"),
    ]
    assert repair(Rule.of({"shape": ["square"]}, "A"), twins) is None
    assert repair(Rule.of({"color": ["red"]}, "anomaly"), labelled()) is None  # nothing to repair


def test_the_more_specific_rule_overrides_a_general_one_and_equals_that_disagree_are_a_conflict():
    general = Rule.of({"color": ["red"]}, "anomaly")
    exception = Rule.of({"color": ["red"], "background": ["black"]}, "normal")
    other = Rule.of({"shape": ["square"], "background": ["black"]}, "anomaly")
    assert entails(exception, general) and not entails(general, exception)
    red_square_black = {"shape": "square", "color": "red", "background": "black"}
    applied = apply_rules([general, exception], red_square_black)
    assert applied.rules == (exception,) and applied.overridden == (general,) and applied.label == "normal"
    assert not applied.conflict
    both = apply_rules([general, exception, other], red_square_black)  # two rules of two conditions disagree
    assert both.conflict and both.label is None and both.overridden == (general,)
    assert apply_rules([general], {"shape": "square", "color": "green", "background": "black"}).rules == ()
    assert apply_rules([general, other], red_square_black).rules == (other, general)  # most specific first


def test_an_object_is_read_into_attributes_by_the_values_the_episodes_show():
    values = {"shape": ["square", "circle"], "color": ["red", "green", "lightgreen"], "background": ["white", "black"]}
    assert object_attributes("lightgreen squares", "black", values) == {
        "shape": "square",
        "color": "lightgreen",
        "background": "black",
    }
    assert object_attributes("a blue triangle", "white", values) == {"background": "white"}  # unknown values left out


def test_a_masked_combination_two_consistent_rules_disagree_on_is_recorded_as_undecidable():
    rules = [Rule.of({"color": ["red"]}, "anomaly"), Rule.of({"color": ["green"]}, "normal")]
    open_ = {tuple(sorted(e["combination"].items())) for e in undecidable(rules, labelled())}
    # every rule no episode contradicts says a green square on black is normal: decided
    assert (("background", "black"), ("color", "green"), ("shape", "square")) not in open_
    # a blue square on white that is an anomaly: "blue on black is normal" and "blue squares are anomalies" both hold,
    # and no rule of one attribute reaches a blue square on black without a counterexample
    rows = [*ROWS, ("square", "blue", "white", "anomaly")]
    entries = {tuple(sorted(e["combination"].items())): e for e in undecidable(rules, labelled(rows))}
    key = (("background", "black"), ("color", "blue"), ("shape", "square"))
    assert key in entries
    sides = entries[key]["labels"]
    assert "Objects with background black and color blue are labelled normal." in sides["normal"]
    assert sides["anomaly"] == ["Objects with color blue and shape square are labelled anomaly."]
    assert entries[key]["memory_label"] is None and entries[key]["conditions"] == 2  # no rule of the memory reaches it
    # a rule of fewer attributes outweighs the ones that disagree with it: "red is anomaly" against "squares on black
    # are normal" (green and blue squares on black would be episodes of the latter)
    more = [*ROWS, ("square", "green", "black", "normal"), ("square", "blue", "black", "normal")]
    assert not [e for e in undecidable(rules, labelled(more)) if e["combination"]["color"] == "red"]
    # the memory's own rules count on their side: the red rule reaches a red square on black, and nothing disagrees
    assert (("background", "black"), ("color", "red"), ("shape", "square")) not in entries
    # a combination an episode shows is never listed
    seen = {tuple(sorted(o.attributes.items())) for o in labelled(rows)}
    assert not seen & set(entries)


EPISODES = [
    Episode(observation=f"a {c} {s} on {b}", label=label, attributes={"shape": s, "color": c, "background": b})
    for s, c, b, label in ROWS
]


def exact_rules(call):
    """The generator: one exact rule (every attribute with its value) per episode it is asked to explain."""
    from tests.helpers.scripted_answers import given

    return {
        "rules": [
            {"sentence": "-", "conditions": {k: [v] for k, v in r.items() if k != "label"}, "label": r["label"]}
            for r in given(call, "to_explain")
        ][:8]
    }


def test_the_consolidator_keeps_the_most_general_rule_over_the_specific_ones_it_covers():
    program = HDRGrounded(K=1, N=3, generalise=True)
    with dspy.context(lm=ScriptedEngine(Script(factors={"factors": []}, rules=exact_rules)).lm()):
        record = program.memorize(EPISODES)
    assert program.hypotheses == [
        "Objects with color red are labelled anomaly.",
        "Objects with color green are labelled normal.",
        "Objects with color blue are labelled normal.",
    ]
    first = record["rounds"][0]
    # the exact rules of the other red, green and blue episodes were covered by the general rule kept before them
    assert {c["statement"] for c in first["covered"]} >= {
        "Objects with background white and color red and shape circle are labelled anomaly.",
        "Objects with background black and color blue and shape circle are labelled normal.",
    }
    kept = {r["statement"]: r for r in record["rules"]}
    assert kept["Objects with color red are labelled anomaly."]["generalised_from"]["conditions"] == {
        "background": ["white"],
        "color": ["red"],
        "shape": ["square"],
    }
    assert record["explained_all"] and record["undecidable"] == []
    # without generalising, the exact rules stay and reach no unseen combination
    plain = HDRGrounded(K=1, N=3, generalise=False)
    with dspy.context(lm=ScriptedEngine(Script(factors={"factors": []}, rules=exact_rules)).lm()):
        plain_record = plain.memorize(EPISODES)
    assert len(plain.hypotheses) == len(ROWS) and "undecidable" not in plain_record


def test_a_refuted_rule_is_repaired_by_one_condition_in_the_loop():
    script = Script(
        factors={"factors": []},
        rules=[{"rules": [{"sentence": "-", "conditions": {"shape": ["circle"]}, "label": "normal"}]}, exact_rules, exact_rules],
    )
    program = HDRGrounded(K=1, N=1, generalise=True)
    with dspy.context(lm=ScriptedEngine(script).lm()):
        record = program.memorize(EPISODES)
    (repaired,) = record["rounds"][0]["narrowed"]
    assert repaired["repair"] == "condition" and repaired["narrowed_from"]["conditions"] == {"shape": ["circle"]}
    # repaired to "circles that are green or blue", then generalised: the shape no longer matters
    assert repaired["statement"] == "Objects with color blue or green are labelled normal."
    assert program.hypotheses == ["Objects with color blue or green are labelled normal."]


def test_hdr_grounded_neither_generalises_nor_applies_rules_by_default():
    """``generalise`` and ``apply_rules`` are off until measured: the default loop, record, instructions and reader."""
    program = HDRGrounded(per_object=True, retrieve_k=3)
    assert program.consolidator.generalise is False and program.apply_rules is False
    assert type(program.reasoner) is Reasoner
    assert program.consolidator.generate.signature.instructions == NEUTRAL_TASK.grounded_generation
    assert NEUTRAL_TASK.grounded_generation == GroundedHypothesisGeneration.instructions
    for name in ("hdr_grounded", "hdr_grounded_unrefined"):
        built = build_program(name, per_object=True, retrieve_k=3)
        assert built.consolidator.generalise is False and type(built.reasoner) is Reasoner
        assert built.consolidator.generate.signature.instructions == EXPERIENCE_TRANSFER_TASK.grounded_generation
    # the default loop keeps the exact rules it is given (no generalising), and its record says nothing of generality
    with dspy.context(lm=ScriptedEngine(Script(factors={"factors": []}, rules=exact_rules)).lm()):
        record = HDRGrounded(K=1, N=3).memorize(EPISODES)
    assert "undecidable" not in record and "generalise" not in record
    assert not [r for r in record["rules"] if "generalised_from" in r or "repair" in r]
    assert all("covered" not in r for r in record["rounds"])
    assert all(len(r["conditions"]) == 3 for r in record["rules"])


def test_the_comparison_row_turns_both_on():
    """``hdr_grounded_general`` is ``hdr_grounded`` with both knobs on, so one table can hold the two side by side."""
    built = build_program("hdr_grounded_general", per_object=True, retrieve_k=3)
    assert isinstance(built, HDRGrounded) and built.consolidator.generalise is True and built.apply_rules is True
    assert type(built.reasoner) is not Reasoner
    assert built.consolidator.generate.signature.instructions != EXPERIENCE_TRANSFER_TASK.grounded_generation
