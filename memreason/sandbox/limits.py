"""The two knobs of a sandbox: resource `Limits` per call and `Isolation` per sandbox."""

from __future__ import annotations

import os
import sys
from dataclasses import asdict, dataclass, field

#: Modules imported by every worker before it serves programs, so that programs
#: importing them pay nothing. Left out on purpose: modules that import `random`
#: or `threading` (numpy.random, random, statistics), whose at-fork hooks would
#: cost every program process ~170 page faults; a program that imports them
#: pays the import itself (numpy.random: ~15 ms).
DEFAULT_PRELOAD: tuple[str, ...] = (
    "numpy",
    "numpy.linalg",
    "numpy.fft",
    "array",
    "bisect",
    "collections",
    "copy",
    "dataclasses",
    "enum",
    "fractions",
    "functools",
    "heapq",
    "itertools",
    "json",
    "math",
    "operator",
    "re",
    "string",
    "typing",
)


@dataclass(frozen=True)
class Limits:
    """Resource limits for one `Sandbox.run` call.

    Time limits are per input grid; the module's top-level code gets its own
    `wall_seconds` window. `cpu_seconds` is enforced by the kernel (RLIMIT_CPU,
    whole seconds) as a total for the grids one process runs, so it is the
    backstop; the per-grid wall clock is the precise limit.
    """

    cpu_seconds: int = 2
    wall_seconds: float = 4.0
    #: Address space a program may add on top of the preloaded interpreter (RLIMIT_AS).
    memory_mb: int = 512
    #: Largest file a program may write (RLIMIT_FSIZE).
    file_size_mb: int = 8
    #: Tasks (processes and threads) a program may have at once (RLIMIT_NPROC).
    max_processes: int = 8
    #: File descriptors a program may hold (RLIMIT_NOFILE).
    max_open_files: int = 64
    #: Captured stdout and stderr kept per grid and stream; the rest is dropped.
    max_output_bytes: int = 8192
    #: Largest accepted output grid side (ARC grids are at most 30 x 30).
    max_grid_side: int = 30

    def __post_init__(self) -> None:
        if self.cpu_seconds < 1 or self.wall_seconds <= 0:
            raise ValueError("cpu_seconds must be >= 1 and wall_seconds > 0")
        if min(self.memory_mb, self.file_size_mb, self.max_processes, self.max_open_files) < 1:
            raise ValueError("memory_mb, file_size_mb, max_processes, max_open_files must be >= 1")
        if self.max_output_bytes < 0 or self.max_grid_side < 1:
            raise ValueError("max_output_bytes must be >= 0 and max_grid_side >= 1")

    def to_wire(self) -> dict[str, float]:
        return asdict(self)


@dataclass(frozen=True)
class Isolation:
    """Which confinement layers a sandbox asks for, and what programs may read.

    Every layer is tried when enabled; a layer the kernel refuses is reported
    inactive by `Sandbox.isolation_report()` instead of failing, unless it is
    named in `require`, in which case starting the sandbox raises `SandboxError`.
    """

    namespaces: bool = True
    landlock: bool = True
    seccomp: bool = True
    audit_hook: bool = True
    drop_privileges: bool = True
    #: When running as real root, worker slot i runs programs as uid/gid uid_base + i.
    #: These ids must not be used by anything else on the host.
    uid_base: int = 61000
    #: Size of the in-memory scratch filesystem of each worker (mount namespace only).
    scratch_mb: int = 64
    #: Installed packages (besides the stdlib) that programs may import.
    importable: tuple[str, ...] = ("numpy",)
    preload: tuple[str, ...] = DEFAULT_PRELOAD
    #: Layer names (see `IsolationReport`) that must be active.
    require: frozenset[str] = field(default_factory=frozenset)
    python: str = sys.executable

    def __post_init__(self) -> None:
        from .report import LAYER_NAMES

        unknown = set(self.require) - set(LAYER_NAMES)
        if unknown:
            raise ValueError(f"unknown isolation layers in require: {sorted(unknown)}")

    def to_wire(self) -> dict[str, object]:
        return {
            "namespaces": self.namespaces,
            "landlock": self.landlock,
            "seccomp": self.seccomp,
            "audit_hook": self.audit_hook,
            "drop_privileges": self.drop_privileges,
            "uid_base": self.uid_base,
            "scratch_mb": self.scratch_mb,
            "importable": list(self.importable),
            "preload": list(self.preload),
        }


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)))
