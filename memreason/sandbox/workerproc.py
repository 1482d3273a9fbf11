"""Parent side of one worker: start it, hand it jobs over its pipes, stop it."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from typing import Any

from .bootstrap import BOOT, WORKER_ENV
from .limits import Isolation, Limits
from .protocol import FrameReader, ProtocolError, read_frame, write_frame
from .report import IsolationReport

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_START_TIMEOUT = 60.0
_MAX_REPLY_FRAME = 1 << 26


class WorkerFailed(Exception):
    """The worker did not answer properly; it has been killed.

    `delivered` is False when the request never reached the worker, so the
    program certainly did not run and the call may be retried elsewhere.
    """

    def __init__(self, message: str, delivered: bool = True) -> None:
        super().__init__(message)
        self.delivered = delivered


class WorkerProcess:
    """One pre-started worker. Not thread-safe: the pool lends it to one caller at a time."""

    def __init__(self, slot: int, isolation: Isolation) -> None:
        self.slot = slot
        self._host_scratch: str | None = None  # where the worker keeps scratch on the host, if it must
        self._errors = tempfile.TemporaryFile()  # the worker's own tracebacks, if any
        try:
            self._process = subprocess.Popen(
                [isolation.python, "-s", "-B", "-c", BOOT, _PACKAGE_DIR],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._errors,
                env=WORKER_ENV,
                cwd="/",
                close_fds=True,
            )
        except OSError as error:
            raise WorkerFailed(f"cannot start {isolation.python}: {error}", delivered=False) from None
        assert self._process.stdin is not None and self._process.stdout is not None
        self._to_worker, self._from_worker = self._process.stdin, self._process.stdout
        self._reader = FrameReader(_MAX_REPLY_FRAME)
        config = {"isolation": isolation.to_wire(), "slot": slot, "temp_dir": tempfile.gettempdir()}
        self.report: IsolationReport | None = None
        self._send(config)

    def wait_ready(self) -> IsolationReport:
        """Wait for the worker's hello and return its isolation report."""
        hello = self._receive(time.monotonic() + _START_TIMEOUT)
        try:
            self.report = IsolationReport.from_wire(hello["hello"])
            self._host_scratch = _checked_scratch(hello["host_scratch"])
        except (KeyError, TypeError, ValueError) as error:
            self.kill()
            raise WorkerFailed(f"bad hello from worker: {error}") from None
        return self.report

    def execute(self, source: str, grids: list[list[list[int]]], limits: Limits) -> list[dict[str, Any]]:
        """Run one job; raw outcome dicts, one per grid (validated by the caller)."""
        self._send({"source": source, "grids": grids, "limits": limits.to_wire()})
        # A grid whose process dies costs a fresh process: its load window, then the grid's.
        budget = len(grids) * (3 * limits.wall_seconds + 1.0) + 10.0
        reply = self._receive(time.monotonic() + budget)
        outcomes = reply.get("outcomes") if isinstance(reply, dict) else None
        if not isinstance(outcomes, list) or len(outcomes) != len(grids):
            self.kill()
            raise WorkerFailed("malformed reply from worker")
        return outcomes

    def stop(self, timeout: float = 5.0) -> None:
        """Ask the worker to exit (end of file on its input); kill it if it does not."""
        try:
            self._to_worker.close()
        except OSError:
            pass
        try:
            self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
        self.kill()

    def kill(self) -> None:
        """Kill the launcher; the kernel then kills the server and every program process."""
        if self._process.poll() is None:
            self._process.kill()
            self._process.wait()
        for stream in (self._to_worker, self._from_worker):
            try:
                stream.close()
            except OSError:
                pass
        if self._host_scratch is not None:
            shutil.rmtree(self._host_scratch, ignore_errors=True)

    def error_tail(self, limit: int = 2000) -> str:
        """The end of what the worker itself wrote to stderr (a traceback if it crashed)."""
        try:
            self._errors.seek(0, os.SEEK_END)
            self._errors.seek(max(0, self._errors.tell() - limit))
            return self._errors.read().decode(errors="replace").strip()
        except (OSError, ValueError):
            return ""

    @property
    def alive(self) -> bool:
        return self._process.poll() is None

    @property
    def pid(self) -> int:
        return self._process.pid

    def _send(self, message: Any) -> None:
        try:
            write_frame(self._to_worker.fileno(), message)
        except (OSError, ValueError) as error:
            self.kill()
            raise WorkerFailed(f"cannot write to worker: {error}", delivered=False) from None

    def _receive(self, deadline: float) -> Any:
        try:
            return read_frame(self._from_worker.fileno(), self._reader, deadline)
        except (OSError, ValueError, ProtocolError, TimeoutError) as error:
            self.kill()
            tail = self.error_tail()
            raise WorkerFailed(
                f"worker did not answer: {type(error).__name__}: {error}" + (f"\n{tail}" if tail else "")
            ) from None


def _checked_scratch(path: object) -> str | None:
    """The worker's host scratch directory, if the path is one this process may delete."""
    if path is None:
        return None
    if (
        not isinstance(path, str)
        or os.path.dirname(path) != tempfile.gettempdir()
        or not os.path.basename(path).startswith("sandbox-worker")
    ):
        raise ValueError(f"unexpected scratch directory {path!r}")
    return path
