"""`Sandbox`: a thread-safe pool of pre-started workers that run untrusted programs."""

from __future__ import annotations

import queue
import threading
import weakref
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .grid import BadGrid, check_wire_grid, to_grid
from .limits import Isolation, Limits, default_workers
from .outcome import Failure, Grid, Outcome
from .report import IsolationReport
from .workerproc import WorkerFailed, WorkerProcess


class SandboxError(RuntimeError):
    """The sandbox cannot start as configured, or is closed."""


class Sandbox:
    """Run `transform` of untrusted Python source on grids, in isolated processes.

    >>> with Sandbox(workers=2) as sandbox:
    ...     outcomes = sandbox.run("def transform(g): return g", [[[1, 2]], [[3]]])
    >>> [o.output for o in outcomes]
    [[[1, 2]], [[3]]]

    `run` may be called from many threads at once; each call takes one idle
    worker (waiting for one if all are busy). A worker that stops answering is
    killed and replaced, and that call's grids fail with `Failure.KILLED`.
    """

    def __init__(self, workers: int | None = None, limits: Limits | None = None, isolation: Isolation | None = None) -> None:
        self.limits = limits or Limits()
        self.isolation = isolation or Isolation()
        count = workers if workers is not None else default_workers()
        if count < 1:
            raise ValueError("workers must be >= 1")
        self._lock = threading.Lock()
        self._closed = False
        self._idle: queue.Queue[WorkerProcess] = queue.Queue()
        self._live: dict[int, WorkerProcess] = {}  # slot -> worker, for close()
        self._finalizer = weakref.finalize(self, _kill_all, self._live)
        try:
            with ThreadPoolExecutor(max_workers=count) as pool:
                started = list(pool.map(self._start, range(count)))
        except BaseException:
            self.close()
            raise
        self._report = started[0]
        missing = self.isolation.require - self._report.active_names
        if missing:
            self.close()
            raise SandboxError(f"required isolation layers are not active: {sorted(missing)}\n{self._report}")

    # -- public API ---------------------------------------------------------

    def run(self, source: str, grids: Sequence[Any], limits: Limits | None = None) -> list[Outcome]:
        """Run `source`'s `transform` once on each grid; one `Outcome` per grid, in order.

        Grids are lists of lists of ints 0-9 (or 2-D integer numpy arrays);
        an invalid input grid raises ValueError, since it is the caller's bug.
        """
        limits = limits or self.limits
        wire_grids = [_input_grid(grid, position) for position, grid in enumerate(grids)]
        if not wire_grids:
            return []
        try:
            raw = self._execute(source, wire_grids, limits)
        except WorkerFailed as error:
            return [Outcome(None, Failure.KILLED, f"sandbox worker failed: {error}") for _ in wire_grids]
        return [_outcome(item, limits) for item in raw]

    def isolation_report(self) -> IsolationReport:
        """The layers the workers measured as active at start-up (see `report.LAYER_NAMES`)."""
        return self._report

    def worker_pids(self) -> list[int]:
        """Process ids of the current workers (their launchers), for monitoring."""
        with self._lock:
            return sorted(worker.pid for worker in self._live.values())

    def close(self) -> None:
        """Stop every worker; a `run` still in flight ends with `Failure.KILLED`. Idempotent."""
        with self._lock:
            self._closed = True
            workers = list(self._live.values())
            self._live.clear()
        for worker in workers:
            worker.stop()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- workers ------------------------------------------------------------

    def _start(self, slot: int) -> IsolationReport:
        try:
            worker = WorkerProcess(slot, self.isolation)
            with self._lock:
                self._live[slot] = worker
            report = worker.wait_ready()
        except WorkerFailed as error:
            raise SandboxError(f"sandbox worker {slot} failed to start: {error}") from None
        self._idle.put(worker)
        return report

    def _execute(self, source: str, grids: list[Grid], limits: Limits) -> list[dict[str, Any]]:
        """Run on an idle worker; where the request never reached it, retry on a fresh one."""
        for _ in range(len(self._live) + 1):
            worker = self._acquire()
            idle: WorkerProcess | None = worker  # what goes back to the pool
            try:
                return worker.execute(source, grids, limits)
            except WorkerFailed as error:
                idle = None  # never the broken one, even if no replacement starts
                idle = self._replace(worker)
                if error.delivered:
                    raise
            finally:
                self._release(idle)
        raise WorkerFailed("no worker accepted the request")

    def _acquire(self) -> WorkerProcess:
        """An idle worker, waiting for one if needed; one found dead is replaced first."""
        while True:
            if self._closed:
                raise SandboxError("the sandbox is closed")
            try:
                worker = self._idle.get(timeout=0.2)
            except queue.Empty:
                continue
            if worker.alive:
                return worker
            replacement = self._replace(worker)
            if replacement is not None:
                return replacement

    def _release(self, worker: WorkerProcess | None) -> None:
        if worker is not None and not self._closed:
            self._idle.put(worker)

    def _replace(self, broken: WorkerProcess) -> WorkerProcess | None:
        """Kill `broken` and start a worker in its slot; None once the sandbox is closed."""
        broken.kill()
        error: WorkerFailed | None = None
        for _ in range(3):
            try:
                with self._lock:
                    if self._closed:
                        return None
                    replacement = WorkerProcess(broken.slot, self.isolation)
                    self._live[broken.slot] = replacement
                replacement.wait_ready()
                return replacement
            except WorkerFailed as failure:
                error = failure
        raise SandboxError(f"worker slot {broken.slot} cannot be restarted: {error}")


def _kill_all(live: dict[int, WorkerProcess]) -> None:
    for worker in list(live.values()):
        worker.kill()


def _input_grid(grid: Any, position: int) -> list[list[int]]:
    try:
        return to_grid(grid, max_side=1 << 16)
    except BadGrid as error:
        raise ValueError(f"input grid {position} is invalid: {error}") from None


def _outcome(raw: Any, limits: Limits) -> Outcome:
    """Build an Outcome from a worker's reply, trusting nothing in it."""
    try:
        failure = None if raw["fail"] is None else Failure(raw["fail"])
        output = None if raw["out"] is None else check_wire_grid(raw["out"], limits.max_grid_side)
        if (output is None) == (failure is None):
            raise ValueError("exactly one of output and failure must be set")
        return Outcome(
            output=output,
            failure=failure,
            detail=str(raw["detail"]),
            stdout=str(raw["stdout"]),
            stderr=str(raw["stderr"]),
            seconds=float(raw["seconds"]),
        )
    except (KeyError, TypeError, ValueError) as error:
        return Outcome(None, Failure.KILLED, f"malformed outcome from worker: {error}")
