"""The isolation report: every layer listed with why it is on or off, and a required layer refused when missing (``report``)."""

from __future__ import annotations

import sys

import pytest

from memreason.sandbox import Isolation, Sandbox, SandboxError
from memreason.sandbox.report import LAYER_NAMES

from .support import assert_no_strays, isolation, snapshot

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the sandbox needs Linux")


def test_isolation_report_lists_every_layer(sandbox: Sandbox) -> None:
    report = sandbox.isolation_report()
    assert tuple(layer.name for layer in report.layers) == LAYER_NAMES
    assert all(layer.detail for layer in report.layers)
    assert "network_namespace" in str(report)
    for always in ("clean_environment", "fd_hygiene", "rlimits", "audit_hook"):
        assert report.active(always)


def test_required_layer_that_is_unknown_or_missing() -> None:
    with pytest.raises(ValueError, match="unknown isolation layers"):
        Isolation(require=frozenset({"teleportation"}))
    before, options = snapshot(), isolation(audit_hook=False, require=frozenset({"audit_hook"}))
    with pytest.raises(SandboxError, match="audit_hook"):
        Sandbox(workers=1, isolation=options)
    assert_no_strays(before, options)
