"""Narrowing a refuted rule by its counterexamples (``hdr_grounded``): hand-worked cases of the greedy procedure."""

from memreason.programs.hdr.rule_check import LabelledEpisode, Rule, check
from memreason.programs.hdr.rule_narrowing import narrow


def episodes(*rows):
    """(shape, color, label) rows as labelled episodes."""
    return [LabelledEpisode(i, {"shape": s, "color": c}, label) for i, (s, c, label) in enumerate(rows)]


def test_the_drop_that_loses_no_support_is_taken_and_a_free_attribute_keeps_the_other_values():
    labelled = episodes(("square", "red", "A"), ("circle", "red", "A"), ("square", "green", "N"), ("circle", "blue", "N"))
    narrowed = narrow(Rule.of({}, "N"), labelled)  # "all objects are N": both red ones contradict it
    assert narrowed == Rule.of({"color": ["green", "blue"]}, "N")
    assert check(narrowed, labelled).accepted


def test_values_are_dropped_across_attributes_when_no_single_attribute_keeps_any_support():
    # Dropping both shapes' values, or both colours', would leave nothing: each counterexample goes by a value of its own.
    labelled = episodes(("square", "red", "N"), ("circle", "blue", "N"), ("circle", "red", "A"), ("square", "blue", "A"))
    rule = Rule.of({"shape": ["square", "circle"], "color": ["red", "blue"]}, "A")
    # Every first drop loses one A and removes one N: the attribute named first (shape), its value seen first (square).
    # Then dropping blue loses nothing.
    assert narrow(rule, labelled) == Rule.of({"shape": ["circle"], "color": ["red"]}, "A")


def test_nothing_to_narrow_or_no_support_left_gives_none():
    labelled = episodes(("square", "red", "A"), ("square", "red", "N"), ("circle", "blue", "N"))
    assert narrow(Rule.of({"color": ["red"]}, "A"), labelled) is None  # the same object with both labels: no drop keeps it
    assert narrow(Rule.of({"color": ["green"]}, "A"), labelled) is None  # matches nothing: no support to keep
    assert narrow(Rule.of({"color": ["blue"]}, "N"), labelled) is None  # no counterexample: nothing to narrow
    assert narrow(Rule.of({"shape": ["circle"]}, "A"), labelled) is None  # no support at all
