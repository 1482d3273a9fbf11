"""Many descriptors held by the caller (``descriptors``: channels waited on with poll, not select)."""

from __future__ import annotations

import os
import sys

import pytest

from memreason.sandbox import Sandbox

from .support import LIMITS

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the sandbox needs Linux")


def test_a_caller_holding_more_than_1024_descriptors_can_start_and_use_a_sandbox():
    """Channels are waited on with poll: select() refuses descriptors numbered 1024 and up."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1200:
        pytest.skip(f"RLIMIT_NOFILE is {soft}: cannot hold 1200 descriptors")
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        with Sandbox(workers=1, limits=LIMITS) as fresh:
            [outcome] = fresh.run("def transform(g):\n    return g", [[[1, 2]]])
            assert outcome.output == [[1, 2]]
    finally:
        for fd in held:
            os.close(fd)
