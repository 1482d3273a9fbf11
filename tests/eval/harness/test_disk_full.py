"""A full disk: one line naming what could not be written, exit 2, and the run continues once there is room.

Needs a small tmpfs, which only a process allowed to mount one can make; skipped (with the reason) elsewhere.
"""

import json
import os
import subprocess
import uuid

import pytest

import memreason.eval.cli as cli
from memreason.eval.harness.runs import comparable
from memreason.lm.stub_server import StubServer

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def small_disk(tmp_path):
    where = tmp_path / f"disk-{uuid.uuid4().hex[:6]}"
    where.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(where)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {made.stderr.strip() or made.returncode}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(disk, leave: int) -> None:
    """Fill ``disk`` but for about ``leave`` bytes."""
    stats = os.statvfs(disk)
    (disk / "filler").write_bytes(b"\0" * max(0, stats.f_bavail * stats.f_frsize - leave))


def test_a_full_disk_is_one_line_and_the_run_continues_when_there_is_room(small_disk, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    out = small_disk / "run"
    argv = ["episodic", "--level", "1", "--limit", "12", "--lm", "openai/stub", "--no-progress", "--no-report"]
    # the response cache elsewhere: the run's own files meet the full disk
    argv += ["--cache", str(tmp_path / "cache")]
    with StubServer(latency=0, fail_rate=0, lifetime=60) as stub:
        fill(small_disk, leave=8 * 4096)  # pages for the lock, the config and a few examples, not for twelve
        code = cli.main([*argv, "--api-base", stub.url, "--out", str(out)])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2
        assert len(err) == 1 and err[0].startswith("error: no space left on the device: writing ")
        assert str(out) in err[0] and "rerun the same command to continue" in err[0]
        assert not (out / "results.json").exists()
        assert 0 < len((out / "examples.jsonl").read_text().splitlines()) < 12  # stopped midway

        (small_disk / "filler").unlink()
        assert cli.main(["--resume", str(out), "--api-base", stub.url]) == 0
        assert cli.main([*argv, "--api-base", stub.url, "--out", str(tmp_path / "whole")]) == 0
    resumed = json.loads((out / "results.json").read_text())
    whole = json.loads((tmp_path / "whole" / "results.json").read_text())
    assert comparable(resumed) == comparable(whole)
