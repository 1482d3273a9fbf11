"""Generated ARC splits (1D-ARC, re-ARC from reasoning-gym): ids that carry the concept, determinism,
freshness, the memory/recombination partition, filters, and the solutions written for the memory families."""

import json
import logging
import os
import subprocess
import sys

import pytest

from memreason.datasets.arc import (
    ARC1D_SOLUTIONS,
    GENERATED_SPLITS,
    MEMORY_FAMILIES,
    RECOMBINATION_FAMILIES,
    SPLITS,
    ArcDataError,
    arc1d_families,
    concept_of,
    generated,
    generation,
    load_split,
    parts_of,
    split_ids,
)
from memreason.datasets.arc.arckit_sets import arckit_set
from memreason.datasets.arc.generated import arc1d_task, rearc_task

pytest.importorskip("reasoning_gym")  # the gym extra


def _pairs(task):
    return [(p.input, p.output) for p in (*task.train, *task.test)]


def _fingerprint(tasks) -> str:
    return json.dumps([[t.id, t.to_json()] for t in tasks])


# -- ids and concepts ------------------------------------------------------------------------------------


def test_ids_carry_the_concept_and_size_cycles_through_the_families():
    tasks = load_split("arc1d-recombination", size=len(RECOMBINATION_FAMILIES) * 2 + 1, seed=3)
    first = RECOMBINATION_FAMILIES[0]
    assert tasks[0].id == f"{first}@s3i0" and tasks[len(RECOMBINATION_FAMILIES)].id == f"{first}@s3i1"
    assert tasks[-1].id == f"{first}@s3i2"
    assert [concept_of(t.id) for t in tasks[: len(RECOMBINATION_FAMILIES)]] == list(RECOMBINATION_FAMILIES)
    assert len({t.id for t in tasks}) == len(tasks) and not any("/" in t.id for t in tasks)
    assert concept_of("017c7c7b@s0i0") == "017c7c7b" and concept_of("017c7c7b") == "017c7c7b"


def test_parts_are_read_from_the_family_name():
    assert parts_of("move_3pix_solid_wrapped_right") == ("move", "3pix", "solid", "wrapped", "right")
    assert parts_of("move_1pix_colorful_left@s2i7") == ("move", "1pix", "colorful", "left")
    assert parts_of("gravity_right") == ("gravity", "right")
    assert parts_of("gravity_weighted_colors_left") == ("gravity", "weighted_colors", "left")
    assert parts_of("block_touch_dot_2pix") == ("block_touch_dot", "2pix")
    assert parts_of("two_points_and_fill_inv") == ("two_points_and_fill", "inverse")
    assert parts_of("change_to_five") == ("change_to_five",)
    assert all(parts_of(family) for family in arc1d_families())
    with pytest.raises(ArcDataError, match="not a 1D-ARC family"):
        parts_of("017c7c7b")


# -- the partition ---------------------------------------------------------------------------------------


def test_the_partition_holds_recombinations_of_memory_parts_only():
    memory, held_out = set(MEMORY_FAMILIES), set(RECOMBINATION_FAMILIES)
    assert 20 <= len(memory) <= 30 and 10 <= len(held_out) <= 20 and not memory & held_out
    assert memory | held_out <= set(arc1d_families())
    memory_parts = {parts_of(f) for f in memory}
    for family in held_out:
        parts = parts_of(family)
        assert parts not in memory_parts, f"{family}: its combination is in memory"
        same_kind = set().union(*(p for p in memory_parts if p[0] == parts[0]))
        assert set(parts) <= same_kind, f"{family}: parts {set(parts) - same_kind} are in no memory family of its kind"
    # the ArcMemo paper's Figure 1
    assert {"move_1pix_solid_wrapped_right", "move_3pix_solid_right"} <= memory
    assert "move_3pix_solid_wrapped_right" in held_out


def test_every_held_out_move_is_one_part_away_from_several_memory_moves():
    def one_apart(a, b):
        pa, pb = parts_of(a), parts_of(b)
        return len(pa) == len(pb) and sum(x != y for x, y in zip(pa, pb)) == 1 or set(pa) ^ set(pb) == {"wrapped"}

    for family in (f for f in RECOMBINATION_FAMILIES if f.startswith("move_")):
        assert sum(one_apart(family, m) for m in MEMORY_FAMILIES) == 5, family


def test_the_splits_draw_from_their_families():
    assert [concept_of(t.id) for t in load_split("arc1d-seeds")] == list(MEMORY_FAMILIES)
    assert [concept_of(t.id) for t in load_split("arc1d-transfer")] == list(MEMORY_FAMILIES)
    assert [concept_of(t.id) for t in load_split("arc1d")] == list(arc1d_families()) and len(arc1d_families()) == 70
    seeds = set(split_ids("barc_seeds"))
    rearc = generation("rearc")
    assert rearc.size == 100 and len(rearc.families) == 400 - len(seeds) and not seeds & set(rearc.families)
    assert set(generation("rearc-seeds").families) == seeds and generation("rearc-seeds").size == 100
    assert not set(GENERATED_SPLITS) & set(SPLITS)


# -- determinism and freshness ---------------------------------------------------------------------------


def test_the_same_knobs_give_the_same_tasks_and_another_seed_others():
    a = load_split("arc1d", size=30, seed=4)
    assert _fingerprint(a) == _fingerprint(load_split("arc1d", size=30, seed=4))
    other = load_split("arc1d", size=30, seed=5)
    assert sum(x.to_json() != y.to_json() for x, y in zip(a, other)) >= 25
    # the seeds and transfer streams hold different instances of the same families
    seeds, transfer = load_split("arc1d-seeds"), load_split("arc1d-transfer")
    assert all(s.id == t.id and s.to_json() != t.to_json() for s, t in zip(seeds, transfer))


def test_tasks_are_the_same_in_another_process_with_another_hash_seed():
    code = (
        "import json, sys\n"
        "from memreason.datasets.arc import load_split\n"
        "tasks = load_split('arc1d', size=12, seed=9) + load_split('rearc', size=3, seed=9)\n"
        "sys.stdout.write(json.dumps([[t.id, t.to_json()] for t in tasks]))\n"
    )
    here = _fingerprint(load_split("arc1d", size=12, seed=9) + load_split("rearc", size=3, seed=9))
    hash_seed = "8" if os.environ.get("PYTHONHASHSEED") == "7" else "7"  # not this process's (random unless set)
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == here


def test_transfer_test_pairs_are_never_pairs_of_the_seed_instances():
    size = 2 * len(MEMORY_FAMILIES)
    seen = {pair for task in load_split("arc1d-seeds", size=size, seed=2) for pair in map(repr, _pairs(task))}
    for task in load_split("arc1d-transfer", size=size, seed=2):
        assert repr((task.test[0].input, task.test[0].output)) not in seen, task.id


def test_a_test_pair_to_avoid_is_drawn_again():
    plain = arc1d_task("gravity_right", seed=1, index=0, stream="transfer")
    test = plain.test[0]
    avoid = frozenset({(tuple(map(tuple, test.input)), tuple(map(tuple, test.output)))})
    again = arc1d_task("gravity_right", seed=1, index=0, stream="transfer", avoid=avoid)
    assert again.train == plain.train and again.test != plain.test


def test_1d_tasks_are_three_train_pairs_and_a_test_pair_of_one_row():
    for task in load_split("arc1d", size=140):
        assert len(task.train) == 3 and len(task.test) == 1
        widths = {len(g[0]) for pair in _pairs(task) for g in pair}
        assert all(len(g) == 1 for pair in _pairs(task) for g in pair)
        assert len(widths) == 1 and 10 <= widths.pop() <= 30
        assert len({repr(p) for p in _pairs(task)}) == 4, f"{task.id} repeats a pair"


def test_rearc_tasks_are_fresh_instances_of_their_arc_task():
    training = arckit_set("arcagi", "train")
    for task in load_split("rearc-seeds", size=12, seed=1):
        assert 3 <= len(task.train) <= 5 and len(task.test) == 1
        original = {
            repr((p["input"], p["output"]))
            for p in (*training[concept_of(task.id)]["train"], *training[concept_of(task.id)]["test"])
        }
        assert not original & {repr(p) for p in _pairs(task)}, f"{task.id} holds a pair of the original task"
        assert len({repr(p) for p in _pairs(task)}) == len(_pairs(task))
    assert generation("rearc").difficulty == generated.REARC_DIFFICULTY
    assert load_split("rearc", size=2, difficulty=(0.2, 0.3))[0].to_json() != load_split("rearc", size=2)[0].to_json()


# -- knobs, filters, errors ------------------------------------------------------------------------------


def test_filters_tasks_and_limit_choose_among_the_generated_tasks():
    chosen = load_split("arc1d", families=["gravity_left", "change_to_five"], size=4)
    assert [t.id for t in chosen] == ["gravity_left@s0i0", "change_to_five@s0i0", "gravity_left@s0i1", "change_to_five@s0i1"]
    kept = load_split("arc1d-seeds", exclude_families=list(MEMORY_FAMILIES[1:]))
    assert [t.id for t in kept] == [f"{MEMORY_FAMILIES[0]}@s0i0"]
    assert [t.id for t in load_split("arc1d-seeds", limit=2)] == [f"{f}@s0i0" for f in MEMORY_FAMILIES[:2]]
    picked = load_split("arc1d-seeds", ids=["gravity_right@s0i0"])
    assert picked[0].to_json() == next(t for t in load_split("arc1d-seeds") if t.id == "gravity_right@s0i0").to_json()
    assert [t.id for t in load_split("rearc", families=["1c786137"], size=2, seed=7)] == ["1c786137@s7i0", "1c786137@s7i1"]


@pytest.mark.parametrize(
    "split, knobs, message",
    [
        ("arc1d", dict(families=["nope"]), "unknown 1D-ARC family 'nope'"),
        ("arc1d", dict(exclude_families=["nope"]), "unknown 1D-ARC family 'nope'"),
        ("arc1d-seeds", dict(families=["move_1pix_solid_right"]), "not a family of split 'arc1d-seeds'"),
        ("arc1d-recombination", dict(exclude_families=list(RECOMBINATION_FAMILIES)), "no family"),
        ("rearc", dict(families=["007bbfb7"]), "one of rearc-seeds's"),
        ("rearc", dict(families=["ffffffff"]), "unknown family 'ffffffff'"),
        ("arc1d", dict(difficulty=(0, 0.1)), "re-ARC splits"),
        ("rearc", dict(difficulty=(0.5, 0.2)), "0 <= low <= high <= 1"),
        ("arc1d", dict(seed=-1), "seed must be"),
        ("arc1d", dict(size=0), "size must be"),
        ("val100", dict(seed=1), "apply only to the generated splits"),
        ("arc1d", dict(ids=["gravity_right@s0i9"]), "unknown task id"),
    ],
)
def test_bad_knobs_are_one_clear_error(split, knobs, message):
    with pytest.raises(ArcDataError, match=message) as caught:
        load_split(split, **knobs)
    assert "\n" not in str(caught.value)


def test_a_failing_or_looping_rearc_generator_skips_its_task_with_a_warning(monkeypatch, caplog):
    def broken(rng, low, high):
        raise ValueError("no")

    def loops(rng, low, high):
        while True:
            pass

    real = generated._rearc_generators()
    monkeypatch.setattr(generated, "_rearc_generators", lambda: {**real, "1c786137": broken, "1e0a9b12": loops})
    monkeypatch.setattr(generated, "REARC_SECONDS", 0.5)
    with caplog.at_level(logging.WARNING, logger="memreason.datasets.arc.generated"):
        tasks = load_split("rearc", families=["1c786137", "1e0a9b12", "1f0c79e5"])
        assert rearc_task("1c786137") is None
    assert [t.id for t in tasks] == ["1f0c79e5@s0i0"]
    assert "1c786137@s0i0" in caplog.text and "ran past" in caplog.text


def test_a_rearc_test_pair_never_leaves_its_input_unchanged(monkeypatch, caplog):
    tasks = load_split("rearc", size=60, seed=0)
    assert len(tasks) == 58  # 253bf280 and 42a50994 draw nothing but unchanged pairs at the lowest difficulty
    assert all(p.input != p.output for t in tasks for p in t.test)
    assert any(p.input == p.output for t in tasks for p in t.train)  # train pairs may show nothing to change
    counter = iter(range(10**6))

    def every_other(rng, low, high):  # unchanged, changed, unchanged, ...
        k = next(counter)
        return {"input": [[k % 10, 1]], "output": [[k % 10, 1 + k % 2]]}

    def unchanged(rng, low, high):
        k = next(counter)
        return {"input": [[k % 10, 1]], "output": [[k % 10, 1]]}

    real = generated._rearc_generators()
    monkeypatch.setattr(generated, "_rearc_generators", lambda: {**real, "1c786137": every_other, "1e0a9b12": unchanged})
    with caplog.at_level(logging.WARNING, logger="memreason.datasets.arc.generated"):
        kept = rearc_task("1c786137")
        assert rearc_task("1e0a9b12") is None
    assert kept is not None and kept.test[0].input != kept.test[0].output
    assert "1e0a9b12@s0i0: every one of 100 draws left its input unchanged" in caplog.text


# -- the solutions written for the memory families -------------------------------------------------------


def test_there_is_one_solution_per_memory_family_and_none_names_a_family():
    assert sorted(p.stem for p in ARC1D_SOLUTIONS.glob("*.py")) == sorted(MEMORY_FAMILIES)
    for path in ARC1D_SOLUTIONS.glob("*.py"):
        text = path.read_text()
        assert "@s" not in text and not any(family in text for family in arc1d_families()), path.name


@pytest.mark.parametrize("family", MEMORY_FAMILIES)
def test_each_solution_reproduces_every_pair_of_its_family(family):
    namespace: dict = {}
    exec((ARC1D_SOLUTIONS / f"{family}.py").read_text(), namespace)
    transform = namespace["transform"]
    for seed in (0, 11):
        for index in range(20):
            task = arc1d_task(family, seed=seed, index=index, stream="seeds")
            for grid_in, grid_out in _pairs(task):
                assert transform([list(row) for row in grid_in]) == grid_out, f"{task.id}: {grid_in} -> {grid_out}"
