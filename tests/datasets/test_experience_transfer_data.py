"""The Experience-Transfer generator: geometry, colours, labels, levels, seeds, custom tables."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import ImageColor

from memreason.datasets.experience_transfer import CANVAS, RuleTable, RuleTableError, make_level
from tests.helpers.custom_table import CUSTOM

ROOT = Path(__file__).resolve().parents[2]
PAPER = RuleTable.paper()


@pytest.fixture(scope="module")
def levels():
    return {level: make_level(level, seed=7) for level in (1, 2, 3)}


def centre_pixel(image, obj):
    return image.getpixel((obj.x + obj.size // 2, obj.y + obj.size // 2 + obj.size // 6))


def test_canvas_sizes_and_colours(levels):
    for data in levels.values():
        for item in [*data.episodes, *data.test]:
            assert item.image.size == CANVAS == (200, 100)
            objects = [item.object] if hasattr(item, "object") else item.objects
            for obj in objects:
                assert 25 <= obj.size <= 50
                assert 0 <= obj.x <= 200 - obj.size and 0 <= obj.y <= 100 - obj.size
                assert centre_pixel(item.image, obj) == ImageColor.getrgb(obj.color)
            assert item.image.getpixel((0, 0)) in {ImageColor.getrgb(item.background)} | {
                ImageColor.getrgb(o.color) for o in objects
            }


def test_backgrounds_per_level(levels):
    assert {e.background for e in levels[1].episodes} == {"white"}
    assert {s.background for s in levels[1].test} == {"white"}
    assert {e.background for e in levels[2].episodes} == {"white", "black"}
    assert {s.background for s in levels[2].test} == {"white", "black"}


def test_episode_coverage(levels):
    for level, data in levels.items():
        seen = {(e.object.shape, e.object.color, e.background) for e in data.episodes}
        assert seen == set(data.visible)
        assert len(data.episodes) == 2 * len(data.visible)
    assert len(levels[1].visible) == 8 and len(levels[2].visible) == 16 and len(levels[3].visible) == 12


def test_level3_masks_episodes_but_not_test(levels):
    data = levels[3]
    assert len(data.masked) == 4
    in_episodes = {(e.object.shape, e.object.color, e.background) for e in data.episodes}
    in_test = {(o.shape, o.color, s.background) for s in data.test for o in s.objects}
    assert not set(data.masked) & in_episodes
    assert set(data.masked) <= in_test


def test_fifty_scenes_per_object_count_without_overlap(levels):
    for data in levels.values():
        assert len(data.test) == 150
        counts = [len(s.objects) for s in data.test]
        assert {n: counts.count(n) for n in (2, 3, 4)} == {2: 50, 3: 50, 4: 50}
        assert counts[:6] == [2, 3, 4, 2, 3, 4]  # interleaved, so --limit prefixes are balanced
        for scene in data.test:
            for i, a in enumerate(scene.objects):
                for b in scene.objects[i + 1 :]:
                    assert not a.overlaps(b, gap=0)


def test_labels_and_targets_follow_the_rule_table(levels):
    for data in levels.values():
        for e in data.episodes:
            assert e.label == PAPER.rows[(e.object.shape, e.object.color, e.background)]
        for s in data.test:
            expected = [PAPER.rows[(o.shape, o.color, s.background)] for o in s.objects]
            assert s.labels == expected
            assert s.target == expected.count("anomaly")
        assert {s.target for s in data.test} <= {0, 1, 2, 3, 4}


def test_same_seed_same_data_other_seed_other_data():
    a, b, c = make_level(2, seed=3), make_level(2, seed=3), make_level(2, seed=4)
    assert a.manifest() == b.manifest()
    assert all(x.image.tobytes() == y.image.tobytes() for x, y in zip(a.test, b.test))
    assert a.manifest()["test"] != c.manifest()["test"]


def test_episode_count_does_not_change_the_test_set():
    a, b = make_level(2, seed=1), make_level(2, seed=1, episodes_per_combination=5)
    assert len(b.episodes) == 80
    assert a.manifest()["test"] == b.manifest()["test"]


def test_oracle_rules_are_true_and_cover_what_the_episodes_show(levels):
    names = list(PAPER.attributes)
    for data in levels.values():
        covered = set()
        for rule in data.oracle:
            matching = [c for c in data.visible if all(dict(zip(names, c))[k] == v for k, v in rule.conditions.items())]
            assert matching and all(PAPER.rows[c] == rule.label for c in matching)
            covered |= set(matching)
        assert covered == set(data.visible)
    assert len(levels[1].oracle) == 6  # red and green merge over shape on white
    assert any("other label" in h for h in levels[2].oracle_hypotheses)
    assert not any("other label" in h for h in levels[1].oracle_hypotheses)


def test_custom_rule_table_end_to_end(tmp_path):
    path = tmp_path / "toy.json"
    path.write_text(json.dumps(CUSTOM))
    table = RuleTable.from_json(path)
    data = make_level(3, seed=0, rules=table, scenes_per_count=10)
    assert {o.shape for s in data.test for o in s.objects} == {"triangle", "circle"}
    assert data.query == "Count the total number of toxic objects in the scene."
    for s in data.test:
        assert s.target == sum(table.rows[(o.shape, o.color, s.background)] == "toxic" for o in s.objects)
    assert ("circle", "orange", "ivory") not in {(e.object.shape, e.object.color, e.background) for e in data.episodes}


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d["rules"].pop(), "have no rule"),
        (lambda d: d["attributes"].update(texture=["rough"]), "cannot be drawn"),
        (lambda d: d["attributes"].update(shape=["hexagon", "circle"]), "unknown shape"),
        (lambda d: d["rules"][0].update(label="weird"), "not among"),
        (lambda d: d.update(count_label="bad"), "count_label"),
        (lambda d: d["attributes"].update(color=["notacolour", "orange"]), "colour name"),
        (
            lambda d: d.update(level3_mask=[{"shape": "circle", "color": "orange", "background": b} for b in ("gray", "ivory")]),
            "every background",
        ),
    ],
)
def test_inconsistent_tables_are_refused(change, message):
    data = json.loads(json.dumps(CUSTOM))
    change(data)
    with pytest.raises(RuleTableError, match=message):
        RuleTable.from_dict(data)


def test_unreadable_rules_file(tmp_path):
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(RuleTableError, match="not valid JSON"):
        RuleTable.from_json(tmp_path / "bad.json")
    with pytest.raises(RuleTableError, match="cannot read"):
        RuleTable.from_json(tmp_path / "missing.json")


def test_cli_writes_images_and_manifest(tmp_path):
    out = tmp_path / "l2"
    done = subprocess.run(
        [sys.executable, "-m", "memreason.datasets.experience_transfer", "--level", "2", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "32 episodes and 150 test scenes" in done.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert len(list((out / "episodes").glob("*.png"))) == len(manifest["episodes"]) == 32
    assert len(list((out / "test").glob("*.png"))) == 150
    assert manifest["test"][0]["target"] == sum(l == "anomaly" for l in manifest["test"][0]["labels"])
