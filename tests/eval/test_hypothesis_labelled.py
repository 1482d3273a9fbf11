"""hypothesis_f1's per-statement verdict (``parse`` mode) against hand labels (``tests/data/hypotheses_labelled.json``).

The figures before are the previous scoring's, which read each statement through the other
statements of its set (the flip expanded against them, a negation unreadable), measured on the
same file with that code; they are kept here as constants because that code is gone.
"""

import collections
import json
from pathlib import Path

import pytest

from memreason.datasets.experience_transfer import make_level
from memreason.eval.experience_transfer.hypothesis_scoring import score_hypotheses

LABELLED = Path(__file__).resolve().parents[1] / "data" / "hypotheses_labelled.json"
BEFORE = {"hypotheses": (25 / 26, 0.917), "edge_cases": (8 / 12, 0.400)}  # (accuracy, Cohen's kappa), previous scoring


def verdicts(items: list[dict]) -> list[bool]:
    """Each statement's ``correct`` in parse mode, scored within the set it came from."""
    groups = collections.defaultdict(list)
    for i, item in enumerate(items):
        groups[(item["set"], item["level"])].append(i)
    out = [False] * len(items)
    for (_, level), members in groups.items():
        score = score_hypotheses([items[i]["text"] for i in members], make_level(level))
        for i, ok in zip(members, score.correct):
            out[i] = ok
    return out


def agreement(predicted: list[bool], gold: list[bool]) -> tuple[float, float]:
    """Accuracy and Cohen's kappa of two binary verdict lists."""
    n = len(gold)
    observed = sum(p == g for p, g in zip(predicted, gold)) / n
    p_pred, p_gold = sum(predicted) / n, sum(gold) / n
    chance = p_pred * p_gold + (1 - p_pred) * (1 - p_gold)
    return observed, (observed - chance) / (1 - chance) if chance < 1 else 1.0


def test_the_labelled_file_holds_real_hypotheses_and_separate_edge_cases():
    data = json.loads(LABELLED.read_text())
    assert "labelled by reading" in data["about"]
    for item in data["hypotheses"] + data["edge_cases"]:
        assert item["label"] in ("correct", "incorrect") and item["level"] in (1, 2, 3) and item["table"] == "paper"
    assert len(data["hypotheses"]) == 26 and all("hand-written" not in h["source"] for h in data["hypotheses"])
    assert all(h["source"].startswith("hand-written") for h in data["edge_cases"])


@pytest.mark.parametrize("key", ["hypotheses", "edge_cases"])
def test_parse_mode_agrees_with_the_hand_labels_at_least_as_well_as_before(key):
    items = json.loads(LABELLED.read_text())[key]
    accuracy, kappa = agreement(verdicts(items), [item["label"] == "correct" for item in items])
    before_accuracy, before_kappa = BEFORE[key]
    print(
        f"{key}: accuracy {before_accuracy:.3f} -> {accuracy:.3f}, kappa {before_kappa:.3f} -> {kappa:.3f} ({len(items)} statements)"
    )
    assert accuracy >= before_accuracy and kappa >= before_kappa
    assert (accuracy, kappa) == (1.0, 1.0)  # today every verdict matches; a change that loses one must say so here
