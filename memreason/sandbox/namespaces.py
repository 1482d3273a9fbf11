"""Put a freshly started worker into its own namespaces, as far as the kernel allows.

Called once per worker, by its launcher process, before it forks the fork
server. As host root no user namespace is needed (programs later switch to an
unprivileged uid); otherwise a user namespace maps the caller to root inside
it, which is what lets an unprivileged user create the other namespaces.
Each namespace that cannot be created is reported and skipped.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from . import kernel
from .report import ReportBuilder


@dataclass(frozen=True)
class Namespaces:
    host_root: bool = False  # measured before entering them (it needs /proc)
    user: bool = False
    mount: bool = False
    net: bool = False
    ipc_uts: bool = False
    pid: bool = False


def is_host_root() -> bool:
    """Root in the initial user namespace (the identity uid map), not merely root in a container."""
    if os.geteuid() != 0:
        return False
    try:
        with open("/proc/self/uid_map") as file:
            return file.read().split() == ["0", "0", "4294967295"]
    except OSError:
        return False


def enter(report: ReportBuilder) -> Namespaces:
    """Unshare user (if needed), mount, network, IPC, UTS and PID namespaces; report each."""
    host_root = is_host_root()
    user = False
    if host_root:
        report.set("user_namespace", False, "not needed: host root switches programs to an unprivileged uid")
    else:
        user = _try_user_namespace(report)

    flags = {
        "mount": kernel.CLONE_NEWNS,
        "net": kernel.CLONE_NEWNET,
        "ipc_uts": kernel.CLONE_NEWIPC | kernel.CLONE_NEWUTS,
        "pid": kernel.CLONE_NEWPID,
    }
    done: dict[str, bool] = {}
    errors: dict[str, str] = {}
    try:
        kernel.unshare(sum(flags.values()))
        done = {name: True for name in flags}
    except OSError:
        for name, flag in flags.items():
            try:
                kernel.unshare(flag)
                done[name] = True
            except OSError as error:
                done[name] = False
                errors[name] = str(error)

    if done["net"]:
        report.set("network_namespace", True, "own network namespace: no interfaces up, loopback down")
    else:
        report.set(
            "network_namespace",
            False,
            f"kernel refused ({errors['net']}); seccomp, Landlock and the audit hook still block sockets where active",
        )
    if done["ipc_uts"]:
        kernel.sethostname("sandbox")
        report.set("ipc_uts_namespace", True, "own System V IPC and hostname")
    else:
        report.set("ipc_uts_namespace", False, f"kernel refused ({errors['ipc_uts']})")
    if not done["pid"]:
        report.set("pid_namespace", False, f"kernel refused ({errors['pid']}); strays are killed by process group and uid")
    if not done["mount"]:
        report.set(
            "mount_namespace",
            False,
            f"kernel refused ({errors['mount']}); only file permissions, Landlock and the audit hook limit file access",
        )
    return Namespaces(host_root, user, done["mount"], done["net"], done["ipc_uts"], done["pid"])


def _try_user_namespace(report: ReportBuilder) -> bool:
    uid, gid = os.geteuid(), os.getegid()
    try:
        kernel.unshare(kernel.CLONE_NEWUSER)
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"0 {uid} 1")
        _write("/proc/self/gid_map", f"0 {gid} 1")
    except OSError as error:
        report.set("user_namespace", False, f"kernel refused ({error}); other namespaces need root")
        return False
    report.set("user_namespace", True, f"host uid {uid} is root only inside the worker's namespaces")
    return True


def _write(path: str, text: str) -> None:
    with open(path, "w") as file:
        file.write(text)
