"""Run untrusted ``transform(grid)`` programs, fast, in isolated processes.

    from memreason.sandbox import Sandbox, Limits

    with Sandbox(workers=2, limits=Limits(wall_seconds=4)) as sandbox:
        outcomes = sandbox.run(source, [grid1, grid2])   # one Outcome per grid
        outcomes[0].output      # list[list[int]], or None with .failure (a Failure) and .detail
        sandbox.isolation_report()   # which layers below are active on this machine

How it works
------------
`Sandbox` starts `workers` fresh interpreters (never forks the caller, whose
memory may hold secrets). Each is a fork server: it imports numpy and the
common stdlib once, enters its namespaces and read-only root, and keeps one
program process forked ahead, already confined, waiting for a call. A call
goes to that process, which runs the program on the call's grids and reports
each result over a pipe; it is thrown away afterwards, so nothing a program
changes (builtins, modules, files) survives into another program. Each grid
is handed to `transform` exactly once: when a process dies on a grid, a new
one runs the remaining grids.

Failure kinds: SYNTAX_ERROR, NO_TRANSFORM (no callable ``transform``),
EXCEPTION (top-level code or transform raised; SystemExit and
KeyboardInterrupt included), TIMEOUT (wall clock, or the kernel's CPU limit),
MEMORY_LIMIT (MemoryError under the address-space limit), BAD_OUTPUT (not a
non-empty rectangular grid of ints 0-9 with sides <= `Limits.max_grid_side`,
default 30; bools, floats, object arrays, ragged rows and subclasses are
refused), KILLED (died or exited without reporting: a signal, ``os._exit``,
a corrupted result channel, or a failed sandbox).

Threat model
------------
Every program is hostile. The harness must survive whatever it does, and it
must not read or change anything outside its scratch directory, reach the
network, see the caller's environment or file descriptors, signal or trace
other processes, or outlive its call. Layers, outermost first (each one is
probed at start-up and listed by `Sandbox.isolation_report()`):

- clean start: workers are new interpreters with a fixed six-variable
  environment and only their control pipes; programs start with an empty
  environment and hold only /dev/null, two capture pipes and a result pipe.
- namespaces (per worker): mount, network (no interface up, not even
  loopback), IPC and UTS; a user namespace when not running as host root.
- minimal root (per worker): pivot_root into a tmpfs holding read-only binds
  of the Python installation, the importable packages and the system library
  directories; /proc, /sys, /etc, the project and the host's /tmp are absent;
  scratch is a size- and inode-limited noexec tmpfs, one 0700 directory per call.
- PID namespace (per program): the program is PID 1 of its own namespace; it
  sees no other process, and the kernel kills all its processes with it.
- privilege drop: as host root, programs run as uid/gid ``uid_base + slot``
  with no groups and an empty capability bounding set (so RLIMIT_NPROC counts
  only that worker's program); inside a user namespace, all capabilities are
  dropped and the securebits locked.
- rlimits: CPU seconds, address space, file size, open files, tasks, no core.
- no_new_privs, then Landlock (file access allow-list; on ABI >= 4 no TCP
  bind/connect; on ABI >= 6 no signals or abstract UNIX sockets across the
  sandbox boundary), then a seccomp deny-list (mount, namespaces, ptrace,
  bpf, perf, keyrings, io_uring, kernel modules, SysV/POSIX IPC, sockets other
  than AF_UNIX; x86_64 only).
- an audit hook (PEP 578), a second layer inside the interpreter that refuses
  process creation, sockets, signals, ctypes loading, and file access outside
  the readable tree and the scratch directory. Native code can bypass it.
- the worker enforces a wall-clock deadline per grid (and for top-level code),
  kills the process on a deadline or a protocol violation, bounds captured
  output, and validates every reported grid itself; the parent validates the
  worker's replies again and replaces a worker that stops answering.

Where the kernel refuses a layer, the others still apply and the report says
why: without namespaces (or with ``Isolation(namespaces=False)``) programs
see the host file system through their uid's permissions, Landlock and the
audit hook; strays are then killed by process group, as root by uid, and
in any case as orphans adopted by the worker (a child subreaper).
Without Landlock and namespaces nothing but file permissions limits what a
program can read (world-readable files included). Without root, a user
namespace is needed for any other namespace; without root or a user
namespace, programs share the caller's uid, so RLIMIT_NPROC can only be
approximate (the uid's tasks at start-up plus 64 plus ``max_processes``).

Not contained
-------------
- Kernel exploits: the layers reduce the attack surface, they do not remove it.
- CPU and memory side channels, and the CPU time a program burns until its
  deadline; memory is limited per process (address space), not by a cgroup,
  so page cache and kernel memory are not accounted.
- A program's own results: it can lie about them (write frames itself, patch
  the runner in its own process); the worker only guarantees they are valid
  grids and that they cannot affect other calls.
- Information readable in the minimal root: the Python installation, numpy,
  system libraries, and the names of directories on the way to them; and the
  memory a program process inherits from its worker: the worker's settings
  and the call's own source and grids (earlier calls' objects are dropped,
  but their bytes may linger in freed memory, readable with ctypes where the
  audit hook is off). Expected outputs never reach the sandbox.
- In the degraded set-ups above: whatever the program's uid may read.
"""

from .limits import Isolation, Limits
from .outcome import Failure, Grid, Outcome
from .report import IsolationReport, Layer
from .sandbox import Sandbox, SandboxError

__all__ = [
    "Failure",
    "Grid",
    "Isolation",
    "IsolationReport",
    "Layer",
    "Limits",
    "Outcome",
    "Sandbox",
    "SandboxError",
]
