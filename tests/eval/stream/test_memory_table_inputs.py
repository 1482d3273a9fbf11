"""``memory_table`` under bad input: ``--out`` checked as the evaluation commands check it (never the current
directory by accident), damaged run directories named in one line, an unknown ``--baseline`` column refused, and
its files written whole (a full disk names the file and leaves the old one)."""

from __future__ import annotations

import errno
import json
import shutil
from pathlib import Path

import pytest

import memreason.files as files
from memreason.eval.cli import main as eval_main
from memreason.lm import LMChoice, ScriptedEngine
from tests.helpers.stream_answers import respond

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> list[Path]:
    """A baseline run and a fewshot run on rg:puzzle24, answered by the scripted engine."""
    engine = ScriptedEngine(respond)
    made = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            "memreason.eval.harness.lms.resolve_lm", lambda spec, **kw: LMChoice(spec or "embedded", engine.lm(), local=False)
        )
        for program in ("stream_baseline", "fewshot"):
            run = tmp_path_factory.mktemp("runs") / program
            argv = [
                program,
                "--task",
                "rg:puzzle24",
                "--size",
                "4",
                "--seed-size",
                "2",
                "--batch",
                "2",
                "--learn-from",
                "reference",
            ]
            assert eval_main([*argv, "--out", str(run), "--no-progress", "--no-report"]) == 0
            made.append(run)
    return made


def one_line(capsys) -> str:
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err
    return err


def table(runs, *extra: str) -> list[str]:
    return ["memory_table", *map(str, runs), *extra]


def test_an_empty_out_is_refused_and_nothing_lands_in_the_current_directory(runs, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "table.md").write_text("mine")
    assert eval_main(table(runs, "--out", "")) == 2
    assert "--out needs a path, got an empty one" in one_line(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.md"] and (tmp_path / "table.md").read_text() == "mine"


@pytest.mark.parametrize(
    "where, said",
    [
        (lambda d: d / "file", "is a file, not a directory"),
        (lambda d: d / "file" / "under", "file is a file, not a directory"),
        (lambda d: Path("/proc/memreason-table"), "cannot write"),
    ],
)
def test_an_out_that_cannot_be_written_is_one_line_before_any_run_is_read(where, said, runs, tmp_path, capsys):
    (tmp_path / "file").write_text("kept")
    assert eval_main(table(runs, "--out", str(where(tmp_path)))) == 2
    assert said in one_line(capsys) and (tmp_path / "file").read_text() == "kept"


def _damaged(runs, tmp_path, damage) -> Path:
    copy = tmp_path / "damaged"
    shutil.copytree(runs[1], copy)
    damage(copy)
    return copy


@pytest.mark.parametrize(
    "damage, said",
    [
        (lambda d: (d / "results.json").write_text("[]"), "is not a run's results (a JSON object), got list"),
        (lambda d: (d / "results.json").write_bytes(bytes(range(256))), "results file"),
        (lambda d: (d / "config.json").write_text('"text"'), "is not a run's config (a JSON object), got str"),
        (lambda d: (d / "config.json").unlink(), "cannot read config file"),
        (lambda d: ((d / "examples.jsonl").unlink(), (d / "examples.jsonl").mkdir()), "examples.jsonl is not a regular file"),
        (lambda d: (d / "examples.jsonl").write_text('{"broken"\n{"run": 0}\n'), "line 1 is not an example record"),
        (lambda d: (d / "results.json").unlink(), "is not a finished run: it has no results.json"),
    ],
)
def test_a_damaged_run_is_one_line_and_nothing_is_written(damage, said, runs, tmp_path, capsys):
    damaged = _damaged(runs, tmp_path, damage)
    out = tmp_path / "table"
    assert eval_main(table([runs[0], damaged], "--out", str(out))) == 2
    assert said in one_line(capsys) and not out.exists()


def test_an_unknown_baseline_column_is_refused(runs, tmp_path, capsys):
    out = tmp_path / "table"
    assert eval_main(table(runs, "--baseline", "rg:nosuch=fewshot", "--out", str(out))) == 2
    assert "--baseline rg:nosuch: no such column; the columns are rg:puzzle24" in one_line(capsys) and not out.exists()
    assert eval_main(table(runs, "--baseline", "rg:puzzle24=fewshot", "--out", str(out))) == 0
    assert json.loads((out / "table.json").read_text())["baselines"] == {"rg:puzzle24": "fewshot"}


def test_a_full_disk_names_the_file_and_leaves_the_old_one_whole(runs, tmp_path, monkeypatch, capsys):
    out = tmp_path / "table"
    out.mkdir()
    (out / "table.md").write_text("the old table\n")
    synced = []

    def fsync(fd):
        synced.append(fd)
        if len(synced) == 2:  # table.json goes in; table.md finds the disk full
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", fsync)
    assert eval_main(table(runs, "--out", str(out))) == 2
    err = one_line(capsys)
    assert f"writing {out / 'table.md'} needs" in err and "free some space" in err
    assert (out / "table.md").read_text() == "the old table\n"
    assert sorted(p.name for p in out.iterdir()) == ["table.json", "table.md"]  # no temporary file left
