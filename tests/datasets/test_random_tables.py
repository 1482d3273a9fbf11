"""Seeded random rule tables: valid, varied, reproducible, and apart across splits; the harder ones too."""

import hashlib
import json

import pytest

from memreason.datasets.experience_transfer import RuleTable, make_level
from memreason.datasets.experience_transfer.random_tables import HARD_STRUCTURES, STRUCTURES, fingerprint, random_tables
from memreason.datasets.experience_transfer.rules import SHAPES


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


def test_the_tables_drawn_without_hard_are_the_ones_drawn_before_it_existed():
    tables = [t.to_dict() for split, n in (("train", 24), ("validation", 8), ("test", 8)) for t in random_tables(split, n)]
    tables += [t.to_dict() for t in random_tables("train", 8, seed=1)]
    assert hashlib.sha256(json.dumps(tables, sort_keys=True).encode()).hexdigest()[:16] == "2938a28ca94101cb"


@pytest.fixture(scope="module")
def hard():
    return {split: random_tables(split, n, hard=True) for split, n in (("train", 16), ("validation", 8), ("test", 8))}


def decides(table: RuleTable, attr: str) -> bool:
    """Whether two combinations that differ only in ``attr`` carry different labels."""
    i = list(table.attributes).index(attr)
    return any(
        table.label_of(c) != table.label_of(c[:i] + (v,) + c[i + 1 :])
        for c in table.combinations()
        for v in table.attributes[attr]
    )


def test_hard_tables_have_three_shapes_and_every_attribute_decides_some_label(hard):
    tables = [t for ts in hard.values() for t in ts]
    assert {t.name.split("(")[1].rstrip(")") for t in tables} == set(HARD_STRUCTURES)
    for table in tables:
        assert sorted(table.attributes["shape"]) == sorted(SHAPES)
        assert [len(v) for v in table.attributes.values()] == [3, 3, 2] and len(table.rows) == 18
        assert all(decides(table, attr) for attr in ("shape", "color", "background")), table.name
        for background in table.backgrounds:
            assert {table.label_of(c) for c in table.combinations((background,))} == set(table.labels)
        assert RuleTable.from_dict(table.to_dict()).to_dict() == table.to_dict()
    pair_flips = [t for t in tables if "(pair_flip)" in t.name]
    assert pair_flips and all(t.flips_with_background() for t in pair_flips)
    for table in pair_flips:  # 4 or 5 of the 9 shape-colour pairs carry the counted label on the first background
        assert sum(table.label_of(c) == table.count_label for c in table.combinations(table.backgrounds[:1])) in (4, 5)


def test_hard_tables_mask_three_combinations_of_distinct_pairs_and_build_every_level(hard):
    for table in hard["validation"]:
        assert len(table.level3_mask) == 3 and len({c[:2] for c in table.level3_mask}) == 3
        for level in (1, 2, 3):
            data = make_level(level, rules=table, scenes_per_count=4)
            assert {e.label for e in data.episodes} == set(table.labels)
        assert len(data.masked) == 3 and len(data.visible) == 15


def test_hard_tables_are_reproducible_apart_across_splits_and_apart_from_the_others(hard):
    again = random_tables("train", 16, hard=True)
    assert [t.to_dict() for t in again] == [t.to_dict() for t in hard["train"]]
    assert [t.to_dict() for t in random_tables("train", 3, seed=1, hard=True)] != [t.to_dict() for t in hard["train"][:3]]
    prints = {split: {fingerprint(t) for t in tables} for split, tables in hard.items()}
    assert all(len(prints[s]) == len(hard[s]) for s in hard)
    assert not prints["train"] & prints["validation"] and not prints["train"] & prints["test"]
    assert not prints["validation"] & prints["test"]
    assert all(t.name.startswith(f"hard-{split}-0-") for split, tables in hard.items() for t in tables)
