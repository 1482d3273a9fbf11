"""ARC runs that survive: resume after a crash, LM faults, threads, cost and reports (scripted engine)."""

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from dspy.utils.exceptions import LMRateLimitError, LMServerError

import memreason.eval.arc.sandbox as arc_sandbox
from memreason.datasets.arc import puzzle_text
from memreason.eval.cli import main as eval_main
from memreason.eval.cli import main as report_main
from memreason.eval.harness.runs import comparable
from memreason.lm import LMChoice, ScriptedEngine
from tests.helpers.arc_helpers import FLIP, IDENTITY, RECOLOR, four_tasks, small_sandbox, write_tasks
from tests.helpers.scripted_answers import Script, outputs

ROOT = Path(__file__).resolve().parents[3]
PNG = b"\x89PNG\r\n\x1a\n"
# arcmemo_ps from an empty memory, written every 2 problems; the recolours need their retry
ARGV = [
    "arcmemo_ps",
    "--attempts",
    "1",
    "--retries",
    "1",
    "--continual-every",
    "2",
    "--no-progress",
    "--no-report",
    "--backoff",
    "0",
]


def program(call):
    if "input (1 rows x 2 columns):\n12" in call.user_text:
        return {"program": FLIP}
    return {"program": RECOLOR if "previous_program" in call.user_text else IDENTITY}


def script():
    return Script(
        program=program,
        selected={"reasoning": "cues", "selected": ["recolour cells", "ghost concept"]},
        pseudocode={"pseudocode": "1. do it"},
        concepts={"concepts": [{"title": "recolour cells", "kind": "routine"}]},
    )


def use(monkeypatch, engine):
    monkeypatch.setattr(
        "memreason.eval.harness.lms.resolve_lm",
        lambda spec, **kw: LMChoice(spec or "embedded", engine.lm(cache=True), local=False),
    )
    monkeypatch.setattr(arc_sandbox, "make_sandbox", lambda workers, wall_seconds: small_sandbox())


@pytest.fixture(scope="module")
def split(tmp_path_factory):
    """The four tasks, written once for the module (runs only read them)."""
    return write_tasks(tmp_path_factory.mktemp("split") / "four", *four_tasks())


def results(out):
    return json.loads((out / "results.json").read_text())


def lines(out):
    return [json.loads(line) for line in (out / "examples.jsonl").read_text().splitlines()]


def snapshots(out):
    folder = out / "memory" / "run0"
    return {p.name: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}


def asked_about(engine, ids):
    """The calls of ``engine`` that carry the puzzle of one of the tasks ``ids`` (solving or selecting for it)."""
    puzzles = {t.id: puzzle_text(t) for t in four_tasks() if t.id in ids}
    return [i for c in engine.calls for i, text in puzzles.items() if text in c.user_text]


@pytest.fixture(scope="module")
def whole_run(split, tmp_path_factory):
    """The uninterrupted run (its directory and engine) that every other run is compared with, run once for the module."""
    engine = ScriptedEngine(script())
    out = tmp_path_factory.mktemp("whole") / "whole"
    with pytest.MonkeyPatch.context() as patch:
        use(patch, engine)
        assert eval_main([*ARGV, "--split", str(split), "--out", str(out)]) == 0
    return out, engine


def uninterrupted(monkeypatch, tmp_path, whole_run):
    """A copy of the uninterrupted run's directory in ``tmp_path`` (a test may write to it), and the engine that
    made it; the LM and sandbox patched in as for that run (a fresh engine on the same script)."""
    use(monkeypatch, ScriptedEngine(script()))
    out = tmp_path / "whole"
    shutil.copytree(whole_run[0], out)
    return out, whole_run[1]


# -- killed for real ---------------------------------------------------------------------------------

DRIVER = """
import sys, time
sys.path[:0] = [{root!r}]  # the repository root: tests.helpers and this module
import memreason.eval.arc.sandbox as arc_sandbox
from memreason.datasets.arc import puzzle_text
from memreason.eval.cli import main as eval_main
from memreason.lm import LMChoice, ScriptedEngine
from tests.helpers.arc_helpers import four_tasks, small_sandbox
from tests.eval.arc.test_resume import script

answer, last = script(), puzzle_text(four_tasks()[-1])
def slow(call):  # the last task's calls are slow: time for the test to kill the run once the other three are done
    if last in call.user_text:
        time.sleep(1.0)
    return answer(call)

engine = ScriptedEngine(slow)
import memreason.eval.harness.lms as lms
lms.resolve_lm = lambda spec, **kw: LMChoice(spec or "embedded", engine.lm(cache=True), local=False)
arc_sandbox.make_sandbox = lambda workers, wall_seconds: small_sandbox()
sys.exit(eval_main(sys.argv[1:]))
"""


def test_sigkill_mid_run_then_resume_equals_an_uninterrupted_run(tmp_path, split, whole_run, monkeypatch):
    killed = tmp_path / "killed"
    driver = tmp_path / "driver.py"
    driver.write_text(textwrap.dedent(DRIVER.format(root=str(ROOT))))
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    process = subprocess.Popen(
        [sys.executable, str(driver), *ARGV, "--split", str(split), "--out", str(killed)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        path = killed / "examples.jsonl"
        while time.monotonic() < deadline and process.poll() is None:
            if path.exists() and path.read_text().count("\n") >= 3:
                break
            time.sleep(0.02)
        assert process.poll() is None, "the run ended before it could be killed"
        os.killpg(process.pid, signal.SIGKILL)  # the run and its sandbox workers, at once
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    finished = {r["id"] for r in lines(killed)}
    assert 3 <= len(finished) < 4 and not (killed / "results.json").exists()
    assert (killed / "memory" / "run0" / "step-0002.json").exists()  # the first batch's write was done

    engine = ScriptedEngine(script())
    use(monkeypatch, engine)
    assert eval_main(["--resume", str(killed), "--no-progress", "--no-report"]) == 0
    assert asked_about(engine, finished) == []  # no finished task's LM calls were asked again
    assert set(asked_about(engine, {"d_recolor"})) == {"d_recolor"}

    whole, _ = uninterrupted(monkeypatch, tmp_path, whole_run)
    assert comparable(results(killed)) == comparable(results(whole))
    assert snapshots(killed) == snapshots(whole)
    assert results(killed)["execution"]["resumed_examples"] == 3
    assert sorted(r["id"] for r in lines(killed)) == ["a_flip", "b_recolor", "c_flip", "d_recolor"]


# -- crashed in process: every resume point ----------------------------------------------------------


class Crash(BaseException):
    """A crash that nothing in the harness catches (as a SIGKILL would end the process)."""


@pytest.mark.parametrize(
    "crash_at",
    [
        "b_recolor",  # in the first batch: nothing written yet
        "c_flip",  # the first task after the first write
        "pseudocode",  # during the first write: its batch is finished, the write is done again
    ],
)
def test_a_crash_anywhere_resumes_to_the_uninterrupted_run(tmp_path, split, whole_run, monkeypatch, crash_at):
    whole, full = uninterrupted(monkeypatch, tmp_path, whole_run)
    answer, crashed = script(), []

    def crashing(call):
        puzzle = {t.id: puzzle_text(t) for t in four_tasks()}.get(crash_at)
        hit = (puzzle and puzzle in call.user_text) or outputs(call)[-1] == crash_at
        if hit and not crashed:
            crashed.append(True)
            raise Crash()
        return answer(call)

    out = tmp_path / "crashed"
    use(monkeypatch, ScriptedEngine(crashing))
    with pytest.raises(Crash):
        eval_main([*ARGV, "--split", str(split), "--out", str(out)])
    finished = {r["id"] for r in lines(out)}

    engine = ScriptedEngine(script())
    use(monkeypatch, engine)
    assert eval_main([*ARGV, "--split", str(split), "--out", str(out)]) == 0  # the same command continues
    assert not set(asked_about(engine, finished))
    assert comparable(results(out)) == comparable(results(whole))
    assert snapshots(out) == snapshots(whole)
    assert len(engine.calls) < len(full.calls)


def test_threads_keep_the_write_order_of_algorithm_1(tmp_path, split, whole_run, monkeypatch):
    whole, _ = uninterrupted(monkeypatch, tmp_path, whole_run)
    use(monkeypatch, ScriptedEngine(script()))
    out = tmp_path / "threads"
    assert eval_main([*ARGV, "--split", str(split), "--out", str(out), "--threads", "2"]) == 0
    assert comparable(results(out)) == comparable(results(whole)) and snapshots(out) == snapshots(whole)
    assert results(out)["execution"]["threads"] == 2


def test_tokens_by_role_and_step_and_cost(tmp_path, split, whole_run, monkeypatch):
    whole, engine = uninterrupted(monkeypatch, tmp_path, whole_run)
    r = results(whole)
    steps = r["tokens_by_step"]
    assert set(steps["task"]) == {"arc_solver.solve", "arc_solver.retry"}
    assert steps["task"]["arc_solver.solve"]["calls"] == 4 and steps["task"]["arc_solver.retry"]["calls"] == 2
    assert steps["memory"]["concept_selector"]["calls"] == 2  # the second batch reads a non-empty memory
    assert steps["memory"]["concept_abstractor"]["calls"] == 2 * 2 * 2  # 2 writes of 2 solutions, 2 calls each
    # every answer is metered, from the engine or from DSPy's cache (the same solution abstracted twice)
    assert r["tokens"]["task"]["calls"] + r["tokens"]["memory"]["calls"] == 16 > len(engine.calls)
    assert r["tokens"]["task"]["prompt"] == sum(s["prompt"] for s in steps["task"].values()) > 0
    assert r["cost"]["total"] is None and r["cost"]["currency"] == "USD"  # a scripted model has no price
    assert r["memory_writes"] == 2 and r["memory_solutions_written"] == 4 and r["official_score"] == 1.0
    assert snapshots(whole)["final.json"]["concepts"][0]["uses"] == 2


def test_a_different_config_is_one_line_and_exit_2(tmp_path, split, whole_run, monkeypatch, capsys):
    whole, _ = uninterrupted(monkeypatch, tmp_path, whole_run)
    before = (whole / "examples.jsonl").read_text()
    capsys.readouterr()
    assert eval_main([*ARGV, "--split", str(split), "--out", str(whole), "--continual-every", "1"]) == 2
    err = capsys.readouterr().err
    assert "another config (continual_every 2 != 1)" in err and err.count("\n") == 1
    assert eval_main(["--resume", str(whole), "--attempts", "3"]) == 2
    assert "--resume takes the run's own config; drop --attempts" in capsys.readouterr().err
    assert (whole / "examples.jsonl").read_text() == before


# -- LM faults ---------------------------------------------------------------------------------------


def test_lm_faults_are_retried_counted_and_a_failed_task_scores_zero(tmp_path, split, monkeypatch):
    answer, seen = script(), set()
    recolor_b = puzzle_text(four_tasks()[1])

    def faulty(call):
        if recolor_b in call.user_text and outputs(call)[-1] == "program":
            raise LMServerError("down for this puzzle")  # b's solver calls never succeed
        if call.user_text not in seen:  # everything else is rate-limited once
            seen.add(call.user_text)
            raise LMRateLimitError("slow down")
        return answer(call)

    use(monkeypatch, ScriptedEngine(faulty))
    out = tmp_path / "faulty"
    assert eval_main([*ARGV, "--split", str(split), "--out", str(out), "--lm-retries", "2"]) == 0
    r = results(out)
    b = next(rec for rec in lines(out) if rec["id"] == "b_recolor")
    assert b["failure"]["kind"] == "server_error" and "down for this puzzle" in b["failure"]["reason"]
    assert b["scores"]["official_score"] == 0.0
    assert r["failures"] == {"server_error": 1}
    assert r["official_score"] == 0.75  # the other three are solved
    # b: two steps (solve, then retry on the error), each 3 tries; the rest: each prompt once rate-limited
    assert r["faults"]["server_error"] == 2 * 3 and r["lm_retries"]["server_error"] == 2 * 2
    assert r["faults"]["rate_limit"] == r["lm_retries"]["rate_limit"] > 0
    assert r["memory_writes"] == 2 and r["memory_solutions_written"] == 3


def test_max_errors_stops_the_run_keeps_its_work_and_it_continues(tmp_path, split, whole_run, monkeypatch, capsys):
    def down(call):
        raise LMServerError("down")

    use(monkeypatch, ScriptedEngine(down))
    out = tmp_path / "run"
    argv = [*ARGV, "--split", str(split), "--out", str(out), "--lm-retries", "1"]
    assert eval_main([*argv, "--max-errors", "0"]) == 1
    err = capsys.readouterr().err
    assert "run stopped: 1 tasks failed in this process (--max-errors 0)" in err and err.count("\n") == 1
    assert [r["failure"]["kind"] for r in lines(out)] == ["server_error"]
    assert not (out / "results.json").exists()

    whole, _ = uninterrupted(monkeypatch, tmp_path, whole_run)
    use(monkeypatch, ScriptedEngine(script()))  # the server is back: solve the failed task again
    assert eval_main([*argv, "--retry-failed"]) == 0
    assert comparable(results(out)) == comparable(results(whole))
    assert results(out)["failures"] == {} and results(out)["faults"] == {}


# -- reports -----------------------------------------------------------------------------------------


def test_an_arc_run_writes_its_report_with_oracle_at_3_null(tmp_path, split, monkeypatch, capsys):
    use(monkeypatch, ScriptedEngine(script()))
    out = tmp_path / "run"
    argv = ["arcmemo_ps", "--split", str(split), "--attempts", "2", "--retries", "1", "--out", str(out), "--no-progress"]
    assert eval_main(argv) == 0
    assert f"report: {out / 'report.md'}" in capsys.readouterr().out
    r = results(out)
    assert r["oracle_at_k"]["3"] is None and r["oracle_at_k"]["2"] == 1.0
    report = (out / "report.md").read_text()
    assert "# Run report: arcmemo_ps four" in report
    every = "100.0 [51.0, 100.0]"  # each score with its 95% CI over the four tasks (all right: Wilson's)
    assert f"| arcmemo_ps four | {every} | {every} | {every} | {every} | — |" in report  # official, strict, oracle@1..3
    assert f"| arcmemo_ps four | 50.0 [15.0, 85.0] | {every} |" in report  # score after 0 and 1 retries
    assert "| arcmemo_ps four | task | arc_solver.retry |" in report
    for name in ("arc_score_vs_k.png", "arc_score_vs_retries.png", "accuracy_vs_tokens.png"):
        assert (out / name).read_bytes()[:8] == PNG and f"]({name})" in report
    (out / "report.md").unlink()
    assert report_main(["report", str(out)]) == 0 and (out / "report.md").exists()


def test_build_memory_continues_its_run_dir(tmp_path, split, monkeypatch):
    answer, crashed = (
        Script(
            program={"program": FLIP},
            pseudocode={"pseudocode": "p"},
            concepts={"concepts": [{"title": "flip rows", "kind": "routine"}]},
        ),
        [],
    )
    c_flip = puzzle_text(four_tasks()[2])

    def crashing(call):
        if c_flip in call.user_text and not crashed:
            crashed.append(True)
            raise Crash()
        return answer(call)

    argv = [
        "build_memory",
        "--format",
        "ps",
        "--split",
        str(split),
        "--attempts",
        "1",
        "--retries",
        "0",
        "--no-progress",
        "--no-report",
    ]
    use(monkeypatch, ScriptedEngine(crashing))
    with pytest.raises(Crash):
        eval_main([*argv, "--out", str(tmp_path / "ps.json"), "--run-dir", str(tmp_path / "log")])
    assert [r["id"] for r in lines(tmp_path / "log")] == ["a_flip", "b_recolor"]
    engine = ScriptedEngine(answer)
    use(monkeypatch, engine)
    assert eval_main([*argv, "--out", str(tmp_path / "ps.json"), "--run-dir", str(tmp_path / "log")]) == 0
    assert not asked_about(engine, {"a_flip", "b_recolor"})
    use(monkeypatch, ScriptedEngine(answer))
    assert eval_main([*argv, "--out", str(tmp_path / "whole.json"), "--run-dir", str(tmp_path / "whole")]) == 0
    assert json.loads((tmp_path / "ps.json").read_text()) == json.loads((tmp_path / "whole.json").read_text())
    resumed, whole = results(tmp_path / "log"), results(tmp_path / "whole")
    assert resumed["concepts"] == 1 and resumed["written"] == 2  # the two flips
    assert comparable(resumed) == {**comparable(whole), "memory_file": resumed["memory_file"], "config": resumed["config"]}
