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

    A sandbox is a handle that copies and pickles by its settings (worker count,
    `limits`, `isolation`), never by its processes: `copy.deepcopy`, `copy.copy`
    and a pickle round trip give a new sandbox with the same settings, whose own
    workers start on its first `run` (or `isolation_report`). So a program
    holding a sandbox copies and pickles (DSPy's optimizers deep-copy programs),
    and each copy runs code in workers of its own: a copy never shares, stops or
    waits on the original's workers, and closing one leaves the other working,
    even a copy of a closed sandbox. A copy's workers stop at its `close()`, or
    when it is garbage-collected. The copy keeps `isolation.uid_base`: as root,
    sandboxes with the same settings running at once share their slots' uids,
    and so their process limit.
    """

    def __init__(self, workers: int | None = None, limits: Limits | None = None, isolation: Isolation | None = None) -> None:
        self.limits = limits or Limits()
        self.isolation = isolation or Isolation()
        self._workers = workers if workers is not None else default_workers()
        if self._workers < 1:
            raise ValueError("workers must be >= 1")
        self._handle()
        self._open()  # started here, so a sandbox that cannot start fails where it is made

    def _handle(self) -> None:
        """The unstarted state: no workers yet (they start in `_open`)."""
        self._lock = threading.Lock()
        self._opening = threading.Lock()  # one thread starts the workers of a copy; the others wait for them
        self._opened = False
        self._closed = False
        self._idle: queue.Queue[WorkerProcess] = queue.Queue()
        self._live: dict[int, WorkerProcess] = {}  # slot -> worker, for close()
        self._report: IsolationReport | None = None
        self._finalizer = weakref.finalize(self, _kill_all, self._live)

    def _open(self) -> None:
        """Start the workers, once (a copy's on its first use); `SandboxError` when they cannot start."""
        with self._opening:
            if self._opened:
                return
            if self._closed:
                raise SandboxError("the sandbox is closed")
            try:
                with ThreadPoolExecutor(max_workers=self._workers) as pool:
                    started = list(pool.map(self._start, range(self._workers)))
            except BaseException:
                self.close()
                raise
            self._report = started[0]
            missing = self.isolation.require - self._report.active_names
            if missing:
                self.close()
                raise SandboxError(f"required isolation layers are not active: {sorted(missing)}\n{self._report}")
            self._opened = True

    # -- copies and pickles: the settings, never the processes ----------------

    def __getstate__(self) -> dict[str, Any]:
        return {"workers": self._workers, "limits": self.limits, "isolation": self.isolation}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.limits, self.isolation, self._workers = state["limits"], state["isolation"], state["workers"]
        self._handle()  # workers start on first use

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
        if not self._opened:
            self._open()
        try:
            raw = self._execute(source, wire_grids, limits)
        except WorkerFailed as error:
            return [Outcome(None, Failure.KILLED, f"sandbox worker failed: {error}") for _ in wire_grids]
        return [_outcome(item, limits) for item in raw]

    def isolation_report(self) -> IsolationReport:
        """The layers the workers measured as active at start-up (see `report.LAYER_NAMES`)."""
        if not self._opened:
            self._open()
        return self._report

    def worker_pids(self) -> list[int]:
        """Process ids of the current workers (their launchers), for monitoring (none before a copy's first use)."""
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
