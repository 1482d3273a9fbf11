"""Worker side of one program process: fork it ahead of its call, feed it, reap it.

A `ProgramProcess` is forked (in a fresh PID namespace when the worker has
one) before its call arrives and locks itself down while it waits. `run`
hands it a call's grids and, through a `Watcher`, returns an outcome for at
least one of them: every grid it reported, plus the grid it was busy with
when it died or timed out. The worker runs the remaining grids in a new
process, so each grid is handed to `transform` exactly once. `finish` reaps
the process; the worker calls it after replying, off the critical path.
"""

from __future__ import annotations

import io
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import child, kernel
from .confine import Plan
from .limits import Limits
from .protocol import write_frame
from .watcher import Watcher


@dataclass
class Environment:
    """What the worker fixed at start-up and every program process needs."""

    plan: Plan
    streams: tuple[io.TextIOWrapper, io.TextIOWrapper]  # on fds 1 and 2 (see child._capture_streams)
    audit_readable: list[str] | None
    devnull_fd: int
    pid_namespace_fd: int | None  # the worker's own PID namespace, to return to after forking
    kill_strays: Callable[[int], None]  # (child pid) -> None, for set-ups without a PID namespace


class ProgramProcess:
    """A forked, locked-down process waiting for one call (see child.py)."""

    def __init__(self, env: Environment, scratch: str) -> None:
        self.env, self.scratch = env, scratch
        job_r, self._job_w = os.pipe()
        result_r, result_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        self._marker = b"\0sandbox-" + os.urandom(12).hex().encode() + b"\0"
        spec = child.ChildSpec(
            env.plan, scratch, env.streams, env.audit_readable, env.devnull_fd, out_w, err_w, result_w, job_r, self._marker
        )
        self.pid = _fork_in_new_pid_namespace(env.pid_namespace_fd)
        if self.pid == 0:
            for fd in (self._job_w, result_r, out_r, err_r):
                os.close(fd)
            child.main(spec)
        for fd in (job_r, result_w, out_w, err_w):
            os.close(fd)
        self._fds = {"result": result_r, "out": out_r, "err": err_r}
        self._reaped = self._finished = False

    def waiting(self) -> bool:
        """Still alive and waiting for its call (a spare that died is useless)."""
        try:
            pid, _ = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == self.pid:
            self._reaped = True
            return False
        return True

    def run(self, source: str, limits: Limits, grids: list[tuple[int, Any]]) -> dict[int, dict[str, Any]]:
        """Hand over the grids and watch; the process is killed or gone when this returns."""
        try:
            write_frame(self._job_w, {"source": source, "limits": limits.to_wire(), "grids": grids})
        except OSError:
            pass  # it died already: the watcher tells how
        os.close(self._job_w)
        self._job_w = -1
        watcher = Watcher(self.pid, limits, [index for index, _ in grids], self._fds, self._marker)
        outcomes = watcher.watch()
        self._reaped = self._reaped or watcher.status is not None
        return outcomes

    def finish(self) -> None:
        """Kill it if needed, reap it, close its pipes and kill anything it left behind."""
        if self._finished:
            return
        self._finished = True
        if not self._reaped:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass
            self._reaped = True
        for fd in (*self._fds.values(), self._job_w):
            if fd >= 0:
                os.close(fd)
        self._fds, self._job_w = {}, -1
        self.env.kill_strays(self.pid)


def _fork_in_new_pid_namespace(namespace_fd: int | None) -> int:
    if namespace_fd is None:
        return os.fork()
    kernel.unshare(kernel.CLONE_NEWPID)  # the next child becomes PID 1 of a new namespace
    try:
        pid = os.fork()
    except BaseException:
        kernel.setns(namespace_fd, kernel.CLONE_NEWPID)
        raise
    if pid != 0:
        kernel.setns(namespace_fd, kernel.CLONE_NEWPID)  # later children: back to ours
    return pid
