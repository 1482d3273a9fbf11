"""The program process: confine itself, wait for its job, run it on each grid, report.

The worker forks this process ahead of time (so that a call does not wait for
the fork) and it locks itself down at once. Only five file descriptors
survive: 0 (/dev/null), 1 and 2 (capture pipes), 3 (the result channel) and
4 (the job channel, closed once the job is read). The job is one frame
``{"source", "limits", "grids": [[index, grid], ...]}``; then resource limits
and the audit hook go on, and the process writes frames on descriptor 3:

    {"e": "start", "i": k}                    about to call transform on grid k
    {"e": "done", "i": k, "out": grid}        transform returned a valid grid
    {"e": "done", "i": k, "fail": kind, "detail": text}
    {"e": "load_failed", "fail": kind, "detail": text}   no transform to call
    {"e": "setup_failed", "detail": text}     a promised isolation layer failed

The program can write to descriptor 3 too, or patch this module, so the
worker treats these frames as claims: it checks their order and validates
every grid. A program can only lie about its own results.
"""

from __future__ import annotations

import io
import linecache
import os
import sys
import traceback
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from . import audit, confine
from .grid import BadGrid, to_grid
from .limits import Limits
from .protocol import FrameReader, ProtocolError, read_frame, write_frame

RESULT_FD, JOB_FD = 3, 4
PROGRAM_FILENAME = "<program>"
_DETAIL_CHARS = 500
_MAX_JOB_FRAME = 1 << 28


@dataclass
class ChildSpec:
    plan: confine.Plan
    scratch: str
    streams: tuple[io.TextIOWrapper, io.TextIOWrapper]  # to become sys.stdout and sys.stderr
    audit_readable: list[str] | None  # None: no audit hook
    devnull_fd: int
    stdout_fd: int
    stderr_fd: int
    result_fd: int
    job_fd: int
    marker: bytes  # written to stdout and stderr after each grid (see capture.py)


@dataclass
class Job:
    source: str
    limits: Limits
    grids: list[tuple[int, list[list[int]]]]  # (index in the call, grid)


def main(spec: ChildSpec) -> NoReturn:
    """Entry point right after fork; never returns."""
    try:
        _lock_down(spec)
        out, err = _capture_streams(spec.streams)
    except BaseException as error:  # noqa: BLE001 - report any set-up failure, then die
        _setup_failed(error)
    try:
        message = read_frame(JOB_FD, FrameReader(_MAX_JOB_FRAME))
    except ProtocolError:
        os._exit(0)  # the worker discarded this spare process
    os.close(JOB_FD)
    job = Job(message["source"], Limits(**message["limits"]), [tuple(pair) for pair in message["grids"]])
    del message
    try:
        confine.set_rlimits(spec.plan, job.limits, len(job.grids))
    except BaseException as error:  # noqa: BLE001
        _setup_failed(error)
    if spec.audit_readable is not None:
        audit.install(spec.scratch, spec.audit_readable)
    try:
        _run(job, lambda: _end_segment(out, err, spec.marker))
    finally:
        os._exit(0)


def _lock_down(spec: ChildSpec) -> None:
    for source, target in ((spec.devnull_fd, 0), (spec.stdout_fd, 1), (spec.stderr_fd, 2)):
        os.dup2(source, target)
    # Copy both first: 3 or 4 may hold one of the originals.
    result, job = os.dup(spec.result_fd), os.dup(spec.job_fd)
    os.dup2(result, RESULT_FD)
    os.dup2(job, JOB_FD)
    os.environ.clear()
    os.chdir(spec.scratch)
    confine.lock_down(spec.plan, strict=True)
    os.closerange(JOB_FD + 1, 1 << 20)
    sys.dont_write_bytecode = True


def _setup_failed(error: BaseException) -> NoReturn:
    _emit({"e": "setup_failed", "detail": _truncate(f"{type(error).__name__}: {error}")})
    os._exit(70)


def _run(job: Job, end_segment: Callable[[], None]) -> None:
    module = types.ModuleType("program")
    module.__file__ = PROGRAM_FILENAME
    linecache.cache[PROGRAM_FILENAME] = (
        len(job.source),
        None,
        job.source.splitlines(True),
        PROGRAM_FILENAME,
    )
    try:
        code = compile(job.source, PROGRAM_FILENAME, "exec")
    except MemoryError as error:
        return _load_failed("MEMORY_LIMIT", _describe(error), end_segment)
    except Exception as error:  # SyntaxError, ValueError (null bytes), RecursionError, ...
        return _load_failed("SYNTAX_ERROR", _describe_syntax(error), end_segment)
    try:
        exec(code, module.__dict__)
    except BaseException as error:  # noqa: BLE001 - SystemExit and KeyboardInterrupt included
        return _load_failed(_kind(error), _describe(error), end_segment)
    transform = module.__dict__.get("transform")
    if not callable(transform):
        return _load_failed("NO_TRANSFORM", "the program defines no callable transform(grid)", end_segment)
    for index, grid in job.grids:
        _emit({"e": "start", "i": index})
        frame = _run_one(transform, index, grid, job.limits.max_grid_side)
        end_segment()  # this grid's output reaches the pipes before its result
        _emit(frame)


def _run_one(transform: Any, index: int, grid: list[list[int]], max_side: int) -> dict[str, Any]:
    try:
        value = transform([list(row) for row in grid])
    except BaseException as error:  # noqa: BLE001
        return {"e": "done", "i": index, "fail": _kind(error), "detail": _describe(error)}
    try:
        return {"e": "done", "i": index, "out": to_grid(value, max_side)}
    except BadGrid as error:
        return {"e": "done", "i": index, "fail": "BAD_OUTPUT", "detail": _truncate(str(error))}
    except BaseException as error:  # noqa: BLE001 - e.g. a numpy array that fails to compare
        return {"e": "done", "i": index, "fail": "BAD_OUTPUT", "detail": _describe(error)}


def _load_failed(kind: str, detail: str, end_segment: Callable[[], None]) -> None:
    end_segment()
    _emit({"e": "load_failed", "fail": kind, "detail": detail})


def _kind(error: BaseException) -> str:
    return "MEMORY_LIMIT" if isinstance(error, MemoryError) else "EXCEPTION"


def _describe(error: BaseException) -> str:
    """'Type: message (line N: source)' with the innermost line of the program itself."""
    try:
        text = f"{type(error).__name__}: {error}"
    except BaseException:  # noqa: BLE001 - a hostile __str__
        text = f"{type(error).__name__}: <unprintable>"
    try:
        lines = [line for frame, line in traceback.walk_tb(error.__traceback__) if frame.f_code.co_filename == PROGRAM_FILENAME]
        if lines:
            text += f" (line {lines[-1]}: {linecache.getline(PROGRAM_FILENAME, lines[-1]).strip()})"
    except BaseException:  # noqa: BLE001 - e.g. no memory left for a huge traceback
        pass
    return _truncate(text)


def _describe_syntax(error: Exception) -> str:
    if isinstance(error, SyntaxError):
        line = (error.text or "").strip()
        return _truncate(f"{type(error).__name__}: {error.msg} (line {error.lineno}: {line})")
    return _describe(error)


def _truncate(text: str) -> str:
    return text if len(text) <= _DETAIL_CHARS else text[: _DETAIL_CHARS - 3] + "..."


def _emit(frame: dict[str, Any]) -> None:
    write_frame(RESULT_FD, frame)


def make_streams() -> tuple[io.TextIOWrapper, io.TextIOWrapper]:
    """Line-buffered text streams on fds 1 and 2, made once by the worker for every child.

    In a child, fds 1 and 2 are the capture pipes. Making these objects before
    the fork spares each child the pages it would copy to make its own.
    """
    out, err = (
        io.TextIOWrapper(io.FileIO(fd, "w", closefd=False), encoding="utf-8", errors="backslashreplace", line_buffering=True)
        for fd in (1, 2)
    )
    return out, err


def _capture_streams(streams: tuple[io.TextIOWrapper, io.TextIOWrapper]) -> tuple[io.TextIOWrapper, io.TextIOWrapper]:
    """Make `streams` sys.stdout and sys.stderr (line-buffered: output before a timeout is kept)."""
    out, err = streams
    for name, stream in (("stdout", out), ("stderr", err)):
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)
    return out, err


def _end_segment(out: io.TextIOWrapper, err: io.TextIOWrapper, marker: bytes) -> None:
    """Flush both streams and mark the end of this grid's output on both pipes."""
    for stream, fd in ((out, 1), (err, 2)):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001 - the program may have closed or broken it
            pass
        try:
            os.write(fd, marker)
        except OSError:
            pass
