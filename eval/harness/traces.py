"""Every LM call of a run, kept in its run directory beside the example it served.

    traces/memory-run<r>.json.gz     the calls that built run r's memory
    traces/run<r>/<id>.json.gz       the calls that answered example <id> in run r
    traces/run<r>/write-<i>.json.gz  (ARC) the calls of the memory write after problem i

    store = TraceStore(run_dir)
    store.write("run0/scene-0003", meter.take_calls())   # before the example's line in examples.jsonl
    store.read("run0/scene-0003")                        # [call, ...] (memreason.lm.traces.call_trace)
    store.read("run0/scene-0003", strict=True)           # ... or TraceDamaged when the file cannot be read

One gzipped JSON file per unit, replaced atomically: a unit done again (a resumed run, a
``--retry-failed``) replaces its file, so nothing is counted twice, and a crash loses at
most the unit in flight (whose answers the DSPy cache then replays, marked ``cache_hit``).
Token totals are never read from here (they come from ``examples.jsonl``); traces are for
looking inside. Once the directory holds more than ``cap_bytes``, later units keep each
call's fields, tokens and timing but not the messages sent (``"messages": "dropped: ..."``).
"""

from __future__ import annotations

import gzip
import json
import re
import threading
import zlib
from pathlib import Path
from typing import Any

from memreason.files import replace_atomically

CAP_BYTES = 256 * 2**20  # messages are dropped from later units past this size of traces/


class TraceDamaged(ValueError):
    """A unit's trace file that exists but cannot be read (truncated, edited, not a trace)."""


class TraceStore:
    """The ``traces/`` folder of one run directory."""

    def __init__(self, run_dir: Path, *, cap_bytes: int = CAP_BYTES):
        self.root = Path(run_dir) / "traces"
        self.cap_bytes = cap_bytes
        self._size: int | None = None
        self._lock = threading.Lock()

    def path(self, unit: str) -> Path:
        return self.root / f"{safe_unit(unit)}.json.gz"

    def write(self, unit: str, calls: list[dict[str, Any]]) -> Path:
        """Replace the trace of ``unit`` (``run0/<id>``, ``memory-run0``) by ``calls``."""
        path = self.path(unit)
        with self._lock:
            if self._size is None:
                self._size = sum(p.stat().st_size for p in self.root.rglob("*.json.gz")) if self.root.exists() else 0
            if self._size > self.cap_bytes:
                reason = f"dropped: traces/ passed {self.cap_bytes / 2**20:.0f} MiB"
                calls = [{**call, "messages": reason} for call in calls]
            old = path.stat().st_size if path.exists() else 0
            data = gzip.compress(json.dumps({"unit": unit, "calls": calls}, default=str).encode(), compresslevel=6)
            replace_atomically(path, data)
            self._size += len(data) - old
        return path

    def read(self, unit: str, *, strict: bool = False) -> list[dict[str, Any]]:
        """The calls of ``unit``; [] when it has no trace (a run from before traces, or a unit with no LM call).
        A trace file that cannot be read is [] too, or with ``strict`` raises :class:`TraceDamaged`."""
        path = self.path(unit)
        if not path.exists():
            return []
        try:
            calls = json.loads(gzip.decompress(path.read_bytes())).get("calls") or []
            if not isinstance(calls, list) or not all(isinstance(call, dict) for call in calls):
                raise ValueError("its calls are not a list of call records")
            return calls
        except (OSError, ValueError, EOFError, AttributeError, zlib.error) as exc:
            if strict:
                raise TraceDamaged(f"the trace {path} is damaged ({exc}): its LM calls cannot be shown") from None
            return []

    def units(self) -> list[str]:
        """Every unit with a trace, as ``write`` named it."""
        if not self.root.exists():
            return []
        return sorted(str(p.relative_to(self.root))[: -len(".json.gz")] for p in self.root.rglob("*.json.gz"))


def example_unit(run: int, example_id: str) -> str:
    return f"run{run}/{example_id}"


def memory_unit(run: int) -> str:
    return f"memory-run{run}"


def write_unit(run: int, after_problem: int) -> str:
    return f"run{run}/write-{after_problem:04d}"


def safe_unit(unit: str) -> str:
    """``unit`` with characters unsafe in a file name replaced (ids come from datasets)."""
    return "/".join(re.sub(r"[^A-Za-z0-9._-]+", "_", part) or "_" for part in unit.split("/"))
