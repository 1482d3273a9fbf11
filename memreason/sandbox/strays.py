"""Without a PID namespace: kill whatever a finished program process left behind.

The worker makes itself a child subreaper, so that orphans of its program
processes are re-parented to it instead of to init. After a program process
has been reaped, `kill_strays` kills its process group, then (where programs
run under a uid of their own) every process of that uid, then every child
the worker still has, which can only be such an orphan: setsid() or a double
fork escapes the first two, never the last. With a PID namespace none of
this is needed: the kernel kills a namespace with its first process.
"""

from __future__ import annotations

import os
import signal

from . import kernel

_PR_SET_CHILD_SUBREAPER = 36
_ROUNDS = 100  # strays may fork while being killed; each round kills all it sees


def become_subreaper() -> None:
    kernel.prctl(_PR_SET_CHILD_SUBREAPER, 1)


def kill_strays(process_group: int, uid: int | None) -> None:
    try:
        os.killpg(process_group, signal.SIGKILL)
    except OSError:
        pass
    if uid is not None:
        _kill_uid(uid)
    for _ in range(_ROUNDS):
        children = _children()
        if not children:
            return
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in children:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def _kill_uid(uid: int) -> None:
    """Every process of `uid`, via a helper that takes that uid (kill(-1) spares the caller)."""
    helper = os.fork()
    if helper == 0:
        try:
            os.setresuid(uid, uid, uid)
            os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    os.waitpid(helper, 0)


def _children() -> list[int]:
    """This process's live children, from /proc (empty where /proc cannot tell)."""
    try:
        with open(f"/proc/self/task/{os.getpid()}/children") as file:
            return [int(pid) for pid in file.read().split()]
    except OSError:
        return []
