"""A minimal read-only root file system for a worker, entered with pivot_root.

Inside the worker's mount namespace a tmpfs becomes the new root. It holds,
at their host paths, read-only bind mounts of exactly what programs need: the
Python installation, the importable packages (numpy), the system library
directories, the loader cache and four device nodes (null, zero, random,
urandom), plus a size-limited, noexec tmpfs at /scratch for per-program
scratch directories. Everything else, including the project's files, /etc,
/proc, /sys and the host's /tmp, is simply absent.

The new root is built on a host directory that holds none of the readable
paths (a Python installation may well live under /tmp), and taken down again
if building it fails, so the worker's degraded fallback still sees the host.
"""

from __future__ import annotations

import errno
import importlib.util
import os
import sys

from . import kernel

SCRATCH_ROOT = "/scratch"
_NEW_ROOT_CANDIDATES = ("/tmp", "/mnt", "/media", "/srv", "/var/tmp", "/run", "/opt")
DEVICES = ("/dev/null", "/dev/zero", "/dev/random", "/dev/urandom")
_LIBRARY_DIRS = ("/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib")
_STATVFS_TO_MOUNT = {
    os.ST_RDONLY: kernel.MS_RDONLY,
    os.ST_NOSUID: kernel.MS_NOSUID,
    os.ST_NODEV: kernel.MS_NODEV,
    os.ST_NOEXEC: kernel.MS_NOEXEC,
    os.ST_NOATIME: kernel.MS_NOATIME,
    os.ST_NODIRATIME: kernel.MS_NODIRATIME,
    os.ST_RELATIME: kernel.MS_RELATIME,
}


def readable_paths(importable: list[str]) -> list[str]:
    """Host paths programs may read: Python, the importable packages, system libraries."""
    paths = [sys.base_prefix]
    for name in importable:
        spec = importlib.util.find_spec(name)
        if spec is None:
            raise ModuleNotFoundError(f"importable package {name!r} is not installed")
        locations = list(spec.submodule_search_locations or [spec.origin or ""])
        for location in locations:
            paths.append(location)
            sibling_libs = os.path.join(os.path.dirname(location), f"{name}.libs")
            if os.path.isdir(sibling_libs):
                paths.append(sibling_libs)
    paths += [path for path in _LIBRARY_DIRS if os.path.exists(path)]
    if os.path.exists("/etc/ld.so.cache"):
        paths.append("/etc/ld.so.cache")
    return _without_nested([path for path in paths if path and os.path.exists(path)])


def enter_minimal_root(readable: list[str], scratch_mb: int) -> None:
    """Build the tree described in the module docstring and pivot_root into it."""
    kernel.mount(None, "/", None, kernel.MS_REC | kernel.MS_PRIVATE)
    if any(_inside(path, SCRATCH_ROOT) for path in readable):
        raise OSError(errno.EEXIST, f"a readable path lies under the scratch root {SCRATCH_ROOT}")
    new_root = _new_root_mount_point(readable)  # hidden only in this namespace
    sources = {path: os.open(path, os.O_PATH | os.O_CLOEXEC) for path in readable + list(DEVICES)}
    kernel.mount("tmpfs", new_root, "tmpfs", kernel.MS_NOSUID | kernel.MS_NODEV, "size=1m,mode=0755")
    try:
        _populate_and_pivot(new_root, readable, sources, scratch_mb)
    except BaseException:
        kernel.umount2(new_root, kernel.MNT_DETACH)  # give the worker its view of the host back
        raise
    finally:
        for fd in sources.values():
            os.close(fd)
    importlib.invalidate_caches()


def _populate_and_pivot(new_root: str, readable: list[str], sources: dict[str, int], scratch_mb: int) -> None:
    for path in readable:
        if os.path.islink(path) and os.path.realpath(path) in readable:
            os.makedirs(os.path.dirname(new_root + path), exist_ok=True)
            os.symlink(os.readlink(path), new_root + path)  # e.g. /lib -> usr/lib
        else:
            _expose(new_root, path, sources[path], read_only=True)
    for device in DEVICES:
        _expose(new_root, device, sources[device], read_only=False)

    scratch = new_root + SCRATCH_ROOT
    os.makedirs(scratch, exist_ok=True)
    kernel.mount(
        "tmpfs",
        scratch,
        "tmpfs",
        kernel.MS_NOSUID | kernel.MS_NODEV | kernel.MS_NOEXEC,
        f"size={scratch_mb}m,nr_inodes=16384,mode=0711",
    )
    os.mkdir(new_root + "/.old")
    kernel.pivot_root(new_root, new_root + "/.old")
    os.chdir("/")
    kernel.umount2("/.old", kernel.MNT_DETACH)
    os.rmdir("/.old")
    kernel.mount(None, "/", None, kernel.MS_REMOUNT | kernel.MS_RDONLY | kernel.MS_NOSUID | kernel.MS_NODEV)


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _new_root_mount_point(readable: list[str]) -> str:
    """A host directory to mount the new root's tmpfs on, holding none of the paths to expose."""
    for candidate in _NEW_ROOT_CANDIDATES:
        if (
            os.path.isdir(candidate)
            and not os.path.islink(candidate)
            and not any(_inside(path, candidate) for path in [*readable, *DEVICES])
        ):
            return candidate
    raise OSError(errno.ENOENT, "no directory to build the minimal root on outside the readable tree")


def _expose(new_root: str, path: str, source_fd: int, read_only: bool) -> None:
    """Bind-mount host `path` (through its O_PATH descriptor) at the same path under `new_root`."""
    target = new_root + path
    os.makedirs(os.path.dirname(target), exist_ok=True)
    if os.path.isdir(path):
        os.makedirs(target, exist_ok=True)
    else:
        open(target, "w").close()
    kernel.mount(f"/proc/self/fd/{source_fd}", target, None, kernel.MS_BIND)
    flags = kernel.MS_REMOUNT | kernel.MS_BIND | kernel.MS_NOSUID | _locked_flags(path)
    flags |= kernel.MS_RDONLY | kernel.MS_NODEV if read_only else kernel.MS_NOEXEC
    kernel.mount(None, target, None, flags)


def _locked_flags(path: str) -> int:
    """Flags of the source mount that a remount inside a user namespace must keep."""
    vfs_flags = os.statvfs(path).f_flag
    return sum(mount_flag for vfs_flag, mount_flag in _STATVFS_TO_MOUNT.items() if vfs_flags & vfs_flag)


def _without_nested(paths: list[str]) -> list[str]:
    """Drop duplicates and paths inside another listed directory (bound with it already)."""
    kept: list[str] = []
    for path in sorted(set(paths), key=len):
        if not any(path.startswith(parent.rstrip("/") + "/") for parent in kept):
            kept.append(path)
    return kept
