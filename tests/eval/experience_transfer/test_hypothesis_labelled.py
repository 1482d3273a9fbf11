"""hypothesis_f1's per-statement verdict (``parse`` mode) against hand labels (``tests/data/hypotheses_labelled.json``).

The figures before are the previous scoring's, which read each statement through the other
statements of its set (the flip expanded against them, a negation unreadable), measured on the
same file with that code; they are kept here as constants because that code is gone.
"""

import json
from pathlib import Path

import pytest

from memreason.eval.experience_transfer.hypothesis_scoring import agreement, statement_verdicts

LABELLED = Path(__file__).resolve().parents[2] / "data" / "hypotheses_labelled.json"
BEFORE = {"hypotheses": (59 / 60, 0.964), "edge_cases": (8 / 12, 0.400)}  # (accuracy, Cohen's kappa), previous scoring


def test_the_labelled_file_holds_real_hypotheses_and_separate_edge_cases():
    data = json.loads(LABELLED.read_text())
    assert "labelled by reading" in data["about"]
    for item in data["hypotheses"] + data["edge_cases"]:
        assert item["label"] in ("correct", "incorrect") and item["level"] in (1, 2, 3) and item["table"] == "paper"
    assert len(data["hypotheses"]) >= 60 and all("hand-written" not in h["source"] for h in data["hypotheses"])
    assert all(h["source"].startswith("hand-written") for h in data["edge_cases"])


@pytest.mark.parametrize("key", ["hypotheses", "edge_cases"])
def test_parse_mode_agrees_with_the_hand_labels_at_least_as_well_as_before(key):
    items = json.loads(LABELLED.read_text())[key]
    accuracy, kappa = agreement(statement_verdicts(items), [item["label"] == "correct" for item in items])
    before_accuracy, before_kappa = BEFORE[key]
    print(
        f"{key}: accuracy {before_accuracy:.3f} -> {accuracy:.3f}, kappa {before_kappa:.3f} -> {kappa:.3f} ({len(items)} statements)"
    )
    assert accuracy >= before_accuracy and kappa >= before_kappa
    assert (accuracy, kappa) == (1.0, 1.0)  # today every verdict matches; a change that loses one must say so here


def test_agreement_on_a_hand_worked_table():
    # 6 verdicts, 4 agree; both lists say correct 3 times of 6: chance 0.5, kappa (4/6 - 1/2) / (1/2) = 1/3
    accuracy, kappa = agreement([True, True, True, False, False, False], [True, True, False, True, False, False])
    assert accuracy == pytest.approx(4 / 6) and kappa == pytest.approx((4 / 6 - 0.5) / 0.5)
    assert agreement([True, False], [True, False]) == (1.0, 1.0)
    with pytest.raises(ValueError, match="one non-zero length"):
        agreement([True], [True, False])


def test_statements_of_one_set_are_scored_together_and_other_tables_refused():
    # The flip is correct on its own at Level 2; a wrong rule beside it does not change its verdict (parse mode).
    flip = "If an object is normal on a white background, then the same object is anomalous on a black background."
    wrong = "On a white background, red squares are labelled normal."
    items = [dict(text=flip, level=2, set="s"), dict(text=wrong, level=2, set="s")]
    assert statement_verdicts(items) == [True, False]
    with pytest.raises(ValueError, match="only the paper's Table 1"):
        statement_verdicts([dict(text=flip, level=2, set="s", table="example")])


def test_the_agreement_bench_prints_each_mode_and_refuses_an_unknown_one(capsys):
    from memreason.eval.bench.f1_agreement import main

    assert main(["--modes", "parse"]) == 0
    out = capsys.readouterr().out
    assert "parse hypotheses" in out and "accuracy 1.00, kappa 1.00" in out
    assert main(["--modes", "parse,vibes"]) == 2
    assert "unknown F1 mode(s) vibes" in capsys.readouterr().out
