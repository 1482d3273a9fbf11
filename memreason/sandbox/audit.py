"""A Python audit hook: the second, in-interpreter layer (PEP 578).

It refuses, with PermissionError, what a grid transform has no business
doing: creating processes, any socket operation, signalling other processes,
changing resource limits, loading native code through ctypes, reading files
outside the readable tree and the scratch directory, and writing anywhere but
the scratch directory. Paths are judged lexically (symbolic links are the
kernel layers' business), and changes relative to a directory descriptor are
refused outright, which breaks ``shutil.rmtree`` even inside the scratch
directory. Audit hooks cannot be removed, but native code can bypass them;
the kernel layers are the real boundary and this hook only makes failures
earlier and clearer.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

_PROCESS_EVENTS = frozenset(
    {
        "os.exec",
        "os.fork",
        "os.forkpty",
        "os.posix_spawn",
        "os.spawn",
        "os.system",
        "pty.spawn",
        "subprocess.Popen",
        "os.startfile",
    }
)
_REFUSED_EVENTS = _PROCESS_EVENTS | frozenset(
    {
        "builtins.input",
        "ctypes.dlopen",
        "ctypes.dlsym",
        "ctypes.dlsym/handle",
        "resource.setrlimit",
        "resource.prlimit",
    }
)
_SIGNAL_EVENTS = frozenset({"os.kill", "os.killpg", "signal.pthread_kill"})
# Events that change paths: (positions of those paths, positions of dir_fd arguments).
_WRITE_PATH_EVENTS: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {
    "os.remove": ((0,), (1,)),
    "os.rmdir": ((0,), (1,)),
    "os.mkdir": ((0,), (2,)),
    "os.rename": ((0, 1), (2, 3)),
    "os.link": ((0, 1), (2, 3)),
    "os.symlink": ((1,), (2,)),
    "os.chmod": ((0,), (2,)),
    "os.chown": ((0,), (3,)),
    "os.utime": ((0,), (3,)),
    "os.truncate": ((0,), ()),
    "os.chflags": ((0,), ()),
    "os.setxattr": ((0,), ()),
    "os.removexattr": ((0,), ()),
    "shutil.rmtree": ((0,), (1,)),
}
_READ_PATH_EVENTS = frozenset({"os.listdir", "os.scandir", "glob.glob", "os.getxattr", "os.listxattr"})
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def install(scratch: str, readable: list[str]) -> None:
    sys.addaudithook(_make_hook(scratch, tuple(readable)))


def _make_hook(scratch: str, readable: tuple[str, ...]) -> Callable[[str, tuple[Any, ...]], None]:
    own_pid = os.getpid()
    readable_roots = readable + (scratch,)
    isabs, join, normpath, getcwd, fspath = (
        os.path.isabs,
        os.path.join,
        os.path.normpath,
        os.getcwd,
        os.fspath,
    )

    def inside(path: Any, roots: tuple[str, ...]) -> bool:
        if isinstance(path, int):
            return True  # an already-open descriptor
        try:
            text = os.fsdecode(fspath(path))
        except TypeError:
            return False
        absolute = normpath(text if isabs(text) else join(getcwd(), text))
        return any(absolute == root or absolute.startswith(root.rstrip("/") + "/") for root in roots)

    def refuse(event: str) -> None:
        raise PermissionError(f"sandbox: {event} is not allowed")

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event in _REFUSED_EVENTS or event.startswith("socket."):
            refuse(event)
        elif event in _SIGNAL_EVENTS:
            if args and args[0] not in (own_pid, 0) or event == "os.killpg":
                refuse(event)
        elif event == "open":
            path, mode, flags = (tuple(args) + (None, None, None))[:3]
            writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & _WRITE_FLAGS
            )
            if not inside(path, (scratch,) if writes else readable_roots):
                refuse(f"open({path!r})")
        elif event in _WRITE_PATH_EVENTS:
            paths, dir_fds = _WRITE_PATH_EVENTS[event]
            if any(i < len(args) and args[i] not in (None, -1) for i in dir_fds):
                refuse(f"{event} relative to a directory descriptor")
            if any(i < len(args) and not inside(args[i], (scratch,)) for i in paths):
                refuse(f"{event}({args[paths[0]]!r})")
        elif event in _READ_PATH_EVENTS:
            if args and args[0] is not None and not inside(args[0], readable_roots):
                refuse(f"{event}({args[0]!r})")

    return hook
