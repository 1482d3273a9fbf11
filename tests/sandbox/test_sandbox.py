"""The sandbox in normal use: grids in and out, each once, from many threads; a dead worker replaced; a closed sandbox
refuses work and leaves nothing behind (``sandbox``, ``workerproc``, ``protocol``, ``grid``, ``strays``).
"""

from __future__ import annotations

import os
import sys
import threading
import time

import pytest

from memreason.sandbox import Failure, Outcome, Sandbox, SandboxError

from .support import GRID, HANGING, IDENTITY, LIMITS, assert_no_strays, isolation, snapshot

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the sandbox needs Linux")


def test_numpy_programs_and_several_grids(sandbox: Sandbox) -> None:
    source = "import numpy as np\ndef transform(grid):\n    a = np.array(grid)\n    return np.rot90((a + 1) % 10)\n"
    grids = [[[1, 2], [3, 4]], [[9]], [[0, 0, 0]], [[5], [6]]]
    outcomes = sandbox.run(source, grids)
    import numpy as np

    assert [o.output for o in outcomes] == [np.rot90((np.array(g) + 1) % 10).tolist() for g in grids]
    assert all(o.ok and o.failure is None and o.detail == "" for o in outcomes)


def test_numpy_integers_in_lists_are_accepted(sandbox: Sandbox) -> None:
    source = "import numpy as np\ndef transform(g):\n    return [list(row) for row in np.array(g, dtype=np.uint8)]"
    assert sandbox.run(source, [GRID])[0].output == GRID


def test_each_grid_runs_exactly_once_even_after_a_timeout(sandbox: Sandbox) -> None:
    # Each call appends to a log in the call's scratch directory; grid [[1]] hangs.
    source = (
        "def transform(g):\n"
        "    with open('log.txt', 'a') as log:\n        log.write(str(g[0][0]))\n"
        "    if g[0][0] == 1:\n        while True:\n            pass\n"
        "    return [[len(open('log.txt').read())]]\n"
    )
    outcomes = sandbox.run(source, [[[0]], [[1]], [[2]]], HANGING)
    assert outcomes[0].output == [[1]]
    assert outcomes[1].failure is Failure.TIMEOUT
    assert outcomes[2].output == [[3]]  # grids 0, 1, 2 each ran once


def test_load_failure_applies_to_every_grid(sandbox: Sandbox) -> None:
    outcomes = sandbox.run("raise RuntimeError('boom')\ndef transform(g):\n    return g", [GRID, GRID])
    assert [o.failure for o in outcomes] == [Failure.EXCEPTION, Failure.EXCEPTION]
    assert "RuntimeError: boom" in outcomes[0].detail


def test_concurrent_calls_from_many_threads(sandbox: Sandbox) -> None:
    source = "def transform(g):\n    return [[(c + 1) % 10 for c in row] for row in g]"
    results: dict[int, list[Outcome]] = {}

    def call(k: int) -> None:
        results[k] = sandbox.run(source, [[[k % 10]]])

    threads = [threading.Thread(target=call, args=(k,)) for k in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(results[k][0].output == [[(k + 1) % 10]] for k in range(16))


def test_invalid_input_grid_is_a_caller_error(sandbox: Sandbox) -> None:
    with pytest.raises(ValueError, match="input grid 1"):
        sandbox.run(IDENTITY, [GRID, [[1, 2], [3]]])
    assert sandbox.run(IDENTITY, []) == []


def test_dead_worker_is_replaced() -> None:
    before, options = snapshot(), isolation()
    with Sandbox(workers=2, limits=LIMITS, isolation=options) as box:
        crashed = box.worker_pids()
        for pid in crashed:  # simulate crashed workers
            os.kill(pid, 9)
        time.sleep(0.1)
        assert all(box.run(IDENTITY, [GRID])[0].output == GRID for _ in range(4))
        assert not set(box.worker_pids()) & set(crashed)
    assert_no_strays(before, options)


def test_closed_sandbox_refuses_work_and_leaves_nothing_behind() -> None:
    before, options = snapshot(), isolation()
    box = Sandbox(workers=2, limits=LIMITS, isolation=options)
    assert box.run(IDENTITY, [GRID])[0].output == GRID
    box.run(
        "import os\ndef transform(g):\n    while True:\n        try:\n            os.fork()\n"
        "        except OSError:\n            pass",
        [GRID],
        HANGING,
    )
    box.close()
    box.close()
    with pytest.raises(SandboxError):
        box.run(IDENTITY, [GRID])
    assert_no_strays(before, options)
