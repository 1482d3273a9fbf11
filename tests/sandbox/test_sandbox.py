"""The sandbox contains hostile programs, keeps serving, and cleans up after itself.

One module-scoped sandbox (all layers) runs the hostile corpus; a second one
without the audit hook shows that the kernel layers hold on their own; a third
without namespaces exercises the degraded set-up. Limits are small so the
whole file runs in a few seconds per timeout case.
"""

from __future__ import annotations

import itertools
import os
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from memreason.sandbox import Failure, Isolation, Limits, Outcome, Sandbox, SandboxError
from memreason.sandbox.report import LAYER_NAMES

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the sandbox needs Linux")

LIMITS = Limits(cpu_seconds=1, wall_seconds=1.0, memory_mb=256, file_size_mb=1, max_processes=8, max_output_bytes=2048)
# for a program that is to be stopped by the wall clock: stopped all the same, half a second sooner
HANGING = replace(LIMITS, wall_seconds=0.5)
IDENTITY = "def transform(grid):\n    return grid\n"
GRID = [[1, 2, 3], [4, 5, 6]]
SECRET_NAME, SECRET_VALUE = "SANDBOX_TEST_SECRET", "s3cr3t-7f1d2c"
PROJECT_FILE = Path(__file__).resolve().parents[2] / "pyproject.toml"
_UID_BASES = itertools.count(62000, 100)  # each sandbox here runs programs under its own uids


def isolation(**options: Any) -> Isolation:
    return Isolation(uid_base=next(_UID_BASES), **options)


# -- fixtures -------------------------------------------------------------------


@pytest.fixture(scope="module")
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


@pytest.fixture(scope="module")
def listener() -> Iterator[socket.socket]:
    """A TCP listener on localhost: no program may ever connect to it."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    yield server
    server.close()


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    before, options = _snapshot(), isolation()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(SECRET_NAME, SECRET_VALUE)  # the parent holds a secret programs must not see
        with Sandbox(workers=2, limits=LIMITS, isolation=options) as box:
            yield box
    _assert_no_strays(before, options)


def _checked_sandbox(**changes) -> Iterator[Sandbox]:
    """A one-worker sandbox with some isolation layers changed, checked for strays afterwards."""
    before, options = _snapshot(), isolation(**changes)
    with Sandbox(workers=1, limits=LIMITS, isolation=options) as box:
        yield box
    _assert_no_strays(before, options)


@pytest.fixture(scope="module")
def kernel_only_sandbox() -> Iterator[Sandbox]:
    yield from _checked_sandbox(audit_hook=False)


@pytest.fixture(scope="module")
def degraded_sandbox() -> Iterator[Sandbox]:
    yield from _checked_sandbox(namespaces=False)


# -- the hostile corpus ------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    source: str
    expected: frozenset[Failure] | None  # any of these failures; None: any outcome
    detail: str = ""  # a substring the failure detail must contain
    limits: Limits = LIMITS


def case(name: str, source: str, *expected: Failure, detail: str = "", limits: Limits | None = None) -> Case:
    """A hostile program and the failures it may end in; one that may time out runs under :data:`HANGING`."""
    return Case(name, source, frozenset(expected), detail, limits or (HANGING if Failure.TIMEOUT in expected else LIMITS))


def harmless(name: str, source: str) -> Case:
    """A program whose own outcome does not matter, only that the harness is unaffected."""
    return Case(name, source, None)


T, E, M, K, B = Failure.TIMEOUT, Failure.EXCEPTION, Failure.MEMORY_LIMIT, Failure.KILLED, Failure.BAD_OUTPUT


def corpus(files: dict[str, Path], port: int) -> list[Case]:
    sentinel, created = files["sentinel"], files["created"]
    return [
        case("infinite_loop", "def transform(g):\n    while True:\n        pass", T),
        case("busy_c_call", "def transform(g):\n    return sum(range(10**12))", T),
        case(
            "busy_numpy",
            "import numpy as np\ndef transform(g):\n    a = np.ones((1500, 1500))\n    while True:\n        a = a @ a",
            T,
        ),
        case("sleep_forever", "import time\ndef transform(g):\n    time.sleep(3600)", T),
        case("top_level_loop", "while True:\n    pass\ndef transform(g):\n    return g", T, detail="loading the program"),
        case("huge_numpy_allocation", "import numpy as np\ndef transform(g):\n    return np.zeros((10**6, 10**6))", M),
        case(
            "memory_bomb",
            "import numpy as np\ndef transform(g):\n    hog = []\n    while True:\n        hog.append(np.empty(10**7))",
            M,
        ),
        case(
            "memory_bomb_touching_pages",
            "def transform(g):\n    hog = []\n    while True:\n        hog.append(bytearray(10**8))",
            M,
            limits=replace(LIMITS, wall_seconds=10),
        ),
        case(
            "fork_bomb",
            "import os\ndef transform(g):\n    while True:\n        try:\n"
            "            os.fork()\n        except OSError:\n            pass",
            T,
            E,
        ),
        case(
            "thread_bomb",
            "import threading, time\ndef transform(g):\n    while True:\n"
            "        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()",
            E,
            M,
        ),
        case("deep_recursion", "def transform(g):\n    return transform(g)", E, detail="RecursionError"),
        case(
            "deep_recursion_no_limit",
            "import sys\nsys.setrecursionlimit(10**8)\ndef f(n):\n    return f(n + 1) + 1\ndef transform(g):\n    return f(0)",
            K,
            E,
            M,
            T,
        ),
        case("read_project_file", f"def transform(g):\n    open({str(PROJECT_FILE)!r}).read()\n    return [[1]]", E),
        case("read_etc_passwd", "def transform(g):\n    open('/etc/passwd').read()\n    return [[1]]", E),
        case("read_host_file", f"def transform(g):\n    open({str(sentinel)!r}).read()\n    return [[1]]", E),
        case(
            "list_root",
            "import os\ndef transform(g):\n    return [[int(n in os.listdir('/')) for n in ('etc', 'work', 'home', 'proc')]]",
            E,
        ),  # with the audit hook the listing itself is refused
        case("overwrite_host_file", f"def transform(g):\n    open({str(sentinel)!r}, 'w').write('pwned')", E),
        case("append_host_file", f"def transform(g):\n    open({str(sentinel)!r}, 'a').write('pwned')", E),
        case("delete_host_file", f"import os\ndef transform(g):\n    os.remove({str(sentinel)!r})", E),
        case("create_host_file", f"def transform(g):\n    open({str(created)!r}, 'x').write('x')", E),
        case("write_host_tmp", "def transform(g):\n    open('/tmp/sandbox-escape.txt', 'w').write('x')", E),
        case(
            "connect_outside", "import socket\ndef transform(g):\n    socket.create_connection(('1.1.1.1', 80), timeout=0.5)", E
        ),
        case(
            "udp_outside",
            "import socket\ndef transform(g):\n"
            "    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('8.8.8.8', 53))",
            E,
        ),
        case(
            "connect_localhost",
            f"import socket\ndef transform(g):\n    socket.create_connection(('127.0.0.1', {port}), timeout=0.5)",
            E,
        ),
        case("os_exit", "import os\ndef transform(g):\n    os._exit(0)", K, detail="without reporting"),
        case("abort", "import os\ndef transform(g):\n    os.abort()", K),
        case("sys_exit", "import sys\ndef transform(g):\n    sys.exit(3)", E, detail="SystemExit: 3"),
        case("raise_system_exit", "def transform(g):\n    raise SystemExit", E, detail="SystemExit"),
        case("keyboard_interrupt", "def transform(g):\n    raise KeyboardInterrupt", E, detail="KeyboardInterrupt"),
        case("exit_at_top_level", "import sys\nsys.exit(0)\ndef transform(g):\n    return g", E),
        harmless("kill_parent", "import os, signal\ndef transform(g):\n    os.kill(os.getppid(), signal.SIGKILL)\n    return g"),
        harmless("kill_everything", "import os, signal\ndef transform(g):\n    os.kill(-1, signal.SIGKILL)\n    return g"),
        harmless("kill_pid_1", "import os, signal\ndef transform(g):\n    os.kill(1, signal.SIGKILL)\n    return g"),
        harmless(
            "kill_own_group", "import os, signal\ndef transform(g):\n    os.killpg(os.getpgrp(), signal.SIGKILL)\n    return g"
        ),
        harmless(
            "escape_with_setsid",
            "import os, time\ndef transform(g):\n    if os.fork() == 0:\n"
            "        os.setsid()\n        if os.fork() == 0:\n            time.sleep(300)\n"
            "        os._exit(0)\n    return g",
        ),
        harmless(
            "kill_parent_by_guessing",
            "import os, signal\ndef transform(g):\n"
            "    for pid in range(2, 4096):\n        try:\n"
            "            os.kill(pid, signal.SIGKILL)\n        except OSError:\n"
            "            pass\n    return g",
        ),
        case("close_result_channel", "import os\ndef transform(g):\n    os.close(3)\n    return g", K),
        case("garbage_on_result_channel", "import os\ndef transform(g):\n    os.write(3, b'\\xff' * 64)\n    return g", K),
        case("flood_stdout_forever", "def transform(g):\n    while True:\n        print('x' * 1000)", T),
        case("return_int", "def transform(g):\n    return 5", B),
        case("return_none", "def transform(g):\n    pass", B),
        case("return_string", "def transform(g):\n    return 'abc'", B),
        case("return_floats", "def transform(g):\n    return [[1.0, 2.0]]", B),
        case("return_bools", "def transform(g):\n    return [[True, False]]", B),
        case("return_ragged", "def transform(g):\n    return [[1, 2], [3]]", B, detail="ragged"),
        case("return_out_of_range", "def transform(g):\n    return [[1, 10]]", B),
        case("return_negative", "def transform(g):\n    return [[-1]]", B),
        case("return_empty", "def transform(g):\n    return []", B),
        case("return_empty_rows", "def transform(g):\n    return [[], []]", B),
        case("return_1d", "def transform(g):\n    return [1, 2, 3]", B),
        case("return_huge", "def transform(g):\n    return [[1] * 1000] * 1000", B),
        case("return_huge_numpy", "import numpy as np\ndef transform(g):\n    return np.ones((5000, 5000), dtype=np.int8)", B),
        case("return_float_array", "import numpy as np\ndef transform(g):\n    return np.array(g) * 1.0", B),
        case("return_object_array", "import numpy as np\ndef transform(g):\n    return np.array([[1, 'a']], dtype=object)", B),
        case("return_3d_array", "import numpy as np\ndef transform(g):\n    return np.zeros((2, 2, 2), int)", B),
        case("return_list_subclass", "class L(list):\n    pass\ndef transform(g):\n    return L(g)", B),
        case("return_generator", "def transform(g):\n    return (row for row in g)", B),
        case("no_transform", "x = 1", Failure.NO_TRANSFORM),
        case("transform_not_callable", "transform = [[1]]", Failure.NO_TRANSFORM),
        case("syntax_error", "def transform(g)\n    return g", Failure.SYNTAX_ERROR, detail="line 1"),
        case("null_byte", "def transform(g):\n    return g\x00", Failure.SYNTAX_ERROR),
        case(
            "exception_detail",
            "def transform(g):\n    x = 1\n    raise ValueError('bad thing')",
            E,
            detail="ValueError: bad thing (line 3: raise ValueError('bad thing'))",
        ),
    ]


def _ids(cases: list[Case]) -> list[str]:
    return [c.name for c in cases]


_STATIC_CASES = corpus({"sentinel": Path("/x"), "created": Path("/y")}, 1)


@pytest.mark.parametrize("name", _ids(_STATIC_CASES))
def test_hostile_program_is_contained(name: str, sandbox: Sandbox, host_files, listener) -> None:
    _check_contained(sandbox, name, host_files, listener)


# Without the audit hook, which kernel layers contain each threat (any one of them suffices).
_FILES = frozenset({"mount_namespace", "landlock"})
_NETWORK = frozenset({"network_namespace", "seccomp", "landlock"})
_PROCESSES = frozenset({"pid_namespace", "privilege_drop"})
KERNEL_CASES: dict[str, frozenset[str]] = {
    "read_project_file": _FILES,
    "read_etc_passwd": _FILES,
    "read_host_file": _FILES,
    "overwrite_host_file": _FILES,
    "delete_host_file": _FILES,
    "create_host_file": _FILES,
    "connect_outside": _NETWORK,
    "udp_outside": _NETWORK,
    "connect_localhost": _NETWORK,
    "fork_bomb": _PROCESSES,
    "kill_parent": _PROCESSES,
    "kill_everything": _PROCESSES,
    "kill_own_group": _PROCESSES,
    "kill_parent_by_guessing": _PROCESSES,
    "escape_with_setsid": _PROCESSES,
    "close_result_channel": frozenset({"fd_hygiene"}),
}
DEGRADED_CASES = [
    "read_host_file",
    "overwrite_host_file",
    "connect_localhost",
    "fork_bomb",
    "kill_parent",
    "kill_parent_by_guessing",
    "escape_with_setsid",
    "memory_bomb",
    "infinite_loop",
]


@pytest.mark.parametrize("name", sorted(KERNEL_CASES))
def test_kernel_layers_contain_without_audit_hook(name: str, kernel_only_sandbox: Sandbox, host_files, listener) -> None:
    _check_contained(kernel_only_sandbox, name, host_files, listener)


@pytest.mark.parametrize("name", DEGRADED_CASES)
def test_degraded_sandbox_without_namespaces_still_contains(name: str, degraded_sandbox: Sandbox, host_files, listener) -> None:
    _check_contained(degraded_sandbox, name, host_files, listener)


def _check_contained(box: Sandbox, name: str, host_files, listener) -> None:
    """Run one hostile program: typed failure, host untouched, nothing left running, same workers."""
    needed = KERNEL_CASES.get(name, frozenset({"rlimits"}))
    if not box.isolation.audit_hook and not needed & box.isolation_report().active_names:
        pytest.skip(f"none of {sorted(needed)} is active on this kernel (see the isolation report)")
    hostile = {c.name: c for c in corpus(host_files, listener.getsockname()[1])}[name]
    workers = box.worker_pids()
    outcome = box.run(hostile.source, [GRID], hostile.limits)[0]
    _assert_contained(hostile, outcome)
    _assert_host_untouched(host_files, listener)
    _wait_until(lambda: len(_program_processes(box.isolation)) <= len(workers))  # idle spares only
    assert box.run(IDENTITY, [GRID])[0].output == GRID
    assert box.worker_pids() == workers


def test_degraded_report_says_why(degraded_sandbox: Sandbox) -> None:
    report = degraded_sandbox.isolation_report()
    for layer in ("mount_namespace", "network_namespace", "pid_namespace"):
        assert not report.active(layer)
        assert "namespaces=False" in report[layer].detail


# -- what programs see -----------------------------------------------------------------


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


# -- normal use ----------------------------------------------------------------------


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
    before, options = _snapshot(), isolation(audit_hook=False, require=frozenset({"audit_hook"}))
    with pytest.raises(SandboxError, match="audit_hook"):
        Sandbox(workers=1, isolation=options)
    _assert_no_strays(before, options)


def test_dead_worker_is_replaced() -> None:
    before, options = _snapshot(), isolation()
    with Sandbox(workers=2, limits=LIMITS, isolation=options) as box:
        crashed = box.worker_pids()
        for pid in crashed:  # simulate crashed workers
            os.kill(pid, 9)
        time.sleep(0.1)
        assert all(box.run(IDENTITY, [GRID])[0].output == GRID for _ in range(4))
        assert not set(box.worker_pids()) & set(crashed)
    _assert_no_strays(before, options)


def test_closed_sandbox_refuses_work_and_leaves_nothing_behind() -> None:
    before, options = _snapshot(), isolation()
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
    _assert_no_strays(before, options)


# -- helpers ------------------------------------------------------------------------


def _assert_contained(hostile: Case, outcome: Outcome) -> None:
    if hostile.expected is None:
        return
    if hostile.expected:
        assert outcome.failure in hostile.expected, (hostile.name, outcome)
        assert outcome.output is None
    else:
        assert outcome.ok, (hostile.name, outcome)
    assert hostile.detail in outcome.detail, (hostile.name, outcome.detail)


def _assert_host_untouched(files: dict[str, Path], listener: socket.socket) -> None:
    assert files["sentinel"].read_text() == "original"
    assert not files["created"].exists()
    assert not Path("/tmp/sandbox-escape.txt").exists()
    with pytest.raises(BlockingIOError):
        listener.accept()  # no connection ever arrived


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry))
    found, stack = [], [pid]
    while stack:
        for kid in children.get(stack.pop(), []):
            found.append(kid)
            stack.append(kid)
    return found


def _uid(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def _program_processes(options: Isolation) -> list[int]:
    """Processes, anywhere, running as one of this sandbox's program uids."""
    uids = range(options.uid_base, options.uid_base + 64)
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit() and _uid(int(entry)) in uids]


def _scratch_dirs() -> set[Path]:
    return set(Path(tempfile.gettempdir()).glob("sandbox-worker*"))


def _snapshot() -> tuple[set[int], set[Path]]:
    """Processes and scratch directories that exist before a sandbox starts."""
    return set(_descendants(os.getpid())), _scratch_dirs()


def _wait_until(condition: Callable[[], bool], seconds: float = 5.0) -> None:
    """Killed processes take a moment to be reaped."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition still false"
        time.sleep(0.02)


def _assert_no_strays(before: tuple[set[int], set[Path]], options: Isolation) -> None:
    """Nothing a sandbox started may outlive it: no worker, no program, no scratch directory.

    New root-owned descendants of this process are its workers; other sandboxes
    still open hold idle program processes under their own uids, ignored here.
    """
    deadline = time.monotonic() + 5
    while True:
        workers = [pid for pid in set(_descendants(os.getpid())) - before[0] if _uid(pid) == 0]
        programs = _program_processes(options)
        leftovers = _scratch_dirs() - before[1]
        if not (workers or programs or leftovers):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"left behind: workers {workers}, program processes {programs}, scratch directories {leftovers}")
        time.sleep(0.05)


def test_minimal_root_is_built_beside_a_python_installed_under_tmp():
    """A CI clone's virtualenv may live under /tmp: the new root must not be mounted over it."""
    from memreason.sandbox import rootfs

    readable = ["/tmp/clone/.venv/lib/python3.11/site-packages/numpy", "/usr/lib"]
    point = rootfs._new_root_mount_point(readable)
    assert not any(rootfs._inside(path, point) for path in readable)
    assert rootfs._new_root_mount_point(["/usr/lib"]) == "/tmp"
    assert not rootfs._inside("/scratchy", rootfs.SCRATCH_ROOT) and rootfs._inside("/scratch/a", "/scratch")


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
