"""The sandboxes the tests share (one for the whole folder, as the tests were once one file), and the host they guard.

One sandbox (all layers) runs the hostile corpus and the everyday tests; a second one without the audit hook shows
that the kernel layers hold on their own; a third without namespaces exercises the degraded set-up. Limits are
small so each timeout case takes about a second.
"""

from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from memreason.sandbox import Sandbox

from .support import LIMITS, SECRET_NAME, SECRET_VALUE, assert_no_strays, checked_sandbox, isolation, snapshot


@pytest.fixture(scope="package")
def host_files() -> Iterator[dict[str, Path]]:
    """Files on the host that programs try to read, change or delete."""
    directory = Path(tempfile.mkdtemp(prefix="sandbox-test-host-"))
    os.chmod(directory, 0o777)
    sentinel = directory / "sentinel.txt"
    sentinel.write_text("original")
    os.chmod(sentinel, 0o666)
    yield {"dir": directory, "sentinel": sentinel, "created": directory / "created.txt"}
    for path in directory.iterdir():
        path.unlink()
    directory.rmdir()


@pytest.fixture(scope="package")
def listener() -> Iterator[socket.socket]:
    """A TCP listener on localhost: no program may ever connect to it."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    yield server
    server.close()


@pytest.fixture(scope="package")
def sandbox() -> Iterator[Sandbox]:
    before, options = snapshot(), isolation()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(SECRET_NAME, SECRET_VALUE)  # the parent holds a secret programs must not see
        with Sandbox(workers=2, limits=LIMITS, isolation=options) as box:
            yield box
    assert_no_strays(before, options)


@pytest.fixture(scope="package")
def kernel_only_sandbox() -> Iterator[Sandbox]:
    yield from checked_sandbox(audit_hook=False)


@pytest.fixture(scope="package")
def degraded_sandbox() -> Iterator[Sandbox]:
    yield from checked_sandbox(namespaces=False)
