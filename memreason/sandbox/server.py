"""The fork server: prepare once (see startup.py), then serve calls from the parent.

It keeps one spare program process forked ahead, with its scratch directory.
Per call: hand the call to the spare (and the grids left after a process died
to new processes), reply with one outcome per grid, and only then reap the
processes, remove the scratch directory and fork the next spare.
"""

from __future__ import annotations

import gc
import os
import shutil
import stat
from typing import Any

from .limits import Limits
from .namespaces import Namespaces
from .program_process import Environment, ProgramProcess
from .protocol import FrameReader, ProtocolError, read_frame, write_frame
from .report import ReportBuilder
from .rootfs import SCRATCH_ROOT
from .startup import prepare

_MAX_JOB_FRAME = 1 << 28


def serve(config: dict[str, Any], spaces: Namespaces, report: ReportBuilder, control_in: int, control_out: int) -> None:
    env, scratch_root = prepare(config, spaces, report)
    on_host = scratch_root != SCRATCH_ROOT
    gc.collect()
    gc.freeze()  # program processes then copy fewer pages touched by the collector
    write_frame(control_out, {"hello": report.build().to_wire(), "host_scratch": scratch_root if on_host else None})
    reader = FrameReader(_MAX_JOB_FRAME)
    calls = 0
    spare = _spare(env, scratch_root, calls + 1)
    try:
        while True:
            try:
                job = read_frame(control_in, reader)
            except ProtocolError:
                return  # the parent closed the channel: shut down
            calls += 1
            if not spare.waiting():
                _discard(spare)
                spare = _spare(env, scratch_root, calls)
            used = [spare]
            try:
                write_frame(control_out, {"outcomes": _run_call(env, job, used)})
            finally:
                del job  # later programs inherit this process's memory: keep no earlier job alive
                for process in used:  # after replying: the parent need not wait for this
                    process.finish()
                _remove_tree(spare.scratch)
            spare = _spare(env, scratch_root, calls + 1)
    finally:
        _discard(spare)
        if on_host:
            _remove_tree(scratch_root)


def _run_call(env: Environment, job: dict[str, Any], used: list[ProgramProcess]) -> list[dict[str, Any]]:
    """Run a call on `used[0]`, then on new processes (appended) for grids left after a death."""
    limits = Limits(**job["limits"])
    pending = list(enumerate(job["grids"]))
    outcomes: dict[int, dict[str, Any]] = {}
    while True:
        outcomes.update(used[-1].run(job["source"], limits, pending))
        pending = [(index, grid) for index, grid in pending if index not in outcomes]
        if not pending:
            return [outcomes[index] for index in range(len(job["grids"]))]
        used[-1].finish()  # and whatever it left behind, before the next one starts
        used.append(ProgramProcess(env, used[0].scratch))


def _spare(env: Environment, scratch_root: str, call: int) -> ProgramProcess:
    """A program process forked ahead of call number `call`, with its scratch directory."""
    return ProgramProcess(env, _make_scratch(scratch_root, call, env.plan.uid))


def _discard(process: ProgramProcess) -> None:
    process.finish()
    _remove_tree(process.scratch)


# -- scratch directories ----------------------------------------------------


def _make_scratch(root: str, number: int, uid: int | None) -> str:
    path = os.path.join(root, f"call-{number}")
    os.mkdir(path, 0o700)
    if uid is not None:
        os.chown(path, uid, uid)
    return path


def _remove_tree(path: str) -> None:
    def make_writable_and_retry(function: Any, failed_path: str, _: Any) -> None:
        if not os.path.lexists(failed_path):
            return
        os.chmod(os.path.dirname(failed_path), stat.S_IRWXU)
        function(failed_path)

    shutil.rmtree(path, onerror=make_writable_and_retry)
