"""The minimal root the sandbox mounts (``rootfs``)."""

from __future__ import annotations

import sys

import pytest

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the sandbox needs Linux")


def test_minimal_root_is_built_beside_a_python_installed_under_tmp():
    """A CI clone's virtualenv may live under /tmp: the new root must not be mounted over it."""
    from memreason.sandbox import rootfs

    readable = ["/tmp/clone/.venv/lib/python3.11/site-packages/numpy", "/usr/lib"]
    point = rootfs._new_root_mount_point(readable)
    assert not any(rootfs._inside(path, point) for path in readable)
    assert rootfs._new_root_mount_point(["/usr/lib"]) == "/tmp"
    assert not rootfs._inside("/scratchy", rootfs.SCRATCH_ROOT) and rootfs._inside("/scratch/a", "/scratch")
