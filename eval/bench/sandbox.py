"""Checks per second of the sandbox pool against a fresh subprocess per check.

    python -m memreason.eval.bench sandbox [--seconds 3] [--rounds 3] [--workers N] [--clients M]

A check is one program on one grid: `def transform(grid): return grid` on a
3 x 3 grid, with every isolation layer the kernel allows. In the same run the
pool and the baseline take turns (so both see the same machine load): the
baseline starts `python` for every check, with as many threads as the pool
has workers, runs the same program on the same grid and prints the result as
JSON. The comparable baseline imports numpy, as the pool's workers do and as
ARC programs need; the one without numpy is shown too. Prints the rates and
the ratios, and the pool's latency for calls made one at a time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable

from memreason.sandbox import Sandbox

PROGRAM = "def transform(grid):\n    return grid\n"
GRID = [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
_BASELINE_RUNNER = (
    "import json, sys\n"
    "{imports}"
    "job = json.loads(sys.stdin.read())\n"
    "namespace = {{}}\n"
    "exec(compile(job['source'], '<program>', 'exec'), namespace)\n"
    "print(json.dumps(namespace['transform'](job['grid'])))\n"
)
GOAL_RATE, GOAL_RATIO = 300.0, 10.0


def timed(check: Callable[[], None], seconds: float, threads: int) -> tuple[int, float]:
    """(checks done, seconds taken) with `threads` threads calling `check` for about `seconds`."""
    done = [0] * threads
    stop_at = time.perf_counter() + seconds

    def loop(slot: int) -> None:
        while time.perf_counter() < stop_at:
            check()
            done[slot] += 1

    started = time.perf_counter()
    workers = [threading.Thread(target=loop, args=(slot,)) for slot in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return sum(done), time.perf_counter() - started


def _latency(check: Callable[[], None]) -> float:
    started = time.perf_counter()
    check()
    return time.perf_counter() - started


def pool_check(sandbox: Sandbox) -> Callable[[], None]:
    def check() -> None:
        outcome = sandbox.run(PROGRAM, [GRID])[0]
        if outcome.output != GRID:
            raise RuntimeError(f"pool check failed: {outcome}")

    return check


def subprocess_check(with_numpy: bool) -> Callable[[], None]:
    runner = _BASELINE_RUNNER.format(imports="import numpy\n" if with_numpy else "")
    payload = json.dumps({"source": PROGRAM, "grid": GRID})
    environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "OPENBLAS_NUM_THREADS": "1"}

    def check() -> None:
        done = subprocess.run(
            [sys.executable, "-c", runner], input=payload, capture_output=True, text=True, env=environment, check=True
        )
        if json.loads(done.stdout) != GRID:
            raise RuntimeError(f"baseline check failed: {done.stdout!r}")

    return check


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memreason.eval.bench sandbox", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="measuring time per variant")
    parser.add_argument("--rounds", type=int, default=3, help="the variants take turns this many times")
    parser.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--clients", type=int, help="calling threads for the pool (default: 2 per worker)")
    args = parser.parse_args(argv)
    clients = args.clients or 2 * args.workers
    slice_seconds = args.seconds / args.rounds

    print(
        f"sandbox benchmark: {len(os.sched_getaffinity(0))} CPUs, identity transform on a 3x3 grid, "
        f"{args.seconds:g} s per variant in {args.rounds} alternating rounds"
    )
    with Sandbox(workers=args.workers) as sandbox:
        print(f"active layers: {', '.join(sorted(sandbox.isolation_report().active_names))}")
        variants = {
            f"pool: {args.workers} workers, {clients} client threads": (pool_check(sandbox), clients),
            f"fresh python + numpy per check, {args.workers} threads": (subprocess_check(True), args.workers),
            f"fresh python per check (no numpy), {args.workers} threads": (subprocess_check(False), args.workers),
        }
        for check, _ in variants.values():
            for _ in range(3):  # warm-up: workers' spare processes, the page cache
                check()
        latencies = sorted(_latency(pool_check(sandbox)) for _ in range(200))
        counts = dict.fromkeys(variants, 0)
        elapsed = dict.fromkeys(variants, 0.0)
        for _ in range(args.rounds):
            for label, (check, threads) in variants.items():
                count, seconds = timed(check, slice_seconds, threads)
                counts[label] += count
                elapsed[label] += seconds
    rates = {label: counts[label] / elapsed[label] for label in variants}
    for label, count in counts.items():
        print(f"{label + ':':<52} {rates[label]:8.1f} checks/s ({count} checks)")
    print(
        f"{'pool latency, one call at a time:':<52} median {1e3 * latencies[100]:.2f} ms, "
        f"95th percentile {1e3 * latencies[190]:.2f} ms"
    )
    pool_rate, with_numpy, bare = rates.values()
    print(f"{'speed-up over fresh python + numpy (comparable):':<52} {pool_rate / with_numpy:8.1f}x")
    print(f"{'speed-up over fresh python without numpy:':<52} {pool_rate / bare:8.1f}x")
    met = pool_rate >= GOAL_RATE and pool_rate / with_numpy >= GOAL_RATIO
    print(f"goal (>= {GOAL_RATE:g} checks/s and >= {GOAL_RATIO:g}x the comparable baseline): {'met' if met else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
