"""Resuming a run: finished examples are kept, memory is restored, results equal an uninterrupted run's."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import memreason.eval.cli as cli
from memreason.datasets.experience_transfer import make_level
from memreason.eval.experience_transfer.run import ExperienceTransferConfig, evaluate_experience_transfer
from memreason.eval.harness.resume import RunDirError, read_examples, resumed_program
from memreason.eval.harness.runs import comparable
from memreason.lm import LMChoice, ScriptedEngine
from memreason.lm.stub_server import StubServer
from tests.helpers.scripted_answers import oracle_counter

ROOT = Path(__file__).resolve().parents[3]


def lines(out):
    return [json.loads(line) for line in (out / "examples.jsonl").read_text().splitlines()]


def drop_last(out, n):
    """Pretend the process died before its last ``n`` examples were written."""
    path = out / "examples.jsonl"
    kept = path.read_text().splitlines(keepends=True)[:-n]
    path.write_text("".join(kept))


def results(out):
    return json.loads((out / "results.json").read_text())


# -- the examples file ---------------------------------------------------------------------------


def test_a_torn_last_line_is_cut_off_and_a_damaged_one_is_an_error(tmp_path):
    path = tmp_path / "examples.jsonl"
    good = [json.dumps({"run": 0, "id": f"s{i}", "correct": True}) + "\n" for i in range(3)]
    path.write_text("".join(good) + '{"run": 0, "id": "s3", "corr')
    assert sorted(read_examples(path)) == [(0, "s0"), (0, "s1"), (0, "s2")]
    assert path.read_text() == "".join(good)  # the next append starts on a fresh line

    path.write_text("".join(good) + json.dumps({"run": 0, "id": "s3"}))  # whole, newline missing
    assert len(read_examples(path)) == 4 and path.read_text().endswith("}\n")

    path.write_text(good[0] + "garbage\n" + good[1])
    with pytest.raises(RunDirError, match="line 2"):
        read_examples(path)


# -- the harness, with scripted engines ------------------------------------------------------------


class Counting:
    """A scripted memory LM and task LM; the program builds its memory with one memory call."""

    def __init__(self):
        self.memory = ScriptedEngine(lambda call: {"reflection": "squares are odd"})
        self.task = ScriptedEngine(oracle_counter())

    def evaluate(self, out, **config):
        config = ExperienceTransferConfig(program="reflexion_all", level=1, **{"limit": 8, **config})
        task, memory = (LMChoice("scripted", e.lm(), local=False) for e in (self.task, self.memory))
        return evaluate_experience_transfer(config, task=task, memory=memory, run_dir=out, progress=False)


def test_a_resumed_run_restores_its_memory_and_answers_only_what_is_missing(tmp_path):
    lms, out = Counting(), tmp_path / "run"
    first = lms.evaluate(out)
    assert len(lms.memory.calls) == 1 and len(lms.task.calls) == 8
    drop_last(out, 3)
    with open(out / "examples.jsonl", "a") as handle:
        handle.write('{"run": 0, "id": "L1-s0')  # and tore the line it was writing
    again = lms.evaluate(out)
    assert len(lms.memory.calls) == 1  # restored from memory-run0.json, not rebuilt
    assert len(lms.task.calls) == 8 + 3  # only the three missing scenes
    assert [r["id"] for r in lines(out)] == [r["id"] for r in lines(out)][:5] + [s.id for s in make_level(1).test[5:8]]
    assert comparable(again) == comparable(first)
    assert again["tokens"]["memory"]["calls"] == 1 and again["execution"]["resumed_examples"] == 5


def test_a_resumed_runs_wall_time_counts_every_process_of_the_run(tmp_path):
    lms, out = Counting(), tmp_path / "run"
    first = lms.evaluate(out)
    assert first["execution"]["processes"] == 1 and first["wall_seconds"] == first["execution"]["wall_seconds"]
    drop_last(out, 3)
    again = lms.evaluate(out)
    [before, this] = [json.loads(line)["seconds"] for line in (out / "processes.jsonl").read_text().splitlines()]
    assert 0 < before <= first["execution"]["wall_seconds"] and again["execution"]["processes"] == 2
    assert again["wall_seconds"] == pytest.approx(before + again["execution"]["wall_seconds"], abs=0.02)
    assert again["execution"]["wall_seconds"] >= this


def test_a_finished_run_is_read_back_without_any_call(tmp_path):
    lms, out = Counting(), tmp_path / "run"
    first = lms.evaluate(out, runs=2)
    calls = (len(lms.memory.calls), len(lms.task.calls))
    assert comparable(lms.evaluate(out, runs=2)) == comparable(first)
    assert (len(lms.memory.calls), len(lms.task.calls)) == calls


# -- the CLI ----------------------------------------------------------------------------------------


@pytest.fixture
def scripted_cli(monkeypatch):
    engine = ScriptedEngine(oracle_counter())
    monkeypatch.setattr(
        "memreason.eval.harness.lms.resolve_lm", lambda spec, **kw: LMChoice(spec or "embedded", engine.lm(), local=False)
    )
    return engine


def test_rerunning_into_the_same_out_continues_and_resume_reads_the_saved_config(tmp_path, scripted_cli):
    out = tmp_path / "run"
    argv = ["episodic_cot", "--level", "2", "--limit", "6", "--out", str(out), "--no-progress", "--no-report"]
    assert cli.main(argv) == 0
    first = results(out)
    drop_last(out, 2)
    assert cli.main(argv) == 0 and len(scripted_cli.calls) == 6 + 2
    drop_last(out, 3)
    assert cli.main(["--resume", str(out), "--threads", "3", "--no-progress", "--no-report"]) == 0
    assert len(scripted_cli.calls) == 6 + 2 + 3
    assert len(lines(out)) == 6 and comparable(results(out)) == comparable(first)
    assert results(out)["execution"]["threads"] == 3


@pytest.mark.parametrize(
    "argv, message",
    [
        (["episodic_cot", "--level", "2", "--limit", "4"], "another config (level 1 != 2)"),
        (["episodic_cot", "--level", "1", "--limit", "5"], "limit 4 != 5"),
        (["hdr", "--level", "1", "--limit", "4"], "program 'episodic_cot' != 'hdr'"),
    ],
)
def test_a_different_config_in_an_existing_run_dir_is_one_line_and_exit_2(tmp_path, scripted_cli, capsys, argv, message):
    out = tmp_path / "run"
    assert cli.main(["episodic_cot", "--level", "1", "--limit", "4", "--out", str(out), "--no-progress", "--no-report"]) == 0
    before = (out / "examples.jsonl").read_text()
    capsys.readouterr()
    assert cli.main([*argv, "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert (out / "examples.jsonl").read_text() == before


@pytest.mark.parametrize(
    "extra, message",
    [(["--limit", "9"], "--resume takes the run's own config; drop --limit"), ([], "no such run directory")],
)
def test_resume_errors_are_one_line(tmp_path, scripted_cli, capsys, extra, message):
    out = tmp_path / "run"
    if extra:
        assert cli.main(["episodic", "--level", "1", "--limit", "2", "--out", str(out), "--no-progress", "--no-report"]) == 0
    capsys.readouterr()
    assert cli.main(["--resume", str(out), *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_another_harness_s_run_dir_is_refused_in_one_line(tmp_path, scripted_cli, capsys):
    arc_run = tmp_path / "arc"
    arc_run.mkdir()
    (arc_run / "config.json").write_text(json.dumps({"program": "arcmemo_ps", "split": "val100"}))
    assert cli.main(["hdr", "--resume", str(arc_run)]) == 2  # an Experience-Transfer command given an ARC run
    err = capsys.readouterr().err
    assert "holds a run of arcmemo_ps, not an Experience-Transfer run" in err and err.count("\n") == 1


def test_python_m_eval_resume_routes_by_the_saved_program(tmp_path):
    arc_run = tmp_path / "arc"
    arc_run.mkdir()
    (arc_run / "config.json").write_text(json.dumps({"program": "arcmemo_ps"}))
    assert resumed_program(["--resume", str(arc_run), "--threads", "2"]) == "arcmemo_ps"
    assert resumed_program([f"--resume={arc_run}"]) == "arcmemo_ps"
    assert resumed_program(["--resume", str(tmp_path / "missing")]) is None
    assert resumed_program(["hdr", "--resume", str(arc_run)]) is None  # a named program decides the route itself
    # end to end: the ARC CLI answers (its own one-line error), not the Experience-Transfer one
    done = subprocess.run(
        [sys.executable, "-m", "eval", "--resume", str(arc_run), "--out", str(tmp_path / "x")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == "error: --resume continues RUN_DIR in place: leave out --out"


# -- killed for real, against the faulty stub server ------------------------------------------------


STUB = dict(latency=0.1, fail_rate=0.2, seed=11, hang=6.0, lifetime=180)


def signal_after(process: subprocess.Popen, examples: Path, n: int, sig: int) -> None:
    """Send ``sig`` to a run once its ``examples`` file holds ``n`` lines, the run still going."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        if examples.exists() and examples.read_text().count("\n") >= n:
            break
        time.sleep(0.02)
    assert process.poll() is None, "the run ended before the signal could be sent"
    process.send_signal(sig)


def test_sigkill_mid_run_then_resume_equals_an_uninterrupted_run(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "stub-key")
    scenes = make_level(1).test[:40]

    def argv(stub, out):
        return [
            "episodic",
            "--level",
            "1",
            "--limit",
            "40",
            "--threads",
            "4",
            "--lm",
            "openai/stub",
            "--api-base",
            stub.url,
            "--out",
            str(out),
            "--backoff",
            "0.01",
            "--lm-timeout",
            "3.0",
            "--no-progress",
            "--no-report",
        ]

    def served_scenes(stub):
        return [s.id for r in stub.stats()["requests"] for s in scenes if s.text() in r["user"]]

    killed = tmp_path / "killed"
    # answers take 0.1 s (40 scenes on 4 threads: a second of run, time to kill it midway), hung ones 6 s:
    # the 3 s timeout tells them apart. 1 s was not room enough in a long test session (the stub serves from
    # this process, so a pause here delays its answers): a late answer counted as a timeout, its retry drew
    # another fault, and the resumed and uninterrupted runs' fault counts differed
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    with StubServer(**STUB) as first:
        process = subprocess.Popen(
            [sys.executable, "-m", "eval", *argv(first, killed)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            signal_after(process, killed / "examples.jsonl", 8, signal.SIGKILL)
        finally:
            process.kill()
            process.wait()
    finished = {r["id"] for r in lines(killed)}
    assert 8 <= len(finished) < 40 and not (killed / "results.json").exists()

    with StubServer(**STUB) as second:
        assert cli.main(["--resume", str(killed), "--api-base", second.url]) == 0
        asked_again = served_scenes(second)
    assert not finished & set(asked_again)  # no second request for a finished example
    unfinished = {s.id for s in scenes} - finished
    assert len(unfinished) - 4 <= len(set(asked_again))  # all but those in flight (4 threads), whose answers may be cached

    with StubServer(**STUB) as third:
        assert cli.main(argv(third, tmp_path / "whole")) == 0
    resumed, whole = results(killed), results(tmp_path / "whole")
    assert comparable(resumed) == comparable(whole)
    assert sum(whole["faults"].values()) > 0  # the comparison covers faults and retries too
    assert sorted(r["id"] for r in lines(killed)) == sorted(s.id for s in scenes)


def test_switching_response_caches_closes_the_previous_one(tmp_path):
    import dspy

    from memreason.eval.harness.runs import use_response_cache

    use_response_cache(tmp_path / "first")
    first = dspy.cache
    use_response_cache(tmp_path / "first")
    assert dspy.cache is first  # the same directory keeps the open cache
    before = len(os.listdir("/proc/self/fd"))
    for i in range(3):  # an open cache holds some 48 descriptors (16 SQLite shards)
        use_response_cache(tmp_path / f"cell{i}")
        dspy.cache.put({"model": "m", "i": i}, "answer")
    assert len(os.listdir("/proc/self/fd")) - before < 20  # one open cache's worth, not three
    assert dspy.cache.disk_cache_dir == str((tmp_path / "cell2").resolve())


def test_sigterm_stops_a_run_as_ctrl_c_does_and_says_how_to_continue(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "stub-key")
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    with StubServer(latency=0.1, seed=11, lifetime=120) as stub:
        argv = ["episodic", "--level", "1", "--limit", "12", "--threads", "2", "--lm", "openai/stub"]
        argv += ["--api-base", stub.url, "--out", str(out), "--no-progress", "--no-report"]
        process = subprocess.Popen(
            [sys.executable, "-m", "eval", *argv], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        try:
            signal_after(process, out / "examples.jsonl", 4, signal.SIGTERM)
            _, stderr = process.communicate(timeout=60)
        finally:
            process.kill()
        assert process.returncode == 143, stderr[-2000:]
        assert stderr.strip().splitlines()[-1] == "terminated; rerun the same command to continue"
        kept = len(lines(out))
        assert 4 <= kept < 12
        assert cli.main(["--resume", str(out), "--api-base", stub.url]) == 0
    assert len(lines(out)) == 12
    # the stopped process noted its time, and the run's wall time counts both processes
    noted = [json.loads(line)["seconds"] for line in (out / "processes.jsonl").read_text().splitlines()]
    done = results(out)
    assert len(noted) == 2 and noted[0] > 0 and done["execution"]["processes"] == 2
    assert done["wall_seconds"] == pytest.approx(noted[0] + done["execution"]["wall_seconds"], abs=0.02)


def test_a_second_ctrl_c_stops_a_run_without_waiting_for_the_scenes_in_progress(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "stub-key")
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    with StubServer(latency=8, seed=11, lifetime=300) as stub:  # no answer comes before both interrupts
        argv = ["episodic", "--level", "1", "--limit", "4", "--threads", "2", "--lm", "openai/stub"]
        argv += ["--api-base", stub.url, "--out", str(out), "--no-progress", "--no-report"]
        process = subprocess.Popen(
            [sys.executable, "-m", "eval", *argv],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # a shell's background job ignores Ctrl-C
        )
        try:
            deadline = time.monotonic() + 240  # a busy machine may take a while to start the run
            while len(stub.stats()["requests"]) < 2 and time.monotonic() < deadline and process.poll() is None:
                time.sleep(0.02)
            assert len(stub.stats()["requests"]) == 2, "the run did not start two scenes"  # both in progress
            process.send_signal(signal.SIGINT)
            said = process.stderr.readline()
            while said and not said.startswith("stopping;"):
                said = process.stderr.readline()
            process.send_signal(signal.SIGINT)
            rest = process.communicate(timeout=60)[1]
        finally:
            process.kill()
        assert said.strip() == (
            "stopping; scenes in progress: 2, which finish first and are kept "
            "(interrupt again to stop now: they are then done again when the run continues)"
        )
        assert process.returncode == 130, rest[-2000:]
        assert rest.strip().splitlines()[-1] == "interrupted; rerun the same command to continue"
        assert not (out / "examples.jsonl").exists() or lines(out) == []  # it did not wait for the two
    with StubServer(latency=0.05, seed=11, lifetime=120) as stub:
        assert cli.main(["--resume", str(out), "--api-base", stub.url]) == 0
    assert len(lines(out)) == 4
