"""hypothesis_f1: the arithmetic, the deterministic parser, the LM interpreter and the LM judge."""

import random

import dspy
import pytest

from memreason.datasets.experience_transfer import RuleTable, make_level
from memreason.eval.metrics import f1_score, hypothesis_f1, hypothesis_match_f1
from memreason.lm import ScriptedEngine
from memreason.programs import HypothesisInterpreter, HypothesisJudge, parse_implications
from memreason.programs.hdr.hypothesis_interpreter import describe

from scripted_answers import given

TABLE = RuleTable.paper()
FLIP = TABLE.flip_statement()
PAPER_FLIP = (  # the paper's Figure 5, HDR (correct)
    "If an object of a specific color and shape is normal on a white background, "
    "then the same object is anomalous on a black background."
)
PAPER_DIRECT = (  # the paper's Figure 5, direct hypothesis (wrong)
    "An image is normal if the object is a blue square on a black background in the top-right position."
)
PAPER_TWO_STAGE = "An object with a black background is normal if it is a square or a circle."  # Figure 5 (wrong)


def combinations(level: int) -> list[dict[str, str]]:
    """The attribute combinations a level's test scenes draw from (Level 3 includes the masked ones)."""
    backgrounds = TABLE.backgrounds[:1] if level == 1 else TABLE.backgrounds
    return [TABLE.as_dict(c) for c in TABLE.combinations(backgrounds)]


def truth(level: int) -> list[str]:
    backgrounds = TABLE.backgrounds[:1] if level == 1 else TABLE.backgrounds
    return [TABLE.label_of(c) for c in TABLE.combinations(backgrounds)]


def parsed_score(hypotheses, level):
    return hypothesis_f1(parse_implications(hypotheses, combinations(level), TABLE.labels), truth(level))


# -- the arithmetic -----------------------------------------------------------------------


def test_hand_computed_scores():
    truth_ = ["a", "b", "a", "b"]
    implications = [
        ["a", None, None, None],  # correct, covers 0
        ["a", "a", None, None],  # wrong on 1
        [None, None, None, None],  # silent: not correct
        [None, "b", "a", None],  # correct, covers 1 and 2
    ]
    score = hypothesis_f1(implications, truth_)
    assert score.correct == (True, False, False, True) and score.covered == (True, True, True, False)
    assert (score.precision, score.recall) == (0.5, 0.75)
    assert score.f1 == pytest.approx(2 * 0.5 * 0.75 / 1.25)
    assert score.as_dict()["covered"] == [True, True, True, False]


def test_empty_hypothesis_set_scores_zero_and_bad_shapes_are_refused():
    assert hypothesis_f1([], ["a", "b"]).as_dict() == {
        "precision": 0.0,
        "recall": 0.0,
        "f1": 0.0,
        "correct": [],
        "covered": [False, False],
    }
    assert f1_score(0.0, 0.0) == 0.0 and f1_score(1.0, 0.5) == pytest.approx(2 / 3)
    with pytest.raises(ValueError):
        hypothesis_f1([["a"]], ["a", "b"])
    with pytest.raises(ValueError):
        hypothesis_f1([], [])


def test_scores_behave_under_random_hypothesis_sets():
    rng = random.Random(0)
    for _ in range(200):
        n = rng.randint(1, 8)
        truth_ = [rng.choice("ab") for _ in range(n)]
        rows = [[rng.choice(["a", "b", None, None]) for _ in range(n)] for _ in range(rng.randint(0, 6))]
        score = hypothesis_f1(rows, truth_)
        assert (
            0 <= score.f1 <= 1
            and min(score.precision, score.recall) <= score.f1 + 1e-12 <= max(score.precision, score.recall) + 2e-12
        )
        shuffled = rows[:]
        rng.shuffle(shuffled)
        assert hypothesis_f1(shuffled, truth_).f1 == pytest.approx(score.f1)  # order does not matter
        silent = hypothesis_f1([*rows, [None] * n], truth_)
        assert silent.recall == score.recall and silent.precision <= score.precision
        exact = hypothesis_f1([*rows, list(truth_)], truth_)
        assert exact.recall == 1.0 and exact.precision >= score.precision


def test_match_mode_arithmetic():
    score = hypothesis_match_f1([[0], [1, 2], []], n_rules=6)
    assert (score.precision, score.recall) == (pytest.approx(2 / 3), 0.5)
    assert hypothesis_match_f1([], n_rules=2).f1 == 0.0
    with pytest.raises(ValueError):
        hypothesis_match_f1([[7]], n_rules=2)


# -- the deterministic parser: the paper's Table 5 and Figure 5 as anchors ----------------


@pytest.mark.parametrize("level", [1, 2, 3])
def test_the_oracle_hypotheses_score_one(level):
    score = parsed_score(make_level(level).oracle_hypotheses, level)  # Level 3: the flip covers the masked four
    assert (score.precision, score.recall, score.f1) == (1.0, 1.0, 1.0)


def test_one_wrong_hypothesis_costs_precision_only():
    oracle = make_level(2).oracle_hypotheses
    score = parsed_score([*oracle, "Green circles are labelled anomaly."], 2)  # wrong on a white background
    assert score.precision == pytest.approx(len(oracle) / (len(oracle) + 1)) and score.recall == 1.0
    assert score.correct[-1] is False


def test_figure5_wrong_hypotheses_score_zero():
    assert parsed_score([PAPER_DIRECT], 3).precision == 0.0  # depends on position: silent on every combination
    assert parse_implications([PAPER_DIRECT], combinations(3), TABLE.labels) == [[None] * 16]
    two_stage = parse_implications([PAPER_TWO_STAGE], combinations(3), TABLE.labels)[0]
    assert two_stage.count("normal") == 8  # read (every black object is normal) and wrong
    assert parsed_score([PAPER_TWO_STAGE, PAPER_DIRECT], 2).f1 == 0.0  # Table 5: direct hypothesis, Lv. 2


def test_half_the_level1_objects_right_scores_two_thirds():
    oracle = make_level(1).oracle_hypotheses  # red and green cover 4 of the 8 white combinations
    assert parsed_score(oracle[:2], 1).f1 == pytest.approx(0.67, abs=0.005)  # Table 5: direct hypothesis, Lv. 1


@pytest.mark.parametrize("flip", [FLIP, PAPER_FLIP])
def test_the_flip_rule_is_expanded_against_the_other_hypotheses(flip):
    level3 = make_level(3)
    white = [r.text() for r in TABLE.oracle_rules([c for c in level3.visible if TABLE.background_of(c) == "white"])]
    alone = parsed_score([flip], 3)
    assert (alone.precision, alone.recall) == (0.0, 0.0)  # relative to nothing, it implies nothing
    with_white = parsed_score([*white, flip], 3)
    assert with_white.precision == 1.0
    assert with_white.recall == 12 / 16  # 6 visible white combinations and their 6 black twins
    assert with_white.correct[-1] and parse_implications([*white, flip], combinations(3), TABLE.labels)[-1].count(None) == 10


def test_the_flip_is_silent_where_the_other_hypotheses_disagree_or_it_cannot_apply():
    implied = parse_implications(
        ["Red squares are normal on a white background.", "Red squares are anomalous on a white background.", FLIP],
        combinations(2),
        TABLE.labels,
    )[-1]
    assert implied == [None] * 16
    assert parse_implications([FLIP], combinations(1), TABLE.labels) == [[None] * 8]  # one background: no flip


@pytest.mark.parametrize(
    "text",
    [
        "Red squares are not anomalies.",
        "Only red squares are anomalous.",
        "Red squares and blue circles are anomalies.",  # two attributes with several values: ambiguous
        "Red squares are anomalies and green circles are normal.",
        "Large red squares are anomalies.",
        "Squares and circles of the same colour have the same label.",
    ],
)
def test_the_parser_is_silent_when_it_cannot_read_a_hypothesis(text):
    assert parse_implications([text], combinations(2), TABLE.labels) == [[None] * 16]


def test_the_parser_reads_inflections_and_alternatives():
    [row] = parse_implications(["On a white background, blue or red squares are anomalies."], combinations(2), TABLE.labels)
    labelled = {(c["shape"], c["color"], c["background"]) for c, label in zip(combinations(2), row) if label == "anomaly"}
    assert labelled == {("square", "blue", "white"), ("square", "red", "white")} and row.count(None) == 14


# -- the LM interpreter and the LM judge, on scripted LMs ---------------------------------


def undescribe(text: str) -> dict[str, str]:
    return dict(part.split(": ") for part in text.split(", "))


def interpret_like_the_parser(call):
    """A scripted interpreter LM that answers what the deterministic parser would."""
    described = given(call, "combinations")
    hypotheses = given(call, "hypotheses")
    row = parse_implications(hypotheses, [undescribe(d) for d in described], given(call, "labels"))[
        hypotheses.index(given(call, "hypothesis"))
    ]
    return {"implied": {d: label or "silent" for d, label in zip(described, row)}}


def test_the_lm_interpreter_gives_the_same_scores_as_the_parser():
    hypotheses = [*make_level(3).oracle_hypotheses, PAPER_DIRECT]
    engine = ScriptedEngine(interpret_like_the_parser)
    with dspy.context(lm=engine.lm(), adapter=dspy.ChatAdapter()):
        implications = HypothesisInterpreter()(
            hypotheses=hypotheses, combinations=combinations(3), labels=TABLE.labels
        ).implications
    assert len(engine.calls) == len(hypotheses)
    assert all(given(c, "hypotheses") == hypotheses for c in engine.calls)  # each call sees the whole set
    assert implications == parse_implications(hypotheses, combinations(3), TABLE.labels)
    score = hypothesis_f1(implications, truth(3))
    assert score.recall == 1.0 and score.precision == pytest.approx((len(hypotheses) - 1) / len(hypotheses))


def test_the_lm_interpreter_reads_sloppy_answers_as_silent():
    combos = combinations(1)[:3]
    answer = {
        describe(combos[0]).upper() + " ": " Anomaly",  # case and whitespace do not matter
        describe(combos[1]): "weird",  # not a label: silent
    }  # combos[2] left out: silent
    engine = ScriptedEngine(lambda call: {"implied": answer})
    with dspy.context(lm=engine.lm(), adapter=dspy.ChatAdapter()):
        out = HypothesisInterpreter()(hypotheses=["h"], combinations=combos, labels=TABLE.labels)
    assert out.implications == [["anomaly", None, None]]


def test_the_lm_judge_matches_hypotheses_to_rules():
    rules = make_level(1).oracle_hypotheses
    generated = ["Red things on white are anomalies.", "Blue squares on white are anomalies; green is normal.", "Yellow is odd."]
    said = {
        generated[0]: [rules[0].upper()],
        generated[1]: [rules[2], rules[1] + "  ", "a rule nobody wrote"],
        generated[2]: [],
    }
    engine = ScriptedEngine(lambda call: {"matches": said[given(call, "hypothesis")]})
    with dspy.context(lm=engine.lm(), adapter=dspy.ChatAdapter()):
        matches = HypothesisJudge()(hypotheses=generated, rules=rules).matches
    assert matches == [[0], [1, 2], []] and len(engine.calls) == 3
    score = hypothesis_match_f1(matches, len(rules))
    assert (score.precision, score.recall) == (pytest.approx(2 / 3), 0.5)
