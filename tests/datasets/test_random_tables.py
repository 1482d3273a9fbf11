"""Seeded random rule tables: valid, varied, reproducible, and apart across splits."""

import pytest

from memreason.datasets.experience_transfer import RuleTable, make_level
from memreason.datasets.experience_transfer.random_tables import STRUCTURES, fingerprint, random_tables


@pytest.fixture(scope="module")
def splits():
    return {split: random_tables(split, n) for split, n in (("train", 24), ("validation", 8), ("test", 8))}


def test_tables_are_reproducible_and_splits_share_none(splits):
    again = random_tables("train", 24)
    assert [t.to_dict() for t in again] == [t.to_dict() for t in splits["train"]]
    prints = {split: {fingerprint(t) for t in tables} for split, tables in splits.items()}
    assert all(len(prints[s]) == len(splits[s]) for s in splits)  # no table twice within a split
    assert not prints["train"] & prints["validation"] and not prints["train"] & prints["test"]
    assert not prints["validation"] & prints["test"]
    assert fingerprint(RuleTable.paper()) not in set().union(*prints.values())
    assert [t.to_dict() for t in random_tables("train", 3, seed=1)] != [t.to_dict() for t in splits["train"][:3]]


def test_every_structure_occurs_and_each_table_round_trips_as_json(splits):
    tables = [t for ts in splits.values() for t in ts]
    assert {t.name.split("(")[1].rstrip(")") for t in tables} == set(STRUCTURES)
    for table in tables:
        assert RuleTable.from_dict(table.to_dict()).to_dict() == table.to_dict()


def test_every_level_can_be_built_with_both_labels_on_each_background(splits):
    for table in splits["validation"]:
        for background in table.backgrounds:
            labels = {table.label_of(c) for c in table.combinations((background,))}
            assert labels == set(table.labels)
        for level in (1, 2, 3):
            data = make_level(level, rules=table, scenes_per_count=4)
            assert data.oracle_hypotheses and data.episodes and data.test
            assert {e.label for e in data.episodes} == set(table.labels)


def test_a_flip_table_flips_every_label_on_its_second_background(splits):
    flips = [t for ts in splits.values() for t in ts if "(flip)" in t.name]
    assert flips and all(t.flips_with_background() for t in flips)
    assert not any(t.flips_with_background() for ts in splits.values() for t in ts if "(single)" in t.name)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="split must be one of"):
        random_tables("dev", 1)
    with pytest.raises(ValueError, match="n must be"):
        random_tables("train", -1)
