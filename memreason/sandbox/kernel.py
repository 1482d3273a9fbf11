"""Thin ctypes wrappers for the Linux system calls Python 3.11 does not expose.

Each wrapper raises `OSError` with the errno on failure. Nothing here decides
policy; the callers (`namespaces`, `rootfs`, `confine`) do.
"""

from __future__ import annotations

import ctypes
import os
import platform

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
# Fixed argument types: calls then convert plain ints in C, allocating nothing in Python
# (this matters in freshly forked processes, where every touched page is copied).
_c_char_p, _c_int, _c_ulong = ctypes.c_char_p, ctypes.c_int, ctypes.c_ulong
for _name, _argtypes in {
    "unshare": [_c_int],
    "setns": [_c_int, _c_int],
    "umount2": [_c_char_p, _c_int],
    "mount": [_c_char_p, _c_char_p, _c_char_p, _c_ulong, _c_char_p],
    "sethostname": [_c_char_p, ctypes.c_size_t],
    "prctl": [_c_int, _c_ulong, _c_ulong, _c_ulong, _c_ulong],
}.items():
    getattr(_libc, _name).argtypes = _argtypes
    getattr(_libc, _name).restype = _c_int

MACHINE = platform.machine()

# clone(2) / unshare(2) flags
CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_NEWTIME = 0x00000080
CLONE_NEW_ANY = (
    CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWTIME
)

# mount(2) flags
MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_NOATIME = 0x400
MS_NODIRATIME = 0x800
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
MS_RELATIME = 0x200000
MNT_DETACH = 0x2

# prctl(2) options
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_SECCOMP = 22
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SECCOMP_MODE_FILTER = 2
# SECBIT_NOROOT | _LOCKED, NO_SETUID_FIXUP | _LOCKED, KEEP_CAPS_LOCKED, NO_CAP_AMBIENT_RAISE | _LOCKED
SECUREBITS_LOCKED_DOWN = 0x01 | 0x02 | 0x04 | 0x08 | 0x20 | 0x40 | 0x80

_SYSCALLS = {
    "x86_64": {"pivot_root": 155, "capset": 126},
    "aarch64": {"pivot_root": 41, "capset": 91},
}
# The Landlock calls have the same numbers on every architecture.
SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446


def _check(result: int, what: str) -> int:
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")
    return result


def syscall(number: int, *args: object) -> int:
    """Raw syscall; returns the result or raises OSError."""
    result = _libc.syscall(ctypes.c_long(number), *args)
    return result if result >= 0 else _check(result, f"syscall {number}")


def unshare(flags: int) -> None:
    _check(_libc.unshare(flags), "unshare")


def setns(fd: int, nstype: int) -> None:
    _check(_libc.setns(fd, nstype), "setns")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def encode(text: str | None) -> bytes | None:
        return None if text is None else os.fsencode(text)

    _check(_libc.mount(encode(source), encode(target), encode(fstype), flags, encode(data)), target)


def umount2(target: str, flags: int) -> None:
    _check(_libc.umount2(os.fsencode(target), flags), target)


def pivot_root(new_root: str, put_old: str) -> None:
    number = _SYSCALLS.get(MACHINE, {}).get("pivot_root")
    if number is None:
        raise OSError(38, f"pivot_root: no syscall number for {MACHINE}")
    syscall(number, os.fsencode(new_root), os.fsencode(put_old))


def sethostname(name: str) -> None:
    raw = name.encode()
    _check(_libc.sethostname(raw, len(raw)), "sethostname")


def prctl(option: int, arg2: int = 0, arg3: int = 0, arg4: int = 0, arg5: int = 0) -> int:
    return _check(_libc.prctl(option, arg2, arg3, arg4, arg5), "prctl")


def cap_last_cap() -> int:
    """Highest capability number this kernel knows (read before /proc disappears)."""
    try:
        with open("/proc/sys/kernel/cap_last_cap") as file:
            return int(file.read())
    except OSError:
        return 40


def drop_all_capabilities(last_cap: int) -> None:
    """Empty the bounding, ambient, effective, permitted and inheritable sets for good."""
    prctl(PR_SET_SECUREBITS, SECUREBITS_LOCKED_DOWN)
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    for cap in range(last_cap + 1):
        prctl(PR_CAPBSET_DROP, cap)
    number = _SYSCALLS.get(MACHINE, {}).get("capset")
    if number is None:
        raise OSError(38, f"capset: no syscall number for {MACHINE}")
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    empty = (_CapData * 2)()  # version 3: two 32-bit halves of each set, all zero
    syscall(number, ctypes.byref(header), ctypes.byref(empty))


_LINUX_CAPABILITY_VERSION_3 = 0x20080522


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]
