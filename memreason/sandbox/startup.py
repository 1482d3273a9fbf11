"""Worker start-up: decide and probe every layer, once, before serving programs.

`prepare` imports the preloaded modules, pivots into the minimal root where
the worker has a mount namespace, chooses how programs drop privileges, builds
the Landlock ruleset and the seccomp filter, and forks a probe process that
applies the per-program layers, so that the isolation report states what
this kernel actually enforces. Layers the probe saw fail are not promised.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from typing import Any

from . import child, confine, kernel, landlock, rootfs, seccomp, strays
from .descriptors import high_fd
from .limits import Limits
from .namespaces import Namespaces
from .program_process import Environment
from .protocol import FrameReader, ProtocolError, encode, read_frame
from .report import ReportBuilder

_NPROC_HEADROOM = 64  # for the user's other activity, where programs share its uid


def prepare(config: dict[str, Any], spaces: Namespaces, report: ReportBuilder) -> tuple[Environment, str]:
    """Set the worker up; return what program processes need and the scratch root directory."""
    isolation = config["isolation"]
    report.set(
        "clean_environment",
        True,
        "programs start with an empty environment; the worker "
        "was started with a fixed minimal one and no parent memory (fresh interpreter)",
    )
    report.set("fd_hygiene", True, "programs hold only stdin=/dev/null, two capture pipes and their result pipe")
    for name in isolation["preload"]:
        importlib.import_module(name)  # a missing module is a configuration error: fail loudly
    readable = rootfs.readable_paths(isolation["importable"])
    tasks_of_uid = None if spaces.host_root or spaces.user else _tasks_of_this_uid()  # needs /proc
    pid_namespace_fd = high_fd(os.open("/proc/self/ns/pid", os.O_RDONLY)) if spaces.pid else None
    if spaces.pid:
        report.set(
            "pid_namespace",
            True,
            "each program is PID 1 of its own PID namespace inside the "
            "worker's: it sees no other process and all its processes die with it",
        )
    plan = confine.Plan(
        base_address_space=confine.address_space_now() + 32 * (1 << 20),
        last_cap=kernel.cap_last_cap(),
    )
    scratch_root = _enter_minimal_root(config, readable, report) if spaces.mount else None
    if scratch_root is None:  # on the host: the parent removes it should this worker die
        # Not tempfile: it imports `random`, whose at-fork hook every program process would run.
        scratch_root = os.path.join(config["temp_dir"], f"sandbox-worker{config['slot']}-{os.urandom(6).hex()}")
        os.mkdir(scratch_root, 0o711)
        os.chmod(scratch_root, 0o711)  # whatever the umask
    _plan_privileges(plan, isolation, spaces, report, config["slot"], tasks_of_uid)
    _plan_landlock(plan, isolation, readable, scratch_root, report)
    if isolation["seccomp"]:
        plan.seccomp_filter = seccomp.build_filter()
        if plan.seccomp_filter is None:
            report.set("seccomp", False, f"no syscall table for {kernel.MACHINE}")
    else:
        report.set("seccomp", False, "disabled by Isolation(seccomp=False)")
    _probe(plan, report)
    audit_readable = None
    if isolation["audit_hook"]:
        audit_readable = readable + list(rootfs.DEVICES)
        report.set(
            "audit_hook",
            True,
            "second layer: refuses process creation, sockets, signals, "
            "ctypes loading and file access outside the tree and scratch",
        )
    else:
        report.set("audit_hook", False, "disabled by Isolation(audit_hook=False)")
    devnull = high_fd(os.open(os.devnull, os.O_RDWR))
    env = Environment(plan, child.make_streams(), audit_readable, devnull, pid_namespace_fd, _stray_killer(plan, spaces))
    return env, scratch_root


def _enter_minimal_root(config: dict[str, Any], readable: list[str], report: ReportBuilder) -> str | None:
    """Pivot into the minimal root; its scratch root, or None where that failed."""
    isolation = config["isolation"]
    try:
        rootfs.enter_minimal_root(readable, isolation["scratch_mb"])
    except OSError as error:
        report.set("mount_namespace", False, f"could not build the minimal root ({error})")
        return None
    exposed = ", ".join(["Python", *isolation["importable"], "system libraries"])
    report.set(
        "mount_namespace",
        True,
        f"pivot_root into a tmpfs holding read-only binds of "
        f"{len(readable)} paths ({exposed}); scratch is a {isolation['scratch_mb']} MiB "
        "noexec tmpfs; no /proc, /sys, /etc or project files",
    )
    return rootfs.SCRATCH_ROOT


def _plan_privileges(
    plan: confine.Plan, isolation: dict[str, Any], spaces: Namespaces, report: ReportBuilder, slot: int, tasks_of_uid: int | None
) -> None:
    if not isolation["drop_privileges"]:
        plan.nproc_offset = None
        report.set("privilege_drop", False, "disabled by Isolation(drop_privileges=False)")
    elif spaces.host_root:
        plan.uid = isolation["uid_base"] + slot  # its own uid: RLIMIT_NPROC counts this slot only
    elif spaces.user:
        plan.drop_capabilities = True
        plan.nproc_offset = 2  # the launcher and the server share the namespace's uid 0
    elif os.geteuid() == 0:  # root in a container: its uid also runs the container's other processes
        plan.drop_capabilities = True
        plan.nproc_offset = tasks_of_uid
    else:
        plan.nproc_offset = tasks_of_uid
        report.set("privilege_drop", True, f"already unprivileged (uid {os.geteuid()})")


def _tasks_of_this_uid() -> int | None:
    """Tasks (threads) this real uid runs now, plus headroom: RLIMIT_NPROC counts them all.

    None where /proc cannot tell. The limit it yields is approximate: the
    user's other processes come and go.
    """
    uid, tasks = os.getuid(), 0
    try:
        entries = [entry for entry in os.listdir("/proc") if entry.isdigit()]
    except OSError:
        return None
    for entry in entries:
        try:
            with open(f"/proc/{entry}/status") as file:
                fields = dict(line.split(":", 1) for line in file if ":" in line)
        except OSError:
            continue  # gone meanwhile
        if int(fields["Uid"].split()[0]) == uid:
            tasks += int(fields["Threads"])
    return tasks + _NPROC_HEADROOM


def _plan_landlock(
    plan: confine.Plan, isolation: dict[str, Any], readable: list[str], scratch_root: str, report: ReportBuilder
) -> None:
    if not isolation["landlock"]:
        report.set("landlock", False, "disabled by Isolation(landlock=False)")
        return
    abi = landlock.abi_version()
    if abi < 1:
        report.set("landlock", False, "not available in this kernel")
        return
    devices = {path: path == "/dev/null" for path in rootfs.DEVICES}
    try:
        plan.landlock_fd = high_fd(landlock.create_ruleset(abi, readable, [scratch_root], devices))
    except OSError as error:
        report.set("landlock", False, f"ruleset refused ({error})")
        return
    report.set("landlock", True, landlock.describe(abi))


def _probe(plan: confine.Plan, report: ReportBuilder) -> None:
    """Apply the per-program layers in a throw-away process; keep only those that worked."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            results = confine.lock_down(plan, strict=False)
            try:
                confine.set_rlimits(plan, Limits(), 1)
                results["rlimits"] = (True, confine.describe_rlimits(plan))
            except (OSError, ValueError) as error:
                results["rlimits"] = (False, f"kernel refused: {error}")
            os.write(write_end, encode(results))
        finally:
            os._exit(0)
    os.close(write_end)
    try:
        results = read_frame(read_end, FrameReader(1 << 16), deadline=None)
    except ProtocolError:
        results = {}
    os.close(read_end)
    os.waitpid(pid, 0)
    for layer in ("rlimits", "privilege_drop", "no_new_privs", "landlock", "seccomp"):
        if layer not in results:
            continue
        active, detail = results[layer]
        if active and layer == "landlock":
            continue  # keep the richer description set when the ruleset was built
        report.set(layer, active, detail)
    if not results.get("privilege_drop", (True,))[0]:
        plan.uid, plan.drop_capabilities = None, False
    if not results.get("no_new_privs", (True,))[0]:
        plan.no_new_privs = False
    if not results.get("landlock", (True,))[0]:
        plan.landlock_fd = None
    if not results.get("seccomp", (True,))[0]:
        plan.seccomp_filter = None


def _stray_killer(plan: confine.Plan, spaces: Namespaces) -> Callable[[int], None]:
    """What to call after a program process ends (see strays.py); nothing with a PID namespace."""
    if spaces.pid:
        return lambda pid: None
    strays.become_subreaper()
    return lambda pid: strays.kill_strays(pid, plan.uid)
