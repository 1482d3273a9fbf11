"""The response cache's store under bad conditions: a store that is not a file is one line; a store another process
holds locked is waited for, said once, and given up after a timeout (module constants, shortened here) in one line,
with nothing lost."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import memreason.eval.cli as cli
import memreason.lm.response_cache as response_cache
from memreason.lm import LMConfigError
from memreason.lm.response_cache import STORE_NAME, JsonDisk

pytestmark = pytest.mark.timeout(120)

HOLD = textwrap.dedent(
    """
    import sqlite3, sys, time
    db = sqlite3.connect(sys.argv[1], isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute("BEGIN EXCLUSIVE")
    db.execute("INSERT OR REPLACE INTO responses VALUES ('held', '1')")
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
    db.execute("COMMIT")
    """
)


@pytest.fixture
def short_waits(monkeypatch):
    monkeypatch.setattr(response_cache, "LOCK_NOTICE_SECONDS", 0.3)
    monkeypatch.setattr(response_cache, "LOCK_TIMEOUT_SECONDS", 1.5)


def held(directory: Path, seconds: float) -> subprocess.Popen:
    """Another process that holds the store at ``directory`` locked for ``seconds``."""
    directory.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(directory / STORE_NAME), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout.readline().strip() == "held"
    return process


def test_a_store_that_is_a_folder_is_one_line(tmp_path):
    (tmp_path / STORE_NAME).mkdir()
    with pytest.raises(LMConfigError, match=r"responses.sqlite3 is not a file \(a folder, device or pipe\)"):
        JsonDisk(tmp_path)


def test_a_store_that_is_a_folder_stops_a_run_in_one_line_before_any_work(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    (tmp_path / "cache" / STORE_NAME).mkdir(parents=True)
    argv = ["hdr", "--level", "1", "--limit", "1", "--lm", "openai/stub", "--api-base", "http://127.0.0.1:9/v1"]
    assert cli.main([*argv, "--cache", str(tmp_path / "cache"), "--out", str(tmp_path / "run"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a file (a folder, device or pipe)" in err and "Traceback" not in err
    assert not (tmp_path / "run" / "examples.jsonl").exists()


def test_a_lock_held_a_while_is_said_once_and_the_write_lands_when_it_is_free(tmp_path, short_waits, caplog):
    disk = JsonDisk(tmp_path)
    holder = held(tmp_path, 0.8)
    with caplog.at_level(logging.WARNING, logger=response_cache.__name__):
        start = time.monotonic()
        disk.set("mine", {"answer": 1})
        disk.set("also", {"answer": 2})
    assert 0.3 < time.monotonic() - start < 1.5 and holder.wait(10) == 0
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and said[0].startswith("waiting for the response cache") and "held by another process" in said[0]
    assert disk.get("mine") == {"answer": 1} and disk.get("also") == {"answer": 2} and disk.get("held") == 1


def test_a_lock_held_too_long_is_given_up_in_one_line_and_the_store_left_alone(tmp_path, short_waits, caplog):
    disk = JsonDisk(tmp_path)
    disk.set("before", {"answer": 0})
    holder = held(tmp_path, 30)
    try:
        with caplog.at_level(logging.WARNING, logger=response_cache.__name__):
            start = time.monotonic()
            disk.set("during", {"answer": 1})  # given up after the timeout: the run goes on
            disk.set("later", {"answer": 2})  # and does not wait again
            assert disk.get("before") is None  # a miss: asked of the LM again, never a hang
        assert time.monotonic() - start < 3
    finally:
        holder.kill()
        holder.wait(10)
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 2 and said[0].startswith("waiting for the response cache")
    assert "held by another process for 1.5 s; going on without it" in said[1]
    again = JsonDisk(tmp_path)  # nothing lost: what was stored is there for the next run
    assert again.get("before") == {"answer": 0}


def test_a_store_held_too_long_when_a_run_opens_it_is_one_line(tmp_path, short_waits, monkeypatch):
    holder = held(tmp_path, 30)
    monkeypatch.setattr(JsonDisk, "_create", lambda self: self._db.execute("BEGIN IMMEDIATE"))  # a write at opening
    try:
        with pytest.raises(LMConfigError, match=r"is held by another process \(waited 1.5 s\); run again once it is free"):
            JsonDisk(tmp_path)
    finally:
        holder.kill()
        holder.wait(10)
