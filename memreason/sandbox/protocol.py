"""Length-prefixed JSON frames over pipes.

Every channel in the sandbox carries frames: a 4-byte big-endian length and
that many bytes of UTF-8 JSON. JSON (never pickle) because the reading side
may be more trusted than the writing side; every reader bounds frame sizes.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from typing import Any

_HEADER = struct.Struct(">I")


class ProtocolError(Exception):
    """The peer sent something that is not a well-formed frame, or hung up."""


def encode(message: Any) -> bytes:
    body = json.dumps(message, separators=(",", ":")).encode()
    return _HEADER.pack(len(body)) + body


def write_frame(fd: int, message: Any) -> None:
    """Write one frame, retrying partial writes."""
    data = memoryview(encode(message))
    while data:
        written = os.write(fd, data)
        data = data[written:]


class FrameReader:
    """Incremental frame decoder: feed it bytes, get complete messages back."""

    def __init__(self, max_frame_bytes: int) -> None:
        self._buffer = bytearray()
        self._max = max_frame_bytes

    def feed(self, data: bytes) -> list[Any]:
        self._buffer += data
        messages = []
        while len(self._buffer) >= _HEADER.size:
            (length,) = _HEADER.unpack_from(self._buffer)
            if length > self._max:
                raise ProtocolError(f"frame of {length} bytes exceeds {self._max}")
            end = _HEADER.size + length
            if len(self._buffer) < end:
                break
            body = bytes(self._buffer[_HEADER.size : end])
            del self._buffer[:end]
            try:
                messages.append(json.loads(body))
            except (ValueError, RecursionError) as error:  # RecursionError: hostile nesting
                raise ProtocolError(f"frame is not JSON: {type(error).__name__}") from None
        return messages

    @property
    def pending(self) -> bool:
        return bool(self._buffer)


def read_frame(fd: int, reader: FrameReader, deadline: float | None = None) -> Any:
    """Block until one frame arrives on `fd` (a blocking pipe); None-deadline waits forever.

    Raises `ProtocolError` on end of file or when more than one frame arrives
    at once (the channels using this are strictly request/response), and
    `TimeoutError` past `deadline` (a `time.monotonic()` value).
    """
    while True:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no frame before the deadline")
            if not _readable(fd, remaining):
                continue
        data = os.read(fd, 1 << 16)
        if not data:
            raise ProtocolError("peer closed the channel")
        messages = reader.feed(data)
        if len(messages) > 1 or (messages and reader.pending):
            raise ProtocolError("unexpected extra frame")
        if messages:
            return messages[0]


def _readable(fd: int, seconds: float) -> bool:
    """Wait up to ``seconds`` for ``fd`` to be readable (poll, not select: a busy host may hold fds past 1024)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(max(0, int(seconds * 1000)) or 1))
