"""Counts of a stream run (``--size``, ``--seed-size``, ``--orders``, ``--batch``, ``--retries``) bounded by what the data
holds and by a sane maximum, refused in one line before any item is generated (no more hangs on huge sizes, no silent
run with fewer seed problems than asked for)."""

from __future__ import annotations

import pytest

from memreason.datasets.experience_transfer.stream import SceneStream, SceneStreamError
from memreason.datasets.gym import GymData
from memreason.eval.cli import main as eval_main
from memreason.eval.stream.evaluate import MOST

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def no_items(monkeypatch):
    """Any item generated fails the test: every refusal must come first."""

    def generated(*args, **kwargs):
        raise AssertionError("an item was generated before the counts were checked")

    for source in (GymData, SceneStream):
        monkeypatch.setattr(source, "items", generated)
        monkeypatch.setattr(source, "seed_items", generated)


@pytest.mark.parametrize(
    "argv, said",
    [
        (["--task", "rg:puzzle24", "--size", str(10**29)], f"--size must be at most {MOST['--size']:,}, got {10**29:,}"),
        (["--task", "rg:puzzle24", "--seed-size", str(10**12)], "--seed-size must be at most 1,000, got 1,000,000,000,000"),
        (["--task", "rg:puzzle24", "--orders", str(10**9)], "--orders must be at most 100, got 1,000,000,000"),
        (["--task", "rg:puzzle24", "--batch", str(10**9)], "--batch must be at most 10,000"),
        (["--task", "rg:puzzle24", "--retries", str(10**9)], "--retries must be at most 20"),
        (["--task", "et:L1", "--seed-size", "100000"], "--seed-size 100000: et:L1 has 16 seed problems; ask for at most 16"),
        (["--task", "et:L1", "--seed-size", "17"], "et:L1 has 16 seed problems"),
        (["--task", "et:L3", "--seed-size", "25"], "et:L3 has 24 seed problems"),
        (["--task", "et:L2", "--size", "151"], "--size 151: et:L2 has 150 test items; ask for at most 150"),
    ],
)
def test_a_count_beyond_the_data_or_the_maximum_is_one_line_before_any_item(argv, said, no_items, tmp_path, capsys):
    assert eval_main(["fewshot", *argv, "--out", str(tmp_path / "run"), "--no-progress"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: ") and said in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "run").exists()


def test_the_scene_stream_refuses_more_episodes_than_it_holds():
    data = SceneStream(1)
    assert data.counts(0) == (150, 16)
    assert len(data.seed_items(0, 16)) == 16
    with pytest.raises(SceneStreamError, match="level 1 has 16 labelled episodes"):
        data.seed_items(0, 17)
