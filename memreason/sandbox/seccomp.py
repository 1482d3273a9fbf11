"""A small seccomp-BPF deny-list that removes kernel attack surface programs never need.

Denied with EPERM: debugging other processes (ptrace, process_vm_*), mounts and
namespaces (mount, pivot_root, unshare, setns, clone with CLONE_NEW* flags),
kernel modules, kexec, bpf, perf, userfaultfd, io_uring, keyrings, System V and
POSIX message IPC, clock and host-name changes, file handles, and every
socket family except AF_UNIX. clone3 answers ENOSYS so that the C library
falls back to clone, whose flags BPF can inspect. Syscalls of another ABI
(x32, or a foreign architecture) kill the process. Only x86_64 has a table;
elsewhere the layer reports itself unavailable.
"""

from __future__ import annotations

import ctypes
import errno
import struct

from . import kernel

_AUDIT_ARCH_X86_64 = 0xC000003E
_X32_SYSCALL_BIT = 0x40000000
_AF_UNIX = 1

_DENIED_X86_64 = {
    "shmget": 29,
    "shmat": 30,
    "shmctl": 31,
    "semget": 64,
    "semop": 65,
    "semctl": 66,
    "shmdt": 67,
    "msgget": 68,
    "msgsnd": 69,
    "msgrcv": 70,
    "msgctl": 71,
    "ptrace": 101,
    "syslog": 103,
    "uselib": 134,
    "personality": 135,
    "ustat": 136,
    "sysfs": 139,
    "vhangup": 153,
    "pivot_root": 155,
    "_sysctl": 156,
    "adjtimex": 159,
    "chroot": 161,
    "acct": 163,
    "settimeofday": 164,
    "mount": 165,
    "umount2": 166,
    "swapon": 167,
    "swapoff": 168,
    "reboot": 169,
    "sethostname": 170,
    "setdomainname": 171,
    "iopl": 172,
    "ioperm": 173,
    "create_module": 174,
    "init_module": 175,
    "delete_module": 176,
    "get_kernel_syms": 177,
    "query_module": 178,
    "quotactl": 179,
    "nfsservctl": 180,
    "lookup_dcookie": 212,
    "semtimedop": 220,
    "clock_settime": 227,
    "mq_open": 240,
    "mq_unlink": 241,
    "mq_timedsend": 242,
    "mq_timedreceive": 243,
    "mq_notify": 244,
    "mq_getsetattr": 245,
    "kexec_load": 246,
    "add_key": 248,
    "request_key": 249,
    "keyctl": 250,
    "unshare": 272,
    "perf_event_open": 298,
    "fanotify_init": 300,
    "fanotify_mark": 301,
    "name_to_handle_at": 303,
    "open_by_handle_at": 304,
    "clock_adjtime": 305,
    "setns": 308,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "kcmp": 312,
    "finit_module": 313,
    "kexec_file_load": 320,
    "bpf": 321,
    "userfaultfd": 323,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "pidfd_getfd": 438,
    "mount_setattr": 442,
    "quotactl_fd": 443,
}
_SOCKET, _CLONE, _CLONE3 = 41, 56, 435

# Classic BPF opcodes and seccomp return values
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_RET_ALLOW, _RET_KILL_PROCESS, _RET_ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
_OFFSET_NR, _OFFSET_ARCH, _OFFSET_ARG0 = 0, 4, 16  # struct seccomp_data; low half of args[0]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]


def build_filter() -> bytes | None:
    """The packed BPF program for this machine, or None where there is no syscall table."""
    if kernel.MACHINE != "x86_64":
        return None
    deny = _RET_ERRNO | errno.EPERM
    program = [
        (_LD_W_ABS, 0, 0, _OFFSET_ARCH),
        (_JEQ_K, 1, 0, _AUDIT_ARCH_X86_64),
        (_RET_K, 0, 0, _RET_KILL_PROCESS),
        (_LD_W_ABS, 0, 0, _OFFSET_NR),
        (_JGE_K, 0, 1, _X32_SYSCALL_BIT),
        (_RET_K, 0, 0, _RET_KILL_PROCESS),
    ]
    for number in sorted(_DENIED_X86_64.values()):
        program += [(_JEQ_K, 0, 1, number), (_RET_K, 0, 0, deny)]
    program += [
        (_JEQ_K, 0, 1, _CLONE3),
        (_RET_K, 0, 0, _RET_ERRNO | errno.ENOSYS),
        (_JEQ_K, 0, 3, _SOCKET),
        (_LD_W_ABS, 0, 0, _OFFSET_ARG0),
        (_JEQ_K, 4, 0, _AF_UNIX),  # -> allow
        (_RET_K, 0, 0, _RET_ERRNO | errno.EAFNOSUPPORT),
        (_JEQ_K, 0, 2, _CLONE),
        (_LD_W_ABS, 0, 0, _OFFSET_ARG0),
        (_JSET_K, 1, 0, kernel.CLONE_NEW_ANY),
        (_RET_K, 0, 0, _RET_ALLOW),
        (_RET_K, 0, 0, deny),
    ]
    return b"".join(struct.pack("=HBBI", *instruction) for instruction in program)


def install(packed_filter: bytes) -> None:
    """Install the filter on the calling thread and its future children (needs no_new_privs)."""
    prog = _SockFprog(len(packed_filter) // 8, packed_filter)
    kernel.prctl(kernel.PR_SET_SECCOMP, kernel.SECCOMP_MODE_FILTER, ctypes.addressof(prog))
