"""Watch one program process: per-grid deadlines, result frames, output capture, its end.

The watcher polls the process's result and capture pipes and its pidfd. It
accepts result frames only in the order the protocol allows (see child.py),
validates every reported grid itself, restarts the wall-clock window at each
grid, kills the process on a deadline, a protocol violation or once every grid
is reported, and turns an early death into a typed failure for the grid (or,
while loading the program, for all grids) it was busy with.
"""

from __future__ import annotations

import errno
import os
import select
import signal
import time
from typing import Any

from .capture import StreamCapture
from .grid import BadGrid, check_wire_grid
from .limits import Limits
from .protocol import FrameReader, ProtocolError

_MAX_CHILD_FRAME = 1 << 20
_KNOWN_FAILURES = {
    "SYNTAX_ERROR",
    "NO_TRANSFORM",
    "EXCEPTION",
    "TIMEOUT",
    "MEMORY_LIMIT",
    "BAD_OUTPUT",
    "KILLED",
}


class Watcher:
    """Poll loop over the child's pipes and its pidfd, with per-grid deadlines."""

    def __init__(self, pid: int, limits: Limits, indices: list[int], fds: dict[str, int], marker: bytes) -> None:
        self.pid, self.limits, self.indices, self.fds = pid, limits, indices, fds
        self.reader = FrameReader(_MAX_CHILD_FRAME)
        self.outcomes: dict[int, dict[str, Any]] = {}
        self.position = 0  # index into `indices` of the next grid expected
        self.running: int | None = None  # grid index between "start" and "done"
        self.started_at = time.monotonic()
        self.deadline = self.started_at + limits.wall_seconds
        self.captures = {name: StreamCapture(limits.max_output_bytes, marker) for name in ("out", "err")}
        self.status: int | None = None
        self.rusage: Any = None
        self.timed_out = False
        self.violation = ""

    def watch(self) -> dict[int, dict[str, Any]]:
        for fd in self.fds.values():
            os.set_blocking(fd, False)
        pidfd = _pidfd_open(self.pid)
        poller = select.poll()
        for fd in self.fds.values():
            poller.register(fd, select.POLLIN)
        if pidfd is not None:
            poller.register(pidfd, select.POLLIN)
        try:
            while self.status is None:
                if self.position >= len(self.indices) or self.violation:
                    self._kill()  # finished (or lying): no reason to let it run on
                    break
                remaining = self.deadline - time.monotonic()
                if remaining <= 0:
                    self.timed_out = True
                    self._kill()
                    break
                wait_ms = remaining * 1000 if pidfd is not None else min(remaining * 1000, 20)
                for fd, _ in poller.poll(max(1, int(wait_ms))):
                    if fd == pidfd:
                        self._reap()
                    elif self._read(fd) is False:
                        poller.unregister(fd)
                if pidfd is None:
                    self._reap(block=False)
            for fd in self.fds.values():  # what the pipes still hold after the process is gone
                while self._read(fd):
                    pass
        finally:
            if pidfd is not None:
                os.close(pidfd)
        return self._finish()

    # -- input -------------------------------------------------------------

    def _read(self, fd: int) -> bool | None:
        """Consume one chunk: True if data came, False at end of file, None if none is waiting."""
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return None
        if not chunk:
            return False
        if fd != self.fds["result"]:
            self.captures["out" if fd == self.fds["out"] else "err"].feed(chunk)
        elif not self.violation:
            try:
                for frame in self.reader.feed(chunk):
                    self._on_frame(frame)
            except ProtocolError as error:
                self.violation = f"result channel corrupted: {error}"
        return True

    def _on_frame(self, frame: Any) -> None:
        if self.violation:
            return
        kind = frame.get("e") if isinstance(frame, dict) else None
        expected = self.indices[self.position] if self.position < len(self.indices) else None
        if kind == "start" and self.running is None and frame.get("i") == expected:
            self.running = expected
            self.started_at = time.monotonic()
            self.deadline = self.started_at + self.limits.wall_seconds
        elif kind == "done" and self.running is not None and frame.get("i") == self.running:
            self._drain_captures()
            self.outcomes[self.running] = self._outcome_from_done(frame)
            self.position += 1
            self.running = None
            self.deadline = time.monotonic() + self.limits.wall_seconds
        elif kind == "load_failed" and self.running is None and self.position == 0:
            self._drain_captures()
            failure = frame.get("fail")
            detail = frame.get("detail")
            if failure not in _KNOWN_FAILURES or not isinstance(detail, str):
                self.violation = "malformed load_failed frame"
                return
            for index in self.indices:
                self.outcomes[index] = self._outcome(None, failure, detail)
            self.position = len(self.indices)
        elif kind == "setup_failed" and self.position == 0 and self.running is None:
            detail = frame.get("detail") if isinstance(frame.get("detail"), str) else ""
            for index in self.indices:
                self.outcomes[index] = self._outcome(None, "KILLED", f"sandbox set-up failed: {detail}")
            self.position = len(self.indices)
        else:
            self.violation = f"unexpected frame {str(frame)[:80]}"

    def _outcome_from_done(self, frame: dict[str, Any]) -> dict[str, Any]:
        if "out" in frame:
            try:
                grid = check_wire_grid(frame["out"], self.limits.max_grid_side)
            except BadGrid as error:
                return self._outcome(None, "BAD_OUTPUT", f"invalid grid on the result channel: {error}")
            return self._outcome(grid, None, "")
        failure, detail = frame.get("fail"), frame.get("detail")
        if failure not in _KNOWN_FAILURES or not isinstance(detail, str):
            return self._outcome(None, "KILLED", "malformed result frame")
        return self._outcome(None, failure, detail)

    # -- captures ----------------------------------------------------------

    def _drain_captures(self) -> None:
        """Collect the output already written, so that it is attributed to the right grid."""
        for name in ("out", "err"):
            for _ in range(64):  # bounded: a flooding thread must not keep us here
                try:
                    chunk = os.read(self.fds[name], 1 << 16)
                except OSError:
                    break
                if not chunk:
                    break
                self.captures[name].feed(chunk)

    def _outcome(self, output: Any, failure: str | None, detail: str) -> dict[str, Any]:
        seconds = time.monotonic() - self.started_at if self.running is not None else 0.0
        return {
            "out": output,
            "fail": failure,
            "detail": detail[:1000],
            "stdout": self.captures["out"].take(),
            "stderr": self.captures["err"].take(),
            "seconds": round(seconds, 6),
        }

    # -- ending --------------------------------------------------------------

    def _reap(self, block: bool = True) -> None:
        try:
            pid, status, rusage = os.wait4(self.pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            return
        if pid == self.pid:
            self.status, self.rusage = status, rusage

    def _kill(self) -> None:
        """Kill without waiting: the outcome no longer depends on how it ends."""
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def _finish(self) -> dict[int, dict[str, Any]]:
        if self.position >= len(self.indices):
            return self.outcomes
        failure, detail = self._death()
        if self.running is None and self.position == 0:
            pending = self.indices  # died loading the program: no grid can run
        else:
            pending = [self.running if self.running is not None else self.indices[self.position]]
        for index in pending:
            self.outcomes[index] = self._outcome(None, failure, detail)
        return self.outcomes

    def _death(self) -> tuple[str, str]:
        phase = "loading the program" if self.running is None and self.position == 0 else "running transform"
        if self.violation:
            return "KILLED", f"killed while {phase}: {self.violation}"
        if self.timed_out:
            return "TIMEOUT", f"wall-clock limit of {self.limits.wall_seconds:g}s exceeded while {phase}"
        status = self.status or 0
        if os.WIFSIGNALED(status):
            number = os.WTERMSIG(status)
            cpu = self.rusage.ru_utime + self.rusage.ru_stime if self.rusage else 0.0
            cpu_limit = self.limits.cpu_seconds * (len(self.indices) + 1)
            if number == signal.SIGXCPU or (number == signal.SIGKILL and cpu >= cpu_limit - 0.05):
                return "TIMEOUT", f"CPU-time limit of {cpu_limit}s exceeded while {phase}"
            return "KILLED", f"killed by {_signal_name(number)} while {phase}"
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
        return "KILLED", f"process exited with status {code} while {phase}, without reporting a result"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _pidfd_open(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError) as error:
        if getattr(error, "errno", None) not in (None, errno.ENOSYS, errno.EPERM):
            raise
        return None
