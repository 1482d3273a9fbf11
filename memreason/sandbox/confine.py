"""The per-program layers, applied by a freshly forked program process to itself.

`lock_down` runs right after the fork, before the process knows its program:
the privilege drop (which ends the ability to change the rest), then
no_new_privs, Landlock and seccomp (which forbids calls made before it). In
strict mode it raises on the first layer that fails, so a program never runs
with less than the worker promised; in probe mode it records every outcome
instead, which is how a worker learns at start-up what this kernel allows.
`set_rlimits` follows once the call's limits are known (lowering limits
needs no privilege).
"""

from __future__ import annotations

import os
import resource
import signal
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from . import kernel, landlock, seccomp
from .limits import Limits

_MB = 1 << 20


@dataclass
class Plan:
    """What a worker decided to apply to every program process it forks."""

    uid: int | None = None  # switch to this uid/gid (host root only)
    drop_capabilities: bool = False  # empty all capability sets (root inside a user namespace)
    last_cap: int = 40
    base_address_space: int = 0  # bytes mapped by the preloaded interpreter at fork time
    nproc_offset: int | None = 0  # tasks of the same uid outside the program; None: no RLIMIT_NPROC
    no_new_privs: bool = True
    landlock_fd: int | None = None
    seccomp_filter: bytes | None = None


def lock_down(plan: Plan, strict: bool = True) -> dict[str, tuple[bool, str]]:
    """Apply `plan`'s layers to the calling process; return {layer: (active, detail)}."""
    results: dict[str, tuple[bool, str]] = {}

    def step(layer: str, action: Callable[[], object], detail: str) -> None:
        try:
            action()
            results[layer] = (True, detail)
        except OSError as error:
            if strict:
                raise OSError(error.errno, f"{layer}: {error}") from None
            results[layer] = (False, f"kernel refused: {error}")

    os.setsid()
    if plan.uid is not None:
        step(
            "privilege_drop",
            partial(_switch_uid, plan.uid, plan.last_cap),
            f"programs run as uid/gid {plan.uid}, no groups, empty capability bounding set",
        )
    elif plan.drop_capabilities:
        step(
            "privilege_drop",
            lambda: kernel.drop_all_capabilities(plan.last_cap),
            "all capabilities dropped for good (securebits locked)",
        )
    kernel.prctl(kernel.PR_SET_PDEATHSIG, signal.SIGKILL)  # after the uid switch, which resets it
    if plan.no_new_privs:
        step("no_new_privs", lambda: kernel.prctl(kernel.PR_SET_NO_NEW_PRIVS, 1), "no set-uid or file-capability gains, ever")
    if plan.landlock_fd is not None:
        step("landlock", partial(landlock.restrict_self, plan.landlock_fd), "enforced")
    if plan.seccomp_filter is not None:
        step("seccomp", partial(seccomp.install, plan.seccomp_filter), "deny-list filter installed")
    return results


def set_rlimits(plan: Plan, limits: Limits, grids: int) -> None:
    """Lower this process's resource limits for a call of `grids` grids (raises OSError/ValueError)."""
    cpu = limits.cpu_seconds * (grids + 1)  # +1: the module's top-level code
    address_space = plan.base_address_space + limits.memory_mb * _MB
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # oversized writes fail with EFBIG instead
    values = {
        resource.RLIMIT_CPU: cpu,
        resource.RLIMIT_AS: address_space,
        resource.RLIMIT_FSIZE: limits.file_size_mb * _MB,
        resource.RLIMIT_NOFILE: limits.max_open_files,
        resource.RLIMIT_CORE: 0,
    }
    if plan.nproc_offset is not None:
        values[resource.RLIMIT_NPROC] = plan.nproc_offset + limits.max_processes
    for which, value in values.items():
        resource.setrlimit(which, (value, value))


def describe_rlimits(plan: Plan) -> str:
    names = "CPU, AS, FSIZE, NOFILE, CORE=0"
    if plan.nproc_offset is None:
        return names + "; no RLIMIT_NPROC (this uid's other tasks are unknown)"
    if plan.nproc_offset > 2:
        return names + f", NPROC (approximate: counts {plan.nproc_offset} tasks of the same uid)"
    return names + ", NPROC"


def _switch_uid(uid: int, last_cap: int) -> None:
    for cap in range(last_cap + 1):  # while still allowed to: no capability can ever come back
        kernel.prctl(kernel.PR_CAPBSET_DROP, cap)
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


def address_space_now() -> int:
    """Bytes of address space this process maps (needs /proc: call before pivot_root)."""
    with open("/proc/self/statm") as file:
        return int(file.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
