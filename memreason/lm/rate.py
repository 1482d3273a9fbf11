"""Rate limits: requests and tokens per minute for one role's LM, shared by every thread of a process.

    limit = limiter_for("task", "openai/gpt-4o-mini", rpm=500, tpm=200_000)   # --rpm 500 --tpm 200000
    slot = limit.acquire(tokens=estimate_tokens(messages))   # waits while the window is full or the provider said wait
    ...                                                      # the call
    limit.release(slot, tokens=prompt + completion)          # its real size, once its usage is known
    limit.pause(12.0)                                        # a 429's retry-after: no request of this role starts for 12 s

A sliding window of ``window`` seconds (60): a request may start when fewer than ``rpm`` requests
are in the window and its estimated tokens fit under ``tpm`` with those of the requests in the window
(a request larger than ``tpm`` on its own starts when the window is empty). A request stays in the
window from its start until ``window`` seconds after its answer came back, so a provider that counts
requests as they arrive never sees more than ``rpm`` in any window of its own, whatever the network
did to their order. Its tokens count as estimated (the prompt's characters over four) until its
usage is known; an answer DSPy's cache held leaves the window at once (the provider never saw it).

A provider's ``retry-after`` pauses the whole role: every thread waits it out before its next request
(:meth:`RateLimit.pause`), not only the one that met the 429.

One limiter per role and model in a process (:func:`limiter_for`): the cells of a table, the trials of a
study and every thread share it. :func:`slowed` says how long the limiters held requests back, for a
progress line.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["RateLimit", "Slot", "estimate_tokens", "limiter_for", "slowed", "waited"]

WINDOW = 60.0  # seconds: requests and tokens per minute (limiters made after a change use the new value: tests scale it)
POLL = 0.25  # seconds between looks at a window held only by requests still in flight
CHARS_PER_TOKEN = 4


@dataclass
class Slot:
    """One request in the window: when it started, when its answer came (None: in flight), its tokens."""

    started: float
    tokens: int
    ended: float | None = None


@dataclass
class RateLimit:
    """Requests and tokens per ``window`` seconds for one role, and the provider's pauses, thread-safe.

    ``rpm`` / ``tpm``: None for no cap (the limiter then only shares the provider's pauses). ``clock`` and
    ``sleep`` are the time it reads and how it waits (a fake clock in tests)."""

    rpm: int | None = None
    tpm: int | None = None
    name: str = "task"
    window: float = WINDOW
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    slots: list[Slot] = field(default_factory=list, repr=False)
    paused_until: float = 0.0
    waits: Counter = field(default_factory=Counter, repr=False)  # requests that waited, by cause (rpm, tpm, retry-after)
    held: float = 0.0  # seconds of the clock during which at least one request waited
    pauses: int = 0  # provider pauses asked for (429s)
    _waiting: int = field(default=0, repr=False)  # requests waiting now
    _held_since: float = field(default=0.0, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def limits(self) -> bool:
        """Whether it caps anything (``rpm`` or ``tpm``)."""
        return self.rpm is not None or self.tpm is not None

    def acquire(self, tokens: int = 0) -> Slot:
        """Wait until a request of about ``tokens`` tokens may start, and take its place in the window."""
        counted: set[str] = set()
        waiting = False
        try:
            while True:
                with self._lock:
                    now = self.clock()
                    cause, wait = self._hold(now, tokens)
                    if cause is None:
                        slot = Slot(started=now, tokens=max(0, int(tokens)))
                        self.slots.append(slot)
                        return slot
                    if cause not in counted:
                        counted.add(cause)
                        self.waits[cause] += 1
                    if not waiting:
                        waiting = True
                        self._waiting += 1
                        if self._waiting == 1:
                            self._held_since = now
                self.sleep(wait)
        finally:
            if waiting:
                with self._lock:
                    self._waiting -= 1
                    if not self._waiting:
                        self.held += self.clock() - self._held_since

    def _hold(self, now: float, tokens: int) -> tuple[str | None, float]:
        """(why a request must wait, how long to wait before looking again); (None, 0) when it may start."""
        if now < self.paused_until:
            return "retry-after", self.paused_until - now
        horizon = now - self.window
        self.slots = [s for s in self.slots if s.ended is None or s.ended > horizon]
        if not self.slots:
            return None, 0.0
        if self.rpm is not None and len(self.slots) >= self.rpm:
            return "rpm", self._next_free(now, len(self.slots) - self.rpm + 1)
        if self.tpm is not None and sum(s.tokens for s in self.slots) + tokens > self.tpm:
            return "tpm", self._next_free(now, 1)
        return None, 0.0

    def _next_free(self, now: float, count: int) -> float:
        """Seconds until ``count`` requests of the window have left it (a short look when in-flight ones hold it)."""
        ends = sorted(s.ended for s in self.slots if s.ended is not None)
        if len(ends) < count:
            return POLL
        return max(ends[count - 1] + self.window - now, 0.0) + 1e-3

    def release(self, slot: Slot, *, tokens: int | None = None, cached: bool = False) -> None:
        """The request of ``slot`` is answered: ``tokens`` its real size (None: as estimated); ``cached``: the answer
        came from DSPy's cache, so the provider never saw it and it leaves the window."""
        with self._lock:
            if cached:
                self.slots = [s for s in self.slots if s is not slot]
                return
            if slot.ended is not None:  # released before
                return
            slot.ended = self.clock()
            if tokens is not None:
                slot.tokens = max(0, int(tokens))

    def __deepcopy__(self, memo: dict) -> "RateLimit":
        return self  # shared on purpose: a copy of a program (DSPy's optimizers copy them) waits for the same provider

    def __getstate__(self) -> dict[str, Any]:
        """Pickled: the caps, not the window or the lock (another process starts a window of its own)."""
        return {"rpm": self.rpm, "tpm": self.tpm, "name": self.name, "window": self.window}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)

    def pause(self, seconds: float) -> None:
        """No request of this role starts for ``seconds`` (a provider's ``retry-after``)."""
        with self._lock:
            self.pauses += 1
            self.paused_until = max(self.paused_until, self.clock() + max(0.0, seconds))

    def held_now(self) -> float:
        """Seconds of the clock during which at least one request waited, the wait going on now included (under the lock)."""
        return self.held + (self.clock() - self._held_since if self._waiting else 0.0)

    def stats(self) -> dict[str, Any]:
        """What it held back so far: its caps, the requests that waited and the seconds they waited, by cause."""
        with self._lock:
            return {
                "rpm": self.rpm,
                "tpm": self.tpm,
                "waits": dict(sorted(self.waits.items())),
                "held_seconds": round(self.held_now(), 2),
                "provider_pauses": self.pauses,
            }


def estimate_tokens(prompt: str | None = None, messages: list[dict[str, Any]] | None = None) -> int:
    """A request's prompt tokens before it is sent: its text's characters over four (images count nothing)."""
    chars = len(prompt or "")
    for message in messages or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            chars += len(content)
        elif isinstance(content, list):
            chars += sum(len(part.get("text") or "") for part in content if isinstance(part, dict))
    return chars // CHARS_PER_TOKEN


_limiters: dict[tuple, RateLimit] = {}
_limiters_lock = threading.Lock()


def limiter_for(
    role: str, model: str, *, rpm: int | None = None, tpm: int | None = None, address: str | None = None
) -> RateLimit:
    """The process's limiter for ``role`` on ``model`` (at ``address``) with these caps: the same object for every
    run and thread of this process that asks for the same, so a table's cells and a study's trials share it."""
    key = (role, model, address, rpm, tpm, WINDOW)
    with _limiters_lock:
        found = _limiters.get(key)
        if found is None:
            found = _limiters[key] = RateLimit(rpm, tpm, name=role, window=WINDOW)
        return found


def waited() -> dict[str, tuple[float, frozenset[str]]]:
    """How long the process's limiters held requests back so far, by role: (seconds, the causes)."""
    totals: dict[str, tuple[float, frozenset[str]]] = {}
    with _limiters_lock:
        limiters = list(_limiters.values())
    for limiter in limiters:
        with limiter._lock:
            seconds, causes = limiter.held_now(), frozenset(c for c, n in limiter.waits.items() if n)
        before = totals.get(limiter.name, (0.0, frozenset()))
        totals[limiter.name] = (before[0] + seconds, before[1] | causes)
    return totals


def slowed(since: dict[str, tuple[float, frozenset[str]]]) -> str | None:
    """What held requests back since ``since`` (:func:`waited` then), for a progress line: ``"task 37s (rpm)"``,
    ``"task 30s (rpm), memory 4s (retry-after)"``; None when nothing did (less than a second)."""
    parts = []
    for role, (seconds, causes) in sorted(waited().items()):
        before, known = since.get(role, (0.0, frozenset()))
        if seconds - before >= 1.0:
            parts.append(f"{role} {seconds - before:.0f}s ({', '.join(sorted(causes - known or causes))})")
    return ", ".join(parts) or None
