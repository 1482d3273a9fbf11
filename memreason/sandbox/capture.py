"""Bounded capture of a program's stdout or stderr, split into per-grid segments.

After each grid the program process flushes its streams and writes a marker
(random bytes chosen per call) to both, before it reports the grid's result.
A pipe is first-in first-out, so everything before the k-th marker was
written while handling the k-th grid. A program that writes the marker
itself, or closes or redirects its descriptors, only shifts its own output
between its own grids. Each segment keeps at most `limit` bytes.
"""

from __future__ import annotations

from collections import deque


class _Segment:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        room = max(0, self.limit - len(self.data))
        self.data += chunk[:room]
        self.dropped += max(0, len(chunk) - room)

    def text(self) -> str:
        text = self.data.decode("utf-8", errors="replace")
        return text + (f"\n[... {self.dropped} more bytes dropped]" if self.dropped else "")


class StreamCapture:
    """Feed it the bytes read from one pipe; `take()` returns the oldest finished segment."""

    def __init__(self, limit: int, marker: bytes) -> None:
        self._limit = limit
        self._marker = marker
        self._tail = b""  # bytes that may be the start of a marker
        self._current = _Segment(limit)
        self._finished: deque[_Segment] = deque()

    def feed(self, chunk: bytes) -> None:
        data = self._tail + chunk
        while (found := data.find(self._marker)) >= 0:
            self._current.add(data[:found])
            self._finished.append(self._current)
            self._current = _Segment(self._limit)
            data = data[found + len(self._marker) :]
        keep = min(len(data), len(self._marker) - 1)
        self._current.add(data[: len(data) - keep])
        self._tail = data[len(data) - keep :]

    def take(self) -> str:
        """The oldest segment ended by a marker, or else everything received so far."""
        if self._finished:
            return self._finished.popleft().text()
        self._current.add(self._tail)
        self._tail = b""
        segment, self._current = self._current, _Segment(self._limit)
        return segment.text()
