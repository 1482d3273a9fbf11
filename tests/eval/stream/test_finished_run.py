"""A finished stream run asked again is recognised from its directory before any model resolves; anything else (other
options, a run not whole, files changed since its results) goes the usual way."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from pathlib import Path

import pytest

from memreason.eval.cli import main as eval_main
from memreason.eval.stream.finished import finished_run
from memreason.eval.stream.options import StreamOptions
from memreason.lm import LMChoice, ScriptedEngine
from tests.helpers.stream_answers import respond

ARGV = ["stream_baseline", "--task", "rg:puzzle24", "--size", "4", "--seed-size", "2", "--batch", "2", "--lm", "openai/stub"]
OPTIONS = dict(program="stream_baseline", task="rg:puzzle24", size=4, seed_size=2, batch=2, lm="openai/stub")


class Resolved:
    """A scripted engine standing in for every model, counting how often a model was resolved."""

    def __init__(self, monkeypatch):
        self.engine, self.count = ScriptedEngine(respond), 0
        monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", self.resolve)

    def resolve(self, spec, **kw):
        self.count += 1
        return LMChoice(spec or "embedded", self.engine.lm(), local=False)


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> tuple[Path, str]:
    """A finished run made once (its directory) and what its command printed."""
    run = tmp_path_factory.mktemp("finished") / "run"
    with pytest.MonkeyPatch.context() as patch:
        Resolved(patch)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert eval_main([*ARGV, "--out", str(run), "--no-progress"]) == 0
    return run, out.getvalue()


@pytest.fixture
def finished(made, tmp_path, monkeypatch) -> tuple[Path, Resolved, str]:
    """A copy of the finished run (its directory), stand-in models, and what its command printed."""
    original, printed = made
    run = tmp_path / "run"
    shutil.copytree(original, run)  # times kept: results.json newer than what it sums up
    return run, Resolved(monkeypatch), printed.replace(str(original), str(run))


def _files(run: Path) -> dict[str, tuple[bytes, int]]:
    """Every file of ``run`` but its lock (which names its holder), with its bytes and time."""
    files = sorted(p for p in run.rglob("*") if p.is_file() and p.name != ".lock")
    return {str(p.relative_to(run)): (p.read_bytes(), p.stat().st_mtime_ns) for p in files}


def test_asked_again_it_prints_what_it_printed_and_resolves_no_model(finished, capsys):
    run, models, printed = finished
    resolved, calls, before = models.count, len(models.engine.calls), _files(run)
    assert eval_main([*ARGV, "--out", str(run), "--no-progress"]) == 0
    again = capsys.readouterr()
    assert again.out == printed and f"report: {run / 'report.md'}" in printed
    assert "continuing the run in" in again.err
    assert models.count == resolved and len(models.engine.calls) == calls  # no model resolved, none asked
    assert _files(run) == before  # nothing in the directory changed
    assert eval_main(["--resume", str(run), "--no-progress"]) == 0  # --resume RUN_DIR: the same
    assert capsys.readouterr().out == printed and models.count == resolved
    assert eval_main([*ARGV, "--out", str(run), "--no-progress", "--no-report"]) == 0
    assert "report:" not in capsys.readouterr().out and models.count == resolved


@pytest.mark.parametrize(
    "changed",
    [
        {"seed": 1},
        {"lesson": "answer"},
        {"batch": 1},
        {"orders": 2},
        {"size": 5},
        {"order_seed": 3},
        {"task_config": '{"min_value": 2}'},
        {"learn_from": "reference"},
        {"temperature": 0.5},
        {"max_tokens": 300},
        {"lm": "openai/other"},
        {"memory_lm": "openai/other"},
        {"lm_args": {"top_p": 0.9}},
        {"answer": "program"},
        {"program": "fewshot"},
        {"lm": None},  # the embedded model
    ],
)
def test_a_run_with_other_options_is_never_taken_for_finished(finished, changed):
    run, _, _ = finished
    assert finished_run(StreamOptions(**OPTIONS, out=run)) is not None  # the same options: finished
    assert finished_run(StreamOptions(**OPTIONS, out=run, learn_from="check", threads=4)) is not None  # as resolved
    assert finished_run(StreamOptions(**{**OPTIONS, **changed}, out=run)) is None


def test_at_the_command_line_other_options_are_refused_as_before(finished, capsys):
    run, models, _ = finished
    assert eval_main([*ARGV, "--seed", "1", "--out", str(run), "--no-progress"]) == 2
    assert "holds a run with another config (seed 0 != 1)" in capsys.readouterr().err and models.count == 0


def test_knobs_of_a_config_file_are_part_of_the_run(finished, tmp_path):
    run, _, _ = finished
    best = tmp_path / "best.json"
    best.write_text(json.dumps({"program": "stream_baseline", "knobs": {}}))
    assert finished_run(StreamOptions(**OPTIONS, out=run, config=best)) is not None  # no knobs: the same run
    best.write_text(json.dumps({"program": "stream_baseline", "knobs": {"retries": 1}}))
    assert finished_run(StreamOptions(**OPTIONS, out=run, config=best)) is None


def _drop_last_line(run: Path) -> None:
    lines = (run / "examples.jsonl").read_text().splitlines(keepends=True)
    (run / "examples.jsonl").write_text("".join(lines[:-1]))


def _mark_failed(run: Path) -> None:
    lines = [json.loads(line) for line in (run / "examples.jsonl").read_text().splitlines()]
    lines[0]["error"] = "timeout"
    (run / "examples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))


def _older(path: Path, than: Path) -> None:
    """Make ``path`` a second older than ``than``."""
    os.utime(path, ns=(path.stat().st_atime_ns, than.stat().st_mtime_ns - 10**9))


@pytest.mark.parametrize(
    "undo",
    [
        _drop_last_line,  # an item not answered
        _mark_failed,  # an item that failed: the usual path decides (--retry-failed)
        lambda run: (run / "memory" / "order0" / "batch0001.json").unlink(),  # the last batch's writes not made
        lambda run: (run / "memory" / "seed.json").unlink(),  # the seed memory not written
        lambda run: (run / "report.md").unlink(),  # the report not written
        lambda run: _older(run / "report.md", run / "results.json"),  # the report older than the results
        lambda run: _older(run / "results.json", run / "examples.jsonl"),  # the results older than the examples
        lambda run: (run / "results.json").write_text("{not json"),
        lambda run: (run / "config.json").unlink(),
    ],
)
def test_a_run_not_whole_or_changed_since_its_results_is_not_finished(finished, undo):
    run, _, _ = finished
    undo(run)
    assert finished_run(StreamOptions(**OPTIONS, out=run)) is None


def test_a_run_not_whole_is_continued_as_before(finished, capsys):
    run, models, printed = finished
    _drop_last_line(run)  # a crash in the last batch: one of its items and its writes lost
    (run / "memory" / "order0" / "batch0001.json").unlink()
    assert eval_main([*ARGV, "--out", str(run), "--no-progress"]) == 0
    assert models.count > 0  # the usual path: the models resolved, the lost item answered again (from the run's cache)
    assert len((run / "examples.jsonl").read_text().splitlines()) == 4
    assert capsys.readouterr().out == printed
    assert finished_run(StreamOptions(**OPTIONS, out=run)) is not None  # and now it is whole


def test_options_that_ask_for_more_than_the_files_go_the_usual_way(finished):
    run, _, _ = finished
    assert finished_run(StreamOptions(**OPTIONS, out=run, no_report=True)) is not None
    assert finished_run(StreamOptions(**OPTIONS, out=run, mlflow="")) is None
    assert finished_run(StreamOptions(**OPTIONS, out=run, budget_usd=1.0)) is None
    assert finished_run(StreamOptions(**OPTIONS, out=run, budget_tokens=10)) is None
    assert finished_run(StreamOptions(**OPTIONS, out=None)) is None
