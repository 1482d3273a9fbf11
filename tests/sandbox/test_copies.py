"""A sandbox copies and pickles as a handle: the copy has the same settings and workers of its own, started on its
first use; the original's workers are never shared, stopped or waited on (``sandbox``)."""

from __future__ import annotations

import copy
import pickle
import sys

import pytest

from memreason.sandbox import Sandbox, SandboxError

from .support import GRID, IDENTITY, LIMITS, assert_no_strays, isolation, snapshot

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the sandbox needs Linux")

COPIES = {
    "deepcopy": copy.deepcopy,
    "copy": copy.copy,
    "pickle": lambda box: pickle.loads(pickle.dumps(box)),
}


@pytest.mark.parametrize("how", COPIES)
def test_a_copy_has_the_settings_and_workers_of_its_own_started_on_first_use(how) -> None:
    before, options = snapshot(), isolation()
    with Sandbox(workers=1, limits=LIMITS, isolation=options) as box:
        original = box.worker_pids()
        twin = COPIES[how](box)
        assert twin is not box and (twin.limits, twin.isolation) == (box.limits, box.isolation)
        assert twin.worker_pids() == []  # nothing started yet
        assert twin.run(IDENTITY, [GRID])[0].output == GRID
        assert len(twin.worker_pids()) == 1 and not set(twin.worker_pids()) & set(original)
        assert box.worker_pids() == original  # the original's workers are untouched
        box.close()
        assert twin.run(IDENTITY, [[[7]]])[0].output == [[7]]  # closing one leaves the other working
        twin.close()
        with pytest.raises(SandboxError, match="closed"):
            twin.run(IDENTITY, [GRID])
    assert_no_strays(before, options)


def test_a_copy_of_a_closed_sandbox_opens_and_a_copy_that_cannot_start_says_so_when_used() -> None:
    before, options = snapshot(), isolation()
    box = Sandbox(workers=1, limits=LIMITS, isolation=options)
    box.close()
    again = copy.deepcopy(box)
    assert again.isolation_report().active_names == box.isolation_report().active_names
    again.close()
    assert_no_strays(before, options)
    impossible = copy.deepcopy(box)
    impossible.isolation = isolation(audit_hook=False, require=frozenset({"audit_hook"}))
    with pytest.raises(SandboxError, match="required isolation layers are not active"):
        impossible.run(IDENTITY, [GRID])
    assert impossible.worker_pids() == []
