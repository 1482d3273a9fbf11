"""hypothesis_f1: the arithmetic, the deterministic parser, the LM interpreter and the LM judge."""

import random

import dspy
import pytest

from memreason.datasets.experience_transfer import RuleTable, make_level
from memreason.eval.metrics import NotLabel, OtherThan, f1_score, hypothesis_f1, hypothesis_match_f1
from memreason.lm import ScriptedEngine
from memreason.programs import HypothesisInterpreter, HypothesisJudge, parse_implications
from memreason.programs.hdr.hypothesis_interpreter import describe
from tests.helpers.scripted_answers import given

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
        [None, None, None, None],  # silent: not correct, and left out of precision
        [None, "b", "a", None],  # correct, covers 1 and 2
        ["a", None, None, None],  # the first again: counts once
    ]
    score = hypothesis_f1(implications, truth_)
    assert score.correct == (True, False, False, True, True) and score.covered == (True, True, True, False)
    assert (score.precision, score.recall) == (pytest.approx(2 / 3), 0.75)
    assert score.f1 == pytest.approx(2 * (2 / 3) * 0.75 / (2 / 3 + 0.75))
    assert score.as_dict()["covered"] == [True, True, True, False]


def test_negations_and_relative_implications_arithmetic():
    truth_ = ["a", "b", "c", "b"]
    score = hypothesis_f1([[NotLabel("a"), NotLabel("a"), None, None], [None, OtherThan(0), None, None]], truth_)
    assert (
        score.correct == (False, True) and score.covered == (False,) * 4
    )  # "not a" is wrong on 0; the flip alone covers nothing
    rows = [[None, NotLabel("a"), NotLabel("b"), None], ["a", None, None, None], [None, OtherThan(0), None, None]]
    score = hypothesis_f1(rows, truth_)
    assert score.correct == (True, True, True) and score.covered == (True, True, False, False)  # OtherThan(0) covers 1 once 0 is
    assert hypothesis_f1([[None] * 4, [None] * 4], truth_).precision == 0.0  # only silent statements: nothing to score


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
        assert (silent.recall, silent.precision) == (score.recall, score.precision)  # silent statements are left out
        again = hypothesis_f1([*rows, *rows], truth_)
        assert (again.recall, again.precision) == (score.recall, score.precision)  # duplicates count once
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
def test_the_flip_is_read_on_its_own_and_covers_the_twins_of_correct_rules(flip):
    level3 = make_level(3)
    alone = parsed_score([flip], 3)
    assert alone.correct == (True,) and (alone.precision, alone.recall) == (1.0, 0.0)  # Figure 5: correct on its own
    white = [r.text() for r in TABLE.oracle_rules([c for c in level3.visible if TABLE.background_of(c) == "white"])]
    with_white = parsed_score([*white, flip], 3)
    assert with_white.precision == 1.0 and all(with_white.correct)
    assert with_white.recall == 12 / 16  # 6 visible white combinations and their 6 black twins
    assert parse_implications([flip], combinations(3), TABLE.labels)[0].count(None) == 0  # it speaks of every pair


def test_a_true_flip_keeps_its_credit_next_to_a_wrong_rule():
    wrong = "Green circles are labelled anomaly."  # wrong on a white background (and right on black)
    right = "On a white background, red objects of any shape are labelled anomaly."
    score = parsed_score([wrong, right, FLIP], 2)
    assert score.correct == (False, True, True) and score.precision == pytest.approx(2 / 3)
    assert score.recall == 4 / 16  # the red ones on white, and by the flip their black twins; nothing from the wrong rule
    assert parsed_score([wrong, FLIP], 2).correct == (False, True)


def test_the_flip_is_wrong_where_the_table_does_not_flip_and_silent_where_it_cannot_apply():
    not_flipping = RuleTable.from_dict(
        {**TABLE.to_dict(), "rules": [{**r, "label": "normal"} for r in TABLE.to_dict()["rules"]], "level3_mask": []}
    )
    combos = [not_flipping.as_dict(c) for c in not_flipping.combinations()]
    truth_ = [not_flipping.label_of(c) for c in not_flipping.combinations()]
    assert hypothesis_f1(parse_implications([FLIP], combos, TABLE.labels), truth_).correct == (False,)
    assert parse_implications([FLIP], combinations(1), TABLE.labels) == [[None] * 8]  # one background: no flip


def test_paraphrases_count_once():
    paraphrases = [
        "On a white background, red objects of any shape are labelled anomaly.",
        "Red objects on a white background are anomalous.",
        "On white backgrounds, red squares or circles are anomalies.",
    ]
    score = parsed_score(paraphrases, 2)
    assert all(score.correct) and (score.precision, score.recall) == (1.0, 2 / 16)
    assert parsed_score([*paraphrases, "Green circles are labelled anomaly."], 2).precision == 0.5  # not 3/4


@pytest.mark.parametrize(
    "text, implied",
    [
        ("Red squares on a white background are not labelled normal.", "anomaly"),
        ("On a black background, red objects are not anomalies.", "normal"),
        ("Blue circles on white aren't anomalous.", "normal"),
    ],
)
def test_a_negation_with_two_labels_implies_the_other_label(text, implied):
    [row] = parse_implications([text], combinations(2), TABLE.labels)
    assert {label for label in row if label is not None} == {implied}
    assert parsed_score([text], 2).correct == (True,)


def test_a_negation_with_more_labels_says_not_x_and_covers_nothing():
    combos = [{"shape": "square", "color": "red"}, {"shape": "circle", "color": "red"}, {"shape": "square", "color": "blue"}]
    labels = ["ok", "faulty", "unknown"]
    rows = parse_implications(["Red objects are not ok.", "Blue squares are not faulty."], combos, labels)
    assert rows == [[NotLabel("ok"), NotLabel("ok"), None], [None, None, NotLabel("faulty")]]
    score = hypothesis_f1(rows, ["faulty", "unknown", "faulty"])
    assert score.correct == (True, False) and score.recall == 0.0
    assert parse_implications(["Red objects are not ok."], combos, ["ok", "faulty"])[0] == [
        "faulty",
        "faulty",
        None,
    ]  # two labels


@pytest.mark.parametrize(
    "text",
    [
        "Red squares are not never anomalies.",  # two negations
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


def read_against_the_set(rows, labels):
    """The parser's rows, the flip's ``OtherThan(k)`` resolved as an interpreter LM states it: in labels, from the set's."""

    def label_of(k):
        said = {row[k] for row in rows if isinstance(row[k], str)}
        return labels[1 - list(labels).index(said.pop())] if len(said) == 1 else None

    return [[label_of(s.index) if isinstance(s, OtherThan) else s for s in row] for row in rows]


def interpret_like_the_parser(call):
    """A scripted interpreter LM that answers what the deterministic parser would, in labels."""
    described = given(call, "combinations")
    hypotheses = given(call, "hypotheses")
    rows = parse_implications(hypotheses, [undescribe(d) for d in described], given(call, "labels"))
    row = read_against_the_set(rows, given(call, "labels"))[hypotheses.index(given(call, "hypothesis"))]
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
    parsed = parse_implications(hypotheses, combinations(3), TABLE.labels)
    assert implications == read_against_the_set(parsed, TABLE.labels)
    score, by_parser = hypothesis_f1(implications, truth(3)), hypothesis_f1(parsed, truth(3))
    assert (score.precision, score.recall, score.correct) == (by_parser.precision, by_parser.recall, by_parser.correct)
    assert score.recall == 1.0 and score.precision == 1.0  # the direct hypothesis implies nothing: left out of precision
    assert score.correct[-1] is False


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
