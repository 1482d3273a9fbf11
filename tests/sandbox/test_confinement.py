"""The sandbox contains hostile programs: the corpus on every layer, on the kernel layers alone, and without namespaces
(``confine``, ``namespaces``, ``landlock``, ``seccomp``, ``audit``, ``limits``).
"""

from __future__ import annotations

import socket
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from memreason.sandbox import Failure, Limits, Outcome, Sandbox

from .support import GRID, HANGING, IDENTITY, LIMITS, PROJECT_FILE, program_processes, wait_until

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the sandbox needs Linux")


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
    wait_until(lambda: len(program_processes(box.isolation)) <= len(workers))  # idle spares only
    assert box.run(IDENTITY, [GRID])[0].output == GRID
    assert box.worker_pids() == workers


def test_degraded_report_says_why(degraded_sandbox: Sandbox) -> None:
    report = degraded_sandbox.isolation_report()
    for layer in ("mount_namespace", "network_namespace", "pid_namespace"):
        assert not report.active(layer)
        assert "namespaces=False" in report[layer].detail


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
