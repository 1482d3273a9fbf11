"""What the sandbox tests share: small limits, a fresh uid range per sandbox, and checks that nothing is left behind."""

from __future__ import annotations

import itertools
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from memreason.sandbox import Isolation, Limits, Sandbox

LIMITS = Limits(cpu_seconds=1, wall_seconds=1.0, memory_mb=256, file_size_mb=1, max_processes=8, max_output_bytes=2048)
# for a program that is to be stopped by the wall clock: stopped all the same, half a second sooner
HANGING = replace(LIMITS, wall_seconds=0.5)
IDENTITY = "def transform(grid):\n    return grid\n"
GRID = [[1, 2, 3], [4, 5, 6]]
SECRET_NAME, SECRET_VALUE = "SANDBOX_TEST_SECRET", "s3cr3t-7f1d2c"
PROJECT_FILE = Path(__file__).resolve().parents[2] / "pyproject.toml"
_UID_BASES = itertools.count(62000, 100)  # each sandbox here runs programs under its own uids


def isolation(**options: Any) -> Isolation:
    return Isolation(uid_base=next(_UID_BASES), **options)


def checked_sandbox(**changes) -> Iterator[Sandbox]:
    """A one-worker sandbox with some isolation layers changed, checked for strays afterwards."""
    before, options = snapshot(), isolation(**changes)
    with Sandbox(workers=1, limits=LIMITS, isolation=options) as box:
        yield box
    assert_no_strays(before, options)


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry))
    found, stack = [], [pid]
    while stack:
        for kid in children.get(stack.pop(), []):
            found.append(kid)
            stack.append(kid)
    return found


def _uid(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def program_processes(options: Isolation) -> list[int]:
    """Processes, anywhere, running as one of this sandbox's program uids."""
    uids = range(options.uid_base, options.uid_base + 64)
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit() and _uid(int(entry)) in uids]


def _scratch_dirs() -> set[Path]:
    return set(Path(tempfile.gettempdir()).glob("sandbox-worker*"))


def snapshot() -> tuple[set[int], set[Path]]:
    """Processes and scratch directories that exist before a sandbox starts."""
    return set(_descendants(os.getpid())), _scratch_dirs()


def wait_until(condition: Callable[[], bool], seconds: float = 5.0) -> None:
    """Killed processes take a moment to be reaped."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition still false"
        time.sleep(0.02)


def assert_no_strays(before: tuple[set[int], set[Path]], options: Isolation) -> None:
    """Nothing a sandbox started may outlive it: no worker, no program, no scratch directory.

    New root-owned descendants of this process are its workers; other sandboxes
    still open hold idle program processes under their own uids, ignored here.
    """
    deadline = time.monotonic() + 5
    while True:
        workers = [pid for pid in set(_descendants(os.getpid())) - before[0] if _uid(pid) == 0]
        programs = program_processes(options)
        leftovers = _scratch_dirs() - before[1]
        if not (workers or programs or leftovers):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"left behind: workers {workers}, program processes {programs}, scratch directories {leftovers}")
        time.sleep(0.05)
