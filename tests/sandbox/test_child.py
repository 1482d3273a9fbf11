"""What a program sees inside the sandbox: a clean environment, a private scratch directory, fresh modules, its own
output captured and bounded (``child``, ``capture``, ``startup``).
"""

from __future__ import annotations

import os
import sys

import pytest

from memreason.sandbox import Failure, Sandbox

from .support import GRID, HANGING, LIMITS, SECRET_NAME, SECRET_VALUE

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the sandbox needs Linux")


def test_environment_holds_no_secret(sandbox: Sandbox) -> None:
    source = (
        "import os\n"
        "def transform(g):\n"
        "    seen = repr(dict(os.environ))\n"
        "    for path in ('/proc/self/environ', '/proc/1/environ', '/proc/%d/environ' % os.getppid()):\n"
        "        try:\n"
        "            seen += open(path, 'rb').read().decode('latin-1')\n"
        "        except Exception:\n"
        "            pass\n"
        f"    return [[int({SECRET_VALUE!r} in seen), len(os.environ)]]\n"
    )
    assert os.environ[SECRET_NAME] == SECRET_VALUE  # the parent does hold it
    assert sandbox.run(source, [GRID])[0].output == [[0, 0]]


def test_scratch_directory_is_writable_and_private(sandbox: Sandbox) -> None:
    source = (
        "import os\n"
        "def transform(g):\n"
        "    open('notes.txt', 'w').write('kept')\n"
        "    return [[len(open('notes.txt').read()), len(os.listdir('.'))]]\n"
    )
    assert sandbox.run(source, [GRID])[0].output == [[4, 1]]
    # The next program gets a fresh, empty scratch directory.
    assert sandbox.run("import os\ndef transform(g):\n    return [[len(os.listdir('.'))]]", [GRID])[0].output == [[0]]


def test_monkey_patching_does_not_leak_into_later_programs(sandbox: Sandbox) -> None:
    patcher = (
        "import builtins, json, sys\nimport numpy as np\n"
        "builtins.len = lambda x: 0\nbuiltins.sorted = None\nnp.array = None\n"
        "json.dumps = None\nsys.modules['math'] = None\n"
        "def transform(g):\n    return g\n"
    )
    victim = (
        "import math\nimport numpy as np\n"
        "def transform(g):\n    return [[len(g), int(math.sqrt(4)), int(np.array(g).sum() % 10)]]\n"
    )
    for _ in range(3):  # on every worker; patching json may break the patcher's own report
        assert sandbox.run(patcher, [GRID])[0].failure in (None, Failure.KILLED)
    for _ in range(3):
        assert sandbox.run(victim, [GRID])[0].output == [[2, 2, 1]]


def test_closing_stdout_and_stderr_does_not_break_the_protocol(sandbox: Sandbox) -> None:
    source = (
        "import os, sys\n"
        "def transform(g):\n    sys.stdout.close()\n    sys.stderr.close()\n"
        "    for fd in (1, 2):\n        try:\n            os.close(fd)\n"
        "        except OSError:\n            pass  # closed already, by the first grid\n"
        "    return g\n"
    )
    outcomes = sandbox.run(source, [GRID, GRID])
    assert [o.output for o in outcomes] == [GRID, GRID]


def test_output_is_captured_per_grid_and_bounded(sandbox: Sandbox) -> None:
    source = (
        "import sys\nprint('loading')\n"
        "def transform(g):\n    print('grid', g[0][0])\n    print('warn', file=sys.stderr)\n"
        "    if g[0][0] == 2:\n        print('y' * 100000)\n    return g\n"
    )
    first, second = sandbox.run(source, [[[1]], [[2]]])
    assert first.stdout == "loading\ngrid 1\n" and first.stderr == "warn\n"
    assert second.stdout.startswith("grid 2\nyyy") and "more bytes dropped" in second.stdout
    assert len(second.stdout) < LIMITS.max_output_bytes + 100
    assert second.output == [[2]]


def test_flood_is_bounded(sandbox: Sandbox) -> None:
    outcome = sandbox.run("def transform(g):\n    while True:\n        print('x' * 1000)", [GRID], HANGING)[0]
    assert outcome.failure is Failure.TIMEOUT
    assert len(outcome.stdout) < LIMITS.max_output_bytes + 100
