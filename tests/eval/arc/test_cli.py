"""The ARC harness and CLI end to end on the scripted engine: run directory, results, bad input."""

import json
import runpy
import sys

import pytest

import memreason.eval.arc.sandbox as arc_sandbox
from memreason.eval.cli import main as eval_main
from memreason.eval.harness.runs import comparable
from memreason.lm import ScriptedEngine
from tests.helpers.arc_helpers import FLIP, IDENTITY, RECOLOR, arc_responder, choice, memory_file, small_sandbox, tiny  # noqa: F401
from tests.helpers.scripted_answers import Script, outputs

RESULT_KEYS = {
    "task",
    "program",
    "split",
    "lm",
    "memory_lm",
    "examples",
    "runs",
    "oracle_at_k",
    "official_score",
    "strict_score",
    "score_by_retries",
    "errors",
    "tokens",
    "wall_seconds",
}


responder = arc_responder


@pytest.fixture
def scripted(monkeypatch):
    engine = ScriptedEngine(responder())
    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", lambda spec, **kw: choice(engine, spec or "embedded"))
    monkeypatch.setattr(arc_sandbox, "make_sandbox", lambda workers, wall_seconds: small_sandbox())
    return engine


def test_arcmemo_ps_end_to_end_writes_a_run_directory(tmp_path, tiny, memory_file, scripted, capsys):
    out = tmp_path / "run"
    argv = [
        "arcmemo_ps",
        "--split",
        str(tiny),
        "--memory",
        str(memory_file),
        "--attempts",
        "2",
        "--retries",
        "1",
        "--out",
        str(out),
        "--no-progress",
    ]
    assert eval_main(argv) == 0
    printed = capsys.readouterr().out
    assert "| retry | setting | k=1 | k=2 (official) |" in printed and "arcmemo_ps" in printed
    results = json.loads((out / "results.json").read_text())
    assert RESULT_KEYS <= set(results)
    assert results["task"] == "arc" and results["program"] == "arcmemo_ps" and results["examples"] == 2
    assert results["lm"] == results["memory_lm"] == "embedded"
    assert results["oracle_at_k"] == {"1": 1.0, "2": 1.0, "3": None}
    assert results["official_score"] == 1.0 and results["strict_score"] == 1.0
    assert results["score_by_retries"] == {"0": 0.5, "1": 1.0}  # the recolour task needs its retry
    assert results["selection"] == {"selected": 2, "hallucinated": 2}
    assert results["tokens"]["memory"]["calls"] == 2 and results["tokens"]["task"]["calls"] == 2 + 4
    lines = [json.loads(l) for l in (out / "examples.jsonl").read_text().splitlines()]
    assert [l["id"] for l in lines] == ["a_flip", "b_recolor"]
    recolor = lines[1]
    assert [len(a["steps"]) for a in recolor["attempts"]] == [2, 2]
    assert recolor["attempts"][0]["steps"][1]["program"] == RECOLOR and recolor["verify"] == [[True], [True]]
    assert recolor["read"]["hallucinated"] == ["ghost concept"]
    config = json.loads((out / "config.json").read_text())
    assert config["task_ids"] == ["a_flip", "b_recolor"] and config["memory"] == str(memory_file)
    assert json.loads((out / "memory" / "run0" / "final.json").read_text())["concepts"][0]["uses"] == 2
    assert (out / "dspy_cache").is_dir()
    calls = len(scripted.calls)
    assert eval_main(argv) == 0  # the same config: continued, and there is nothing left to do
    assert len(scripted.calls) == calls and len((out / "examples.jsonl").read_text().splitlines()) == 2
    assert comparable(json.loads((out / "results.json").read_text())) == comparable(results)
    assert eval_main([*argv, "--attempts", "1"]) == 2  # another config: never a silent overwrite


def test_a_run_shows_memory_within_the_memory_lms_context(tmp_path, tiny, memory_file, monkeypatch):
    """A memory LM whose context is known (a local model's) gets at most that many characters of memory."""
    from dataclasses import replace

    from memreason.programs import load_memory

    engine = ScriptedEngine(responder())
    small = lambda spec, **kw: replace(choice(engine, spec or "embedded"), context=40)  # noqa: E731
    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", small)
    monkeypatch.setattr(arc_sandbox, "make_sandbox", lambda workers, wall_seconds: small_sandbox())
    argv = ["arcmemo_ps", "--split", str(tiny), "--memory", str(memory_file), "--attempts", "1", "--no-progress"]
    assert eval_main([*argv, "--out", str(tmp_path / "run")]) == 0
    shown, how = load_memory(memory_file).shown(40)
    assert how != "whole" and any(shown in call.user_text for call in engine.calls)
    lines = [json.loads(l) for l in (tmp_path / "run" / "examples.jsonl").read_text().splitlines()]
    assert {line["read"]["memory_shown"] for line in lines} == {how}


def test_continual_updates_snapshot_memory_after_each_write(tmp_path, tiny, scripted):
    out = tmp_path / "run"
    assert (
        eval_main(
            [
                "arcmemo_ps",
                "--split",
                str(tiny),
                "--attempts",
                "1",
                "--continual-every",
                "1",
                "--retries",
                "1",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    snapshots = sorted(p.name for p in (out / "memory" / "run0").iterdir())
    assert snapshots == ["final.json", "step-0000.json", "step-0001.json", "step-0002.json", "writes.jsonl"]
    assert json.loads((out / "memory" / "run0" / "step-0000.json").read_text())["concepts"] == []
    assert json.loads((out / "memory" / "run0" / "step-0002.json").read_text())["concepts"][0]["sources"] == [
        "a_flip",
        "b_recolor",
    ]
    results = json.loads((out / "results.json").read_text())
    assert results["memory_writes"] == 2 and results["tokens"]["memory"]["calls"] == 2 * 2 + 1  # 2 writes, 1 selection


def test_runs_repeat_with_mean_and_std_and_the_baseline_needs_no_memory(tmp_path, tiny, scripted):
    out = tmp_path / "run"
    assert eval_main(["baseline", "--split", str(tiny), "--runs", "2", "--threads", "2", "--out", str(out), "--no-progress"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["runs"] == 2 and len(results["per_run"]) == 2
    assert results["official_score"] == 0.5 and results["official_score_std"] == 0.0  # no retries: recolour fails
    assert results["oracle_at_k_pooled"]["3"] == 0.5
    assert results["tokens"]["memory"]["calls"] == 0


def test_build_memory_from_user_solutions(tmp_path, tiny, scripted):
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    (solutions / "a_flip.py").write_text(FLIP)
    (solutions / "b_recolor.py").write_text(IDENTITY)  # wrong: not verified, not abstracted
    out = tmp_path / "ps.json"
    assert (
        eval_main(
            [
                "build_memory",
                "--format",
                "ps",
                "--split",
                str(tiny),
                "--solutions",
                str(solutions),
                "--out",
                str(out),
                "--run-dir",
                str(tmp_path / "log"),
                "--no-progress",
            ]
        )
        == 0
    )
    memory = json.loads(out.read_text())
    assert memory["format"] == "ps" and [c["sources"] for c in memory["concepts"]] == [["a_flip"]]
    assert [c["programs"] for c in memory["concepts"]] == [[FLIP]]  # the verified solution, kept with its concept
    results = json.loads((tmp_path / "log" / "results.json").read_text())
    assert (results["verified"], results["written"], results["concepts"]) == (1, 1, 1)
    argv = ["build_memory", "--format", "ps", "--split", str(tiny), "--solutions", str(solutions), "--unverified", "--apart"]
    assert eval_main([*argv, "--out", str(tmp_path / "all.json"), "--run-dir", str(tmp_path / "all"), "--no-progress"]) == 0
    memory = json.loads((tmp_path / "all.json").read_text())["concepts"]
    assert [c["sources"] for c in memory] == [["a_flip"], ["b_recolor"]]
    assert [c["programs"] for c in memory] == [[FLIP], []]  # an unverified solution is abstracted but keeps no program


def test_build_memory_by_solving_keeps_only_solutions_verified_on_all_pairs(tmp_path, tiny, scripted, monkeypatch):
    out = tmp_path / "oe.json"
    engine = ScriptedEngine(
        Script(
            program={"program": FLIP},
            derivation={"derivation": ["Observation: o"]},
            concepts={"concepts": [{"situation": "s", "suggestion": "x"}]},
        )
    )
    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", lambda spec, **kw: choice(engine))
    assert (
        eval_main(
            [
                "build_memory",
                "--format",
                "oe",
                "--split",
                str(tiny),
                "--attempts",
                "1",
                "--retries",
                "0",
                "--out",
                str(out),
                "--run-dir",
                str(tmp_path / "log"),
                "--no-progress",
            ]
        )
        == 0
    )
    memory = json.loads(out.read_text())
    assert [c["sources"] for c in memory["concepts"]] == [["a_flip"]]  # FLIP does not solve the recolour task
    assert [c["programs"] for c in memory["concepts"]] == [[FLIP]]  # the program found and verified
    assert [p.name for p in (tmp_path / "log" / "solutions").iterdir()] == ["a_flip.py"]
    assert (tmp_path / "log" / "solutions" / "a_flip.py").read_text() == FLIP


def test_arc_table_renders_run_directories(tmp_path, tiny, scripted, capsys):
    for name in ("baseline", "arcmemo_ps_noselect"):
        assert eval_main([name, "--split", str(tiny), "--retries", "1", "--out", str(tmp_path / name), "--no-progress"]) == 0
    capsys.readouterr()
    assert eval_main(["arc_table", str(tmp_path / "baseline"), str(tmp_path / "arcmemo_ps_noselect" / "results.json")]) == 0
    table, note, sampling = capsys.readouterr().out.split("\n\n")
    table = table.splitlines()
    assert len(table) == 2 + 2 * 2  # header, rule, 2 retry depths x 2 settings
    # each score with its 95% CI over the two tasks (one solved, one not: a resample holds 0, 1 or 2 solved)
    assert table[2].startswith("| 0 | baseline | 50.00 [9.45, 90.55] | 50.00 [9.45, 90.55] | - |")  # 1 of 2: Wilson
    assert table[5].startswith("| 1 | arcmemo_ps_noselect | 100.00 [34.24, 100.00] | 100.00 [34.24, 100.00] | - |")
    assert note.startswith("In parentheses: the std over runs; in brackets: the 95% CI")
    # the sampling protocol over each run's pool of 2 attempts: per-sample scores, then pooled oracle@k
    assert sampling.splitlines()[2].startswith("| baseline | 2 | ")


def test_the_entry_point_routes_arc_commands(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(sys, "argv", ["python -m eval", "arcmemo_ps", "--split", "nowhere"])
    with pytest.raises(SystemExit) as exit_:
        runpy.run_module("memreason.eval", run_name="__main__")
    assert exit_.value.code == 2
    assert capsys.readouterr().err.startswith("error: unknown split 'nowhere'")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["arcmemo_xx", "--split", "val100"], "unknown program or command 'arcmemo_xx'"),
        (["arcmemo_ps", "--split", "val101"], "unknown split 'val101'"),
        (["arcmemo_ps", "--split", "val100", "--tasks", "deadbeef"], "unknown task id 'deadbeef'"),
        (["arcmemo_ps", "--split", "{bad}"], "is not valid JSON"),
        (["arcmemo_ps", "--split", "val100", "--limit", "1", "--memory", "{corrupt}"], "is corrupt"),
        (["arcmemo_ps", "--split", "val100", "--limit", "1", "--memory", "{oe}"], "needs a ps memory"),
        (["arcmemo_ps", "--split", "val100", "--memory", "missing.json"], "cannot read memory file"),
        (["baseline", "--split", "val100", "--continual-every", "2"], "keeps no memory"),
        (["arcmemo_ps", "--split", "val100", "--attempts", "0"], "--attempts must be at least 1"),
        (["arcmemo_ps", "--split", "val100", "--write-gate", "labels"], "--write-gate"),
        (["arcmemo_ps", "--split", "val100", "--lm", "nonsense-model-xyz"], "unknown LM"),
        (["build_memory", "--format", "ps", "--split", "barc_seeds"], "--out"),
        (["build_memory", "--format", "xx", "--out", "m.json"], "--format"),
        (["build_memory", "--format", "ps", "--out", "m.json", "--solutions", "{solutions}"], "unknown task id 'notatask'"),
        (["build_memory", "--format", "oe", "--out", "m.json", "--apart"], "--apart keeps PS concepts apart"),
        (["arcmemo_ps", "--split", "val100", "--answer", "yaml"], "--answer"),
        (["arc_table", "{bad}"], "not the results of an ARC evaluation"),
        (["arc_table", "--common", "{bad}"], "--common needs --compare"),
        ([], "name a command"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, argv, message, capsys):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "t.json").write_text("{not json")
    (tmp_path / "corrupt.json").write_text('{"format": "ps", "concepts": [{"kind": "routine"}]}')
    (tmp_path / "oe.json").write_text('{"format": "oe", "concepts": []}')
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    (solutions / "notatask.py").write_text(FLIP)
    fill = {
        "{bad}": str(bad),
        "{corrupt}": str(tmp_path / "corrupt.json"),
        "{oe}": str(tmp_path / "oe.json"),
        "{solutions}": str(solutions),
    }
    argv = [fill.get(a, a) for a in argv]
    if argv[:1] == ["arc_table"]:
        (bad / "results.json").write_text('{"task": "experience_transfer"}')
    assert eval_main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    "program, memory_answers",
    [
        (
            "arcmemo_ps",
            dict(
                selected={"reasoning": "-", "selected": ["recolour cells"]},
                pseudocode={"pseudocode": "p"},
                concepts={
                    "concepts": [
                        {
                            "title": "recolour cells",
                            "kind": "routine",
                            "parameters": [{"name": "f", "type": "Callable[[int], int]"}],
                        }
                    ]
                },
            ),
        ),
        (
            "arcmemo_oe",
            dict(
                speculation={"observations": ["o"], "speculation": ["s"]},
                chosen={"chosen": [1]},
                derivation={"derivation": ["Observation: o"]},
                concepts={"concepts": [{"situation": "s", "suggestion": "x"}]},
            ),
        ),
        ("cheatsheet", dict(updated_cheatsheet={"updated_cheatsheet": ["use row[::-1]"]})),
    ],
)
def test_json_mode_as_the_embedded_model_is_driven(tmp_path, tiny, monkeypatch, program, memory_answers):
    """With an in-process model the harness uses DSPy's JSONAdapter: typed outputs and demos must go through it."""
    from memreason.lm import LMChoice

    script = Script(program={"program": FLIP}, **memory_answers)
    engine = ScriptedEngine(script)
    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", lambda spec, **kw: LMChoice("embedded", engine.lm(), local=True))
    monkeypatch.setattr(arc_sandbox, "make_sandbox", lambda workers, wall_seconds: small_sandbox())
    out = tmp_path / "run"
    assert (
        eval_main(
            [program, "--split", str(tiny), "--attempts", "1", "--continual-every", "1", "--out", str(out), "--no-progress"]
        )
        == 0
    )
    for call in engine.calls:  # typed outputs under the grammar; the solver's program as a code block, never under it
        assert (call.response_format is None) is (outputs(call)[-1] == "program")
    results = json.loads((out / "results.json").read_text())
    assert results["errors"] == {} and results["memory_writes"] == 2 and results["official_score"] == 0.5
    final = json.loads((out / "memory" / "run0" / "final.json").read_text())
    assert final["format"] == {"arcmemo_ps": "ps", "arcmemo_oe": "oe", "cheatsheet": "cheatsheet"}[program]


def test_the_progress_bar_shows_the_pass_score_across_continual_batches(tmp_path, tiny, memory_file, scripted, capsys):
    """With --continual-every 1 every task is a batch of its own; the bar's score is the pass's so far, not the
    last batch's (the flip is solved, the recolour is not: 50%, where the last batch alone is 0%)."""
    argv = ["arcmemo_ps", "--split", str(tiny), "--memory", str(memory_file), "--attempts", "1", "--threads", "1"]
    assert eval_main([*argv, "--continual-every", "1", "--out", str(tmp_path / "run")]) == 0
    shown = [part.split("%")[0] for part in capsys.readouterr().err.split("official=")[1:]]
    assert shown and shown[-1] == "50"
    assert json.loads((tmp_path / "run" / "results.json").read_text())["official_score"] == 0.5


def test_a_run_names_the_tasks_a_program_that_returns_its_input_solves(tmp_path, scripted):
    from memreason.datasets.arc import ArcTask
    from tests.helpers.arc_helpers import flip_task, write_tasks

    same = ArcTask.from_json(  # recolour 1 -> 2, but the test input holds no 1: nothing to change
        "z_same",
        {
            "train": [{"input": [[1, 0]], "output": [[2, 0]]}, {"input": [[0, 1, 1]], "output": [[0, 2, 2]]}],
            "test": [{"input": [[0, 3]], "output": [[0, 3]]}],
        },
    )
    split = write_tasks(tmp_path / "split", flip_task("a_flip"), same)
    out = tmp_path / "run"
    assert eval_main(["baseline", "--split", str(split), "--retries", "0", "--out", str(out), "--no-progress"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["unchanged_tests"] == {"tasks": ["z_same"], "solved": ["z_same"]}  # solved by the identity
    assert results["official_score"] == 1.0
    report = (out / "report.md").read_text()
    assert "### Tasks with nothing to change" in report
    assert "1 of 2 tasks have a test output equal to its input" in report and "1 of them solved: z_same" in report
