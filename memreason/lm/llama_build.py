"""llama.cpp's HTTP server (``llama-server``), built once from source and cached.

No prebuilt binary is downloaded: the source comes from a package index as the source
distribution of ``llama-cpp-python`` (MIT, like llama.cpp itself), which vendors the
whole llama.cpp tree; only its ``vendor/llama.cpp`` is compiled, and only the
``llama-server`` target, with CMake and Ninja (the ``local`` extra installs both from
PyPI) and the machine's C++ compiler. It takes about 5-8 minutes on 2 cores, once:

    python -m memreason.lm.server_build          # or: the first run on the embedded model

That command is :mod:`memreason.lm.server_build`; the build itself is here, in a module the
package imports at load time, so ``python -m`` never finds the command's module imported already.

The binary lands in ``<cache>/llama-server/<version>-<cpu>/`` (``MEMREASON_CACHE``, else
``~/.cache/memreason``). It is compiled for this CPU (``GGML_NATIVE``), so the folder is
keyed by the CPU's model and flags: a cache shared with another kind of machine builds
its own copy instead of crashing on an unknown instruction. ``MEMREASON_LLAMA_SERVER``
names a ``llama-server`` of your own instead (it must know ``--no-repack``).
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from memreason.installed import install_hint

from .cache import cache_dir

LLAMA_CPP_PYTHON = "0.3.36"  # the source distribution whose vendored llama.cpp we build
BINARY = "llama-server"
ENV_BINARY = "MEMREASON_LLAMA_SERVER"

# Only the server: no tests, examples, web UI (its prebuilt form would be fetched from a
# model hub), curl or OpenSSL. Static, so the binary stands alone in the cache.
CMAKE_OPTIONS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DGGML_NATIVE=ON",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_TOOLS=ON",
    "-DLLAMA_BUILD_SERVER=ON",
    "-DLLAMA_BUILD_APP=OFF",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_OPENSSL=OFF",
)


logger = logging.getLogger(__name__)


class ServerBuildError(RuntimeError):
    """llama-server could not be built (no compiler, no CMake, no network to the package index, ...)."""


def cpu_key() -> str:
    """A short digest of this CPU's model name and instruction-set flags."""
    model, flags = "", ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and not model:
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags") and not flags:
                flags = " ".join(sorted(line.split(":", 1)[1].split()))
    except OSError:
        import platform

        model = platform.processor() or platform.machine()
    return hashlib.sha256(f"{model}|{flags}".encode()).hexdigest()[:12]


def cached_binary() -> Path:
    """Where this machine's build lives (whether or not it exists yet)."""
    return cache_dir() / "llama-server" / f"{LLAMA_CPP_PYTHON}-{cpu_key()}" / BINARY


def server_binary(*, build: bool = True, progress: bool = True) -> Path:
    """Path of a ``llama-server`` for this machine, building it first if needed (and ``build``)."""
    own = os.environ.get(ENV_BINARY)
    if own:
        path = Path(own).expanduser()
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise ServerBuildError(f"{ENV_BINARY}={own} is not an executable file")
        return path
    target = cached_binary()
    if target.is_file():
        return target
    if not build:
        raise ServerBuildError(f"llama-server is not built yet: python -m memreason.lm.server_build (expected {target})")
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building the same binary
        if not target.is_file():
            _build(target, progress)
    return target


def build_tools() -> dict[str, str | None]:
    """The tools a build needs, as found here (None when missing)."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"  # the venv's cmake/ninja first
    compiler = (
        os.environ.get("CXX")
        or shutil.which("c++", path=path)
        or shutil.which("g++", path=path)
        or shutil.which("clang++", path=path)
    )
    return {"cmake": shutil.which("cmake", path=path), "ninja": shutil.which("ninja", path=path), "c++": compiler}


def can_build() -> bool:
    tools = build_tools()
    return bool(tools["cmake"] and tools["c++"])


def _build(target: Path, progress: bool) -> None:
    tools = build_tools()
    missing = [name for name in ("cmake", "c++") if not tools[name]]
    if missing:
        raise ServerBuildError(
            f"building llama-server needs {' and '.join(missing)}: {install_hint('local')} brings CMake; "
            "a C++ compiler comes from your system (apt-get install g++, xcode-select --install, ...)"
        )
    say = logger.info if progress else (lambda text: None)
    say(
        f"building llama-server (llama.cpp from llama-cpp-python {LLAMA_CPP_PYTHON}'s source) into {target.parent}: "
        "once, about 5-8 minutes on 2 cores ..."
    )
    with tempfile.TemporaryDirectory(prefix="build-", dir=target.parent) as work:
        work = Path(work)
        source = _fetch_source(work, say)
        build = work / "build"
        log = target.parent / "build.log"
        generator = ["-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={tools['ninja']}"] if tools["ninja"] else []
        configure = [tools["cmake"], "-S", str(source), "-B", str(build), *generator, *CMAKE_OPTIONS]
        compile_ = [tools["cmake"], "--build", str(build), "--target", BINARY, "-j", str(os.cpu_count() or 1)]
        with open(log, "w") as out:
            for step in (configure, compile_):
                _run(step, out, say, log)
        built = next((p for p in (build / "bin" / BINARY, build / BINARY) if p.is_file()), None)
        if built is None:
            raise ServerBuildError(f"the build finished without a {BINARY} binary; see {log}")
        partial = target.with_suffix(".partial")
        shutil.copy2(built, partial)
        os.replace(partial, target)
    say(f"llama-server built: {target}")


def _fetch_source(work: Path, say) -> Path:
    """Download the source distribution (pip's cache makes a second build fast) and unpack llama.cpp."""
    say(f"fetching the llama-cpp-python {LLAMA_CPP_PYTHON} source distribution ...")
    # --no-binary for this package only: its build requirements, which pip installs to read the
    # metadata, come as wheels (":all:" would compile them from source too, CMake included).
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--no-deps",
        "--no-binary",
        "llama-cpp-python",
        f"llama-cpp-python=={LLAMA_CPP_PYTHON}",
        "-d",
        str(work),
    ]
    done = subprocess.run(command, capture_output=True, text=True)
    archives = list(work.glob("llama_cpp_python-*.tar.gz"))
    if done.returncode != 0 or not archives:
        raise ServerBuildError(f"could not download the llama-cpp-python source: {(done.stderr or done.stdout).strip()[-400:]}")
    prefix = f"llama_cpp_python-{LLAMA_CPP_PYTHON}/vendor/llama.cpp/"
    with tarfile.open(archives[0]) as archive:
        members = [m for m in archive.getmembers() if m.name.startswith(prefix)]
        try:
            archive.extractall(work, members=members, filter="data")
        except TypeError:  # Python before 3.10.12 / 3.11.4: no extraction filters
            archive.extractall(work, members=members)
    return work / prefix


def _run(command: list[str], out, say, log: Path) -> None:
    """Run one build step, its output to ``out``, Ninja's ``[n/N]`` steps shown every 10%."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    shown = -1
    for line in process.stdout:
        out.write(line)
        match = re.match(r"\[(\d+)/(\d+)\]", line)
        if match:
            tenth = int(match[1]) * 10 // int(match[2])
            if tenth > shown:
                shown = tenth
                say(f"  llama-server build {tenth * 10}% ({match[1]}/{match[2]})")
    if process.wait() != 0:
        out.flush()
        tail = log.read_text()[-1500:] if log.exists() else ""
        raise ServerBuildError(f"{Path(command[0]).name} failed (exit {process.returncode}); see {log}\n{tail}")
