"""Landlock (Linux >= 5.13): an unprivileged file-system, TCP and signal allow-list.

The worker builds one ruleset when it starts; each program's process enforces
it on itself just before the program runs. Programs may then read (and map
executable) only the readable paths, read and write only beneath the scratch
root, and, where the kernel's Landlock ABI is new enough, neither bind nor
connect TCP sockets (ABI 4) nor signal or reach abstract UNIX sockets of
processes outside their own sandbox (ABI 6).
"""

from __future__ import annotations

import ctypes
import os

from . import kernel

_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_REMOVE_DIR, _REMOVE_FILE, _MAKE_CHAR, _MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
_MAKE_REG, _MAKE_SOCK, _MAKE_FIFO, _MAKE_BLOCK = 1 << 8, 1 << 9, 1 << 10, 1 << 11
_MAKE_SYM, _REFER, _TRUNCATE, _IOCTL_DEV = 1 << 12, 1 << 13, 1 << 14, 1 << 15
_FILE_ONLY = _EXECUTE | _WRITE_FILE | _READ_FILE | _TRUNCATE | _IOCTL_DEV
_NET_BIND_TCP, _NET_CONNECT_TCP = 1, 2
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1, 2
_RULE_PATH_BENEATH = 1
_CREATE_RULESET_VERSION = 1


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def abi_version() -> int:
    """The kernel's Landlock ABI version, 0 when Landlock is missing or disabled."""
    try:
        return kernel.syscall(
            kernel.SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION)
        )
    except OSError:
        return 0


def handled_fs(abi: int) -> int:
    rights = (1 << 13) - 1  # ABI 1: EXECUTE .. MAKE_SYM
    if abi >= 2:
        rights |= _REFER
    if abi >= 3:
        rights |= _TRUNCATE
    if abi >= 5:
        rights |= _IOCTL_DEV
    return rights


def create_ruleset(abi: int, readable: list[str], writable_dirs: list[str], devices: dict[str, bool]) -> int:
    """Return a ruleset fd; `devices` maps device paths to whether they may be written."""
    fs_rights = handled_fs(abi)
    attr = _RulesetAttr(fs_rights, 0, 0)
    size = 8
    if abi >= 4:
        attr.handled_access_net = _NET_BIND_TCP | _NET_CONNECT_TCP  # no rule: all TCP denied
        size = 16
    if abi >= 6:
        attr.scoped = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL
        size = 24
    ruleset = kernel.syscall(kernel.SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    read = _READ_FILE | _READ_DIR | _EXECUTE
    write = fs_rights & ~(_EXECUTE | _MAKE_CHAR | _MAKE_BLOCK)
    for path in readable:
        _allow(ruleset, path, read, fs_rights)
    for path in writable_dirs:
        _allow(ruleset, path, write, fs_rights)
    for path, writable in devices.items():
        _allow(ruleset, path, _READ_FILE | (_WRITE_FILE | _TRUNCATE if writable else 0), fs_rights)
    return ruleset


def restrict_self(ruleset_fd: int) -> None:
    """Enforce the ruleset on the calling thread and its future children (needs no_new_privs)."""
    kernel.syscall(kernel.SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset_fd), ctypes.c_uint32(0))


def describe(abi: int) -> str:
    parts = [f"ABI {abi}: file access limited to the read-only tree and scratch"]
    if abi >= 4:
        parts.append("TCP bind/connect denied")
    if abi >= 6:
        parts.append("signals and abstract UNIX sockets scoped to the sandbox")
    return "; ".join(parts)


def _allow(ruleset: int, path: str, access: int, handled: int) -> None:
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        if not os.path.isdir(path):
            access &= _FILE_ONLY
        rule = _PathBeneathAttr(access & handled, fd)
        kernel.syscall(
            kernel.SYS_LANDLOCK_ADD_RULE,
            ctypes.c_int(ruleset),
            ctypes.c_int(_RULE_PATH_BENEATH),
            ctypes.byref(rule),
            ctypes.c_uint32(0),
        )
    finally:
        os.close(fd)
