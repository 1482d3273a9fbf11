"""A run whose LM calls all fail exits non-zero with one line, keeping what it has; a failed build keeps the memory file."""

import json
import os
import stat

import pytest

import memreason.eval.arc.sandbox as arc_sandbox
from memreason.eval.cli import main as eval_main
from memreason.lm import ScriptedEngine
from tests.helpers.arc_helpers import FLIP, choice, small_sandbox, tiny  # noqa: F401
from tests.helpers.scripted_answers import Script

pytestmark = pytest.mark.timeout(120)

CLOSED = "http://127.0.0.1:9/v1"  # the discard port: nothing listens there


def test_an_experience_transfer_run_against_a_closed_port_exits_1_with_its_work_kept(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    out = tmp_path / "run"
    argv = ["episodic", "--level", "1", "--limit", "3", "--lm", "openai/stub", "--api-base", CLOSED]
    code = eval_main([*argv, "--lm-retries", "0", "--out", str(out), "--no-progress", "--no-report"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1
    assert err[-1].startswith("error: run stopped: no LM call answered and every one of the 3 scenes answered failed")
    assert "--retry-failed" in err[-1] and "Traceback" not in "\n".join(err)
    results = json.loads((out / "results.json").read_text())  # kept
    assert results["execution"]["failed_examples"] == 3 and results["execution"]["lm_answers"] == 0


def failing(call):
    raise RuntimeError("the provider is down")


@pytest.fixture
def no_sandbox_pool(monkeypatch):
    monkeypatch.setattr(arc_sandbox, "make_sandbox", lambda workers, wall_seconds: small_sandbox())


def test_an_arc_run_whose_every_call_fails_exits_1(tmp_path, tiny, no_sandbox_pool, monkeypatch, capsys):
    engine = ScriptedEngine(Script(program=failing))
    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", lambda spec, **kw: choice(engine, spec or "embedded"))
    out = tmp_path / "run"
    assert eval_main(["baseline", "--split", str(tiny), "--out", str(out), "--no-progress", "--no-report"]) == 1
    assert "every one of the 2 tasks answered failed" in capsys.readouterr().err
    assert (out / "results.json").exists()


def test_a_build_whose_abstraction_fails_keeps_the_memory_file_and_its_mode(tmp_path, tiny, no_sandbox_pool, monkeypatch, capsys):
    engine = ScriptedEngine(Script(pseudocode=failing, concepts=failing))
    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", lambda spec, **kw: choice(engine, spec or "embedded"))
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    (solutions / "a_flip.py").write_text(FLIP)
    out = tmp_path / "ps.json"
    before = json.dumps({"format": "ps", "concepts": [{"title": "one", "kind": "routine"}, {"title": "two", "kind": "routine"}]})
    out.write_text(before)
    os.chmod(out, 0o644)
    argv = ["build_memory", "--format", "ps", "--split", str(tiny), "--solutions", str(solutions), "--out", str(out)]
    assert eval_main([*argv, "--run-dir", str(tmp_path / "log"), "--no-progress"]) == 1
    assert out.read_text() == before
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: run stopped: ") and f"{out} was left as it was" in err[-1]


def test_a_build_that_writes_replaces_the_file_keeping_its_mode(tmp_path, tiny, no_sandbox_pool, monkeypatch):
    engine = ScriptedEngine(
        Script(pseudocode={"pseudocode": "1. flip"}, concepts={"concepts": [{"title": "flip rows", "kind": "routine"}]})
    )
    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", lambda spec, **kw: choice(engine, spec or "embedded"))
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    (solutions / "a_flip.py").write_text(FLIP)
    out = tmp_path / "ps.json"
    out.write_text("{}")
    os.chmod(out, 0o640)
    argv = ["build_memory", "--format", "ps", "--split", str(tiny), "--solutions", str(solutions), "--out", str(out)]
    assert eval_main([*argv, "--run-dir", str(tmp_path / "log"), "--no-progress"]) == 0
    assert [c["title"] for c in json.loads(out.read_text())["concepts"]] == ["flip rows"]
    assert stat.S_IMODE(out.stat().st_mode) == 0o640


def test_a_second_writer_of_a_run_directory_is_refused_and_a_dead_one_s_lock_is_taken_over(tmp_path, capsys):
    import subprocess
    import sys

    from memreason.eval.harness.runs import hold_run_dir

    run = tmp_path / "run"
    run.mkdir()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys,time; from memreason.eval.harness.runs import hold_run_dir as h; "
            f"h(__import__('pathlib').Path({str(run)!r})); print('held', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        argv = ["episodic", "--level", "1", "--limit", "2", "--lm", "openai/x", "--api-base", CLOSED, "--out", str(run)]
        assert eval_main([*argv, "--no-progress"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"error: {run} is in use by process {holder.pid} on ")
        assert not (run / "config.json").exists()
    finally:
        holder.kill()
        holder.wait()
    hold_run_dir(run)  # the dead holder's lock is taken over
    assert f"process {os.getpid()} " in (run / ".lock").read_text()


def test_fail_share_states_how_many_failures_end_in_exit_1(tmp_path, monkeypatch, capsys):
    from memreason.lm.stub_server import StubServer

    monkeypatch.setenv("OPENAI_API_KEY", "x")
    codes = {}
    for share in ("1", "0.2"):
        with StubServer(latency=0, fail_rate=0.5, seed=1, faults=("server_error",), lifetime=60) as stub:
            argv = [
                "episodic",
                "--level",
                "1",
                "--limit",
                "8",
                "--lm",
                "openai/stub",
                "--api-base",
                stub.url,
                "--lm-retries",
                "0",
            ]
            codes[share] = eval_main(
                [*argv, "--fail-share", share, "--out", str(tmp_path / share), "--no-progress", "--no-report"]
            )
        failed = json.loads((tmp_path / share / "results.json").read_text())["execution"]["failed_examples"]
        assert 2 <= failed < 8  # some scenes failed, not all
    assert codes == {"1": 0, "0.2": 1}
    assert "of the 8 scenes answered failed" in capsys.readouterr().err


def test_a_build_that_abstracts_no_entry_keeps_the_memory_file_and_exits_1(tmp_path, tiny, no_sandbox_pool, monkeypatch, capsys):
    engine = ScriptedEngine(Script(pseudocode={"pseudocode": "1. flip"}, concepts={"concepts": []}))
    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", lambda spec, **kw: choice(engine, spec or "embedded"))
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    (solutions / "a_flip.py").write_text(FLIP)
    out = tmp_path / "ps.json"
    before = json.dumps({"format": "ps", "concepts": [{"title": "one", "kind": "routine"}]})
    out.write_text(before)
    argv = ["build_memory", "--format", "ps", "--split", str(tiny), "--solutions", str(solutions), "--out", str(out)]
    assert eval_main([*argv, "--run-dir", str(tmp_path / "log"), "--no-progress"]) == 1
    assert out.read_text() == before  # not replaced by an empty memory
    err = capsys.readouterr().err.strip().splitlines()
    assert "Traceback" not in "\n".join(err)
    assert err[-1].startswith("error: run stopped: 1 of 1 tasks abstracted, but into no entry") and str(out) in err[-1]
    assert (tmp_path / "log" / "examples.jsonl").read_text().strip()  # the run keeps what was answered
