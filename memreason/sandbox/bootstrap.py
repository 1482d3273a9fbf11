"""First code a worker process runs: the launcher.

The parent starts `python -s -B -c BOOT <programs dir>` in / with a fixed,
minimal environment and only three descriptors. The launcher moves its control
pipes out of the way, reads its configuration, enters new namespaces and forks
the fork server, which becomes PID 1 of the worker's PID namespace (so that
every process of the worker dies with it). The launcher only waits: when the
parent kills it, the server gets SIGKILL (parent-death signal), and the
kernel then kills everything in the namespace.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback

from . import kernel, namespaces
from .descriptors import high_fd
from .protocol import FrameReader, read_frame
from .report import ReportBuilder

#: The code given to `python -c`: import this module without running the `__init__.py` of
#: `memreason` (DSPy) or of this package (the parent-side API, which imports `threading`:
#: its at-fork hook alone would cost every program process ~130 page faults).
BOOT = (
    "import sys, types; sys.path[:] = [p for p in sys.path if p]\n"
    "for name, path in (('memreason', sys.argv[1]), ('memreason.sandbox', sys.argv[1] + '/sandbox')):\n"
    "    sys.modules[name] = types.ModuleType(name); sys.modules[name].__path__ = [path]\n"
    "from memreason.sandbox.bootstrap import main; main()"
)
#: The whole environment of a worker (programs get an empty one).
WORKER_ENV = {
    "PATH": "/usr/bin:/bin",
    "LC_ALL": "C.UTF-8",
    "PYTHONHASHSEED": "0",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}
_MAX_CONFIG_FRAME = 1 << 20


def main() -> None:
    control_in, control_out = high_fd(os.dup(0)), high_fd(os.dup(1))
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):  # 2 stays: the parent's log of worker tracebacks
        os.dup2(devnull, fd)
    os.close(devnull)
    config = read_frame(control_in, FrameReader(_MAX_CONFIG_FRAME))

    report = ReportBuilder()
    if config["isolation"]["namespaces"]:
        spaces = namespaces.enter(report)
    else:
        spaces = namespaces.Namespaces(host_root=namespaces.is_host_root())
        for layer in ("user_namespace", "mount_namespace", "network_namespace", "ipc_uts_namespace", "pid_namespace"):
            report.set(layer, False, "disabled by Isolation(namespaces=False)")

    server_pid = os.fork()
    if server_pid == 0:
        kernel.prctl(kernel.PR_SET_PDEATHSIG, signal.SIGKILL)
        try:
            from .server import serve  # imported here: the launcher stays small

            serve(config, spaces, report, control_in, control_out)
        except BaseException:  # noqa: BLE001 - the parent shows this with WorkerFailed
            traceback.print_exc()
            os._exit(1)
        os._exit(0)
    os.close(control_in)
    os.close(control_out)
    _, status = os.waitpid(server_pid, 0)
    sys.exit(os.waitstatus_to_exitcode(status) & 0xFF)
