"""A loopback OpenAI-compatible server with latency and seeded faults, for tests and benchmarks.

    server = StubServer(latency=0.2, fail_rate=0.2, seed=0).start()   # 127.0.0.1, a free port
    lm = dspy.LM("openai/stub", api_base=server.url, api_key="x")
    ...
    server.served          # {"ok": 96, "rate_limit": 2, "server_error": 1, "timeout": 1, "unparseable": 0}
    server.stop()

    python -m memreason.lm.stub_server --latency 0.2 --fail-rate 0.2   # prints its base URL, serves until --lifetime
                                                                     # (the command: stub_server/__main__.py)

It answers ``POST /v1/chat/completions`` in DSPy's formats: ``[[ ## field ## ]]`` markers
for ChatAdapter requests, a JSON object when the request carries ``response_format`` or
asks for JSON (JSONAdapter). Every answer is a function of the request's messages, so a
rerun gets the same answers. Whether a request fails, and how (HTTP 429, HTTP 500, a
hang past the client's timeout, or text no adapter can parse; HTTP 401 when ``faults``
names ``auth``; a 200 with an HTML page or an empty body when it names ``html`` or ``empty_body``), is a seeded function of
the messages and of how many times this server has already seen them, so a run against a
fresh server meets the same faults in any thread order. ``GET /stats`` returns what was
served by kind and a log of requests (each with ``at``: seconds since the server started, when it
arrived). The server stops by itself after ``lifetime`` seconds, so a test that dies cannot leave it behind.

A provider's own rate limit: with ``limit=N`` it accepts at most N chat requests in any ``limit_window``
seconds (60: requests per minute) and answers the others 429 with ``retry-after`` (whole seconds) and
``retry-after-ms`` headers saying when the oldest accepted request leaves the window (``retry_after``:
``"both"``, ``"seconds"``, ``"ms"`` or ``"none"``); they are logged with ``"limited": true``, and seeded faults
are drawn for accepted requests only. ``answer_model`` is the ``model`` its answers name (default: the
one asked for) and ``fingerprint`` their ``system_fingerprint`` (default: none), as a provider's do.

A request with ``"stream": true`` gets the same answer streamed as an OpenAI-compatible
server streams it: Server-Sent Events, one ``chat.completion.chunk`` per word
(``data: {...}``), a chunk with the ``finish_reason``, a usage chunk when
``stream_options.include_usage`` asks for one, then ``data: [DONE]``; so ``dspy.streamify``
and DSPy's stream listeners can be tested against it. Faults are answered as errors before
any event, as OpenAI does. The listen queue holds ``BACKLOG`` connections, so a burst of
concurrent calls waits to be accepted instead of being reset.

Recorded provider shapes: ``shapes`` maps a route (``"openai"``: ``POST .../chat/completions``; ``"anthropic"``:
``POST .../messages``; ``"gemini"``: ``POST .../models/NAME:generateContent``) to a response body as that
provider documents it (a key ``route:MODEL``, such as ``openai:gpt-4.1``, answers that model alone), with
``"{{answer}}"`` where the model's text goes and ``"{{model}}"`` for the model asked
for (``load_shape(path)`` reads one from a JSON file: ``{"route": ..., "response": {...}}``). The stub answers
each route in its recorded shape (usage blocks, reasoning tokens, ``system_fingerprint``, thinking blocks as
recorded), with the text a function of the request as always; Anthropic's and Gemini's requests are read as chat
messages for that (their ``system``/``system_instruction`` and ``messages``/``contents``). ``received`` holds
every request as it arrived (its path and JSON body, credentials left out), so a test can assert what a client
sent.

A request with ``"n": k`` gets k answers (choice i answers as for the key of the request and
i), with llama-server's usage: one answer's completion tokens (``POST /tokenize`` splits text
into words, so a client can count the others).

It also answers what the library asks of a ``llama-server`` (``GET /health``, ``GET /metrics``
with ``llamacpp:n_decode_total``, a step every 50 ms while a completion is being answered, or
none with ``frozen``, as a hung server; ``GET /slots``,
``POST /slots/N?action=save|restore``, ``POST /tokenize``, recorded in ``/stats``), so a test can stand it in
for one: ``python -m memreason.lm.stub_server --as-llama-server ... --port P`` takes and ignores
llama-server's other flags.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FAULTS = ("rate_limit", "server_error", "timeout", "unparseable")
GARBAGE = "Sorry, I would rather describe the picture in my own words."
BACKLOG = 128  # the listen queue (Python's default, 5, resets connections when 16 calls arrive at once)
_FIELD = re.compile(r"^\d+\. `(\w+)` \(([^)]*)\)", re.M)
_PIECE = re.compile(r"\s*\S+|\s+")  # a streamed chunk: a word with the whitespace before it


class _HTTPServer(ThreadingHTTPServer):
    request_queue_size = BACKLOG
    daemon_threads = True


class StubServer:
    """The server, run on a daemon thread of this process."""

    def __init__(
        self,
        *,
        latency: float = 0.2,
        fail_rate: float = 0.2,
        seed: int = 0,
        hang: float = 5.0,
        lifetime: float = 300.0,
        faults: tuple[str, ...] = FAULTS,
        port: int = 0,
        slots: int = 4,
        frozen: bool = False,
        shapes: dict[str, dict[str, Any]] | None = None,
        limit: int | None = None,
        limit_window: float = 60.0,
        retry_after: str = "both",
        answer_model: str | None = None,
        fingerprint: str | None = None,
    ):
        self.latency, self.fail_rate, self.seed, self.hang = latency, fail_rate, seed, hang
        self.lifetime, self.faults, self.port, self.slots = lifetime, tuple(faults), port, slots
        self.served: dict[str, int] = {kind: 0 for kind in ("ok", *FAULTS, *faults)}
        self.log: list[dict[str, Any]] = []
        self.slot_actions: list[str] = []
        self.frozen, self.decode_steps = frozen, 0
        self.shapes = dict(shapes or {})
        self.received: list[dict[str, Any]] = []  # every request: {"path", "body"}
        self.limit, self.limit_window, self.retry_after = limit, limit_window, retry_after
        self.answer_model, self.fingerprint = answer_model, fingerprint
        self.accepted: list[float] = []  # arrival times of the chat requests accepted within the limit's window
        self.started = time.monotonic()
        self._seen: dict[str, int] = {}
        self._lock = threading.Lock()
        self._httpd: _HTTPServer | None = None
        self._timer: threading.Timer | None = None

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def running(self) -> bool:
        """Whether it still serves (``stop`` was not called and ``lifetime`` has not passed)."""
        return self._httpd is not None

    def start(self) -> "StubServer":
        handler = type("Handler", (_Handler,), {"stub": self})
        self._httpd = _HTTPServer(("127.0.0.1", self.port), handler)
        threading.Thread(target=self._httpd.serve_forever, name="stub-server", daemon=True).start()
        self._timer = threading.Timer(self.lifetime, self.stop)
        self._timer.daemon = True
        self._timer.start()
        return self

    def stop(self) -> None:
        if self._timer:
            self._timer.cancel()
        if self._httpd:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> "StubServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {
                "served": dict(self.served),
                "requests": list(self.log),
                "slot_actions": list(self.slot_actions),
                "received": list(self.received),
            }

    def bodies(self, route: str | None = None) -> list[dict[str, Any]]:
        """The JSON bodies of the requests received (on ``route``'s paths only: ``openai``, ``anthropic``, ``gemini``)."""
        with self._lock:
            return [r["body"] for r in self.received if route is None or route_of(r["path"]) == route]

    def stamped(self, completion: dict[str, Any]) -> dict[str, Any]:
        """``completion`` naming ``answer_model`` and carrying ``fingerprint``, where they are set."""
        if self.answer_model:
            completion["model"] = self.answer_model
        if self.fingerprint:
            completion["system_fingerprint"] = self.fingerprint
        return completion

    # -- deciding an answer ---------------------------------------------------------------

    def admit(self, body: dict[str, Any]) -> float | None:
        """None when the request is within ``limit`` (it is counted), else seconds until the window has room (logged
        as refused)."""
        if self.limit is None:
            return None
        now = time.monotonic()
        with self._lock:
            self.accepted = [t for t in self.accepted if t > now - self.limit_window]
            if len(self.accepted) < self.limit:
                self.accepted.append(now)
                return None
            wait = self.accepted[0] + self.limit_window - now
            self.served["rate_limit"] += 1
            self.log.append(
                {"kind": "rate_limit", "limited": True, "at": round(now - self.started, 4), "user": _user_text(body), "n": 1}
            )
        return max(wait, 0.001)

    def decide(self, body: dict[str, Any]) -> tuple[str, str]:
        """(kind, key) for one request: a seeded function of its messages and their repeat count."""
        key = hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode()).hexdigest()
        with self._lock:
            seen = self._seen.get(key, 0)
            self._seen[key] = seen + 1
        draw = hashlib.sha256(f"{self.seed}:{key}:{seen}".encode()).digest()
        fails = int.from_bytes(draw[:4], "big") / 2**32 < self.fail_rate and self.faults
        kind = self.faults[draw[4] % len(self.faults)] if fails else "ok"
        with self._lock:
            self.served[kind] += 1
            self.log.append(
                {
                    "kind": kind,
                    "key": key,
                    "repeat": seen,
                    "at": round(time.monotonic() - self.started, 4),
                    "user": _user_text(body),
                    "n": int(body.get("n") or 1),
                }
            )
        return kind, key


ROUTES = ("openai", "anthropic", "gemini")


def route_of(path: str) -> str | None:
    """Which provider's API a request path belongs to (None: no completion route)."""
    path = path.split("?", 1)[0].rstrip("/")
    if path.endswith("/chat/completions"):
        return "openai"
    if path.endswith("/messages"):
        return "anthropic"
    if path.endswith(":generateContent"):
        return "gemini"
    return None


def load_shape(path: Any) -> tuple[str, dict[str, Any]]:
    """(route, response template) from a recorded-shape file: ``{"route": "openai", "response": {...}}``."""
    with open(path) as handle:
        data = json.load(handle)
    if data.get("route") not in ROUTES or not isinstance(data.get("response"), dict):
        raise ValueError(f"{path}: a shape file holds a route ({', '.join(ROUTES)}) and a response object")
    return data["route"], data["response"]


def as_chat(route: str, body: dict[str, Any]) -> dict[str, Any]:
    """A request of ``route`` read as an OpenAI chat request (messages, whether it asks for JSON), to answer it."""
    if route == "anthropic":
        messages = [{"role": "system", "content": _text(body.get("system"))}] if body.get("system") else []
        messages += [{"role": m.get("role"), "content": _text(m.get("content"))} for m in body.get("messages") or []]
        return {"messages": messages, "model": body.get("model")}
    if route == "gemini":
        system = body.get("system_instruction") or body.get("systemInstruction")
        messages = [{"role": "system", "content": _text((system or {}).get("parts"))}] if system else []
        for item in body.get("contents") or []:
            role = "assistant" if item.get("role") == "model" else "user"
            messages.append({"role": role, "content": _text(item.get("parts"))})
        config = body.get("generationConfig") or body.get("generation_config") or {}
        wants = config.get("responseMimeType") or config.get("response_mime_type")
        return {"messages": messages, "response_format": {"type": "json"} if wants == "application/json" else None}
    return body


def _text(content: Any) -> str:
    """The text of a message's content: a string, or the ``text`` of its parts or blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        return str(content.get("text") or "")
    return "\n".join(str(part.get("text") or "") for part in content if isinstance(part, dict))


def fill_shape(template: Any, text: str, model: str) -> Any:
    """``template`` with ``{{answer}}`` replaced by ``text`` and ``{{model}}`` by ``model``, wherever they occur."""
    if isinstance(template, str):
        return template.replace("{{answer}}", text).replace("{{model}}", model)
    if isinstance(template, list):
        return [fill_shape(item, text, model) for item in template]
    if isinstance(template, dict):
        return {key: fill_shape(value, text, model) for key, value in template.items()}
    return template


def answer_text(body: dict[str, Any], key: str) -> str:
    """The deterministic answer to a request, in the format its adapter expects."""
    system = next((m.get("content") for m in body.get("messages", []) if m.get("role") == "system"), "") or ""
    if not isinstance(system, str):
        system = " ".join(part.get("text", "") for part in system if isinstance(part, dict))
    section = system.split("Your output fields are:", 1)[-1].split("All interactions", 1)[0]
    fields = _FIELD.findall(section) or [("answer", "str")]
    values = {name: _value(kind, key, name) for name, kind in fields}
    wants_json = body.get("response_format") is not None or "Respond with a JSON object" in _user_text(body)
    if wants_json:
        return json.dumps(values)
    parts = [f"[[ ## {name} ## ]]\n{value if isinstance(value, str) else json.dumps(value)}" for name, value in values.items()]
    return "\n\n".join(parts) + "\n\n[[ ## completed ## ]]"


def _value(kind: str, key: str, name: str) -> Any:
    if kind.startswith("int"):
        return int(key[:8], 16) % 5
    if kind.startswith(("list", "set", "tuple")):
        return []
    if kind.startswith("bool"):
        return int(key[8:10], 16) % 2 == 0
    if kind.startswith("float"):
        return round(int(key[:8], 16) % 100 / 100, 2)
    return f"stub {name}"


def _user_text(body: dict[str, Any]) -> str:
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    content = users[-1].get("content", "") if users else ""
    if isinstance(content, list):
        content = "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


class _Handler(BaseHTTPRequestHandler):
    stub: StubServer
    protocol_version = "HTTP/1.1"
    wbufsize = 1 << 16  # headers and body leave in one packet (flushed after each request)

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no Nagle wait on small answers

    def log_message(self, *args) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        path = self.path.rstrip("/")
        if path.endswith("/stats"):
            self._send(200, self.stub.stats())
        elif path == "/health":
            self._send(200, {"status": "ok"})
        elif path == "/metrics":
            text = f"# TYPE llamacpp:n_decode_total counter\nllamacpp:n_decode_total {self.stub.decode_steps}\n"
            self._send_raw(200, text.encode(), "text/plain")
        elif path == "/slots":
            used = len(self.stub.log)
            self._send(
                200,
                [
                    {"id": i, "is_processing": False, "id_task": used - i, "n_prompt_tokens": 100 if used else 0}
                    for i in range(self.stub.slots)
                ],
            )
        else:
            self._send(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            self._send(400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
            return
        if self.path.startswith("/slots/"):
            with self.stub._lock:
                self.stub.slot_actions.append(self.path.removeprefix("/slots/"))
            self._send(200, {"filename": body.get("filename"), "n_saved": 100})
            return
        if self.path.rstrip("/") == "/tokenize":
            self._send(200, {"tokens": list(range(len(str(body.get("content", "")).split())))})
            return
        route = route_of(self.path)
        if route is None or (route != "openai" and not any(key.split(":")[0] == route for key in self.stub.shapes)):
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})
            return
        with self.stub._lock:
            self.stub.received.append({"path": self.path, "body": body})
        chat = as_chat(route, body)
        wait = self.stub.admit(chat)
        if wait is not None:
            headers = {}
            if self.stub.retry_after in ("both", "seconds"):
                headers["retry-after"] = str(max(1, math.ceil(wait)))
            if self.stub.retry_after in ("both", "ms"):
                headers["retry-after-ms"] = str(math.ceil(wait * 1000))
            message = f"rate limit of {self.stub.limit} requests per {self.stub.limit_window:g} s reached"
            self._send(429, {"error": {"message": message, "type": "rate_limit_error"}}, headers)
            return
        kind, key = self.stub.decide(chat)
        self._decode(self.stub.latency)
        if kind == "rate_limit":
            self._send(429, {"error": {"message": "rate limit reached, slow down", "type": "rate_limit_error"}})
        elif kind == "server_error":
            self._send(500, {"error": {"message": "the stub had a bad day", "type": "server_error"}})
        elif kind == "auth":  # not in FAULTS: only when asked for
            self._send(
                401,
                {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}},
            )
        elif kind == "html":  # not in FAULTS: a proxy's error page with status 200
            self._send_raw(200, b"<html><body><h1>Bad gateway</h1></body></html>", "text/html")
        elif kind == "empty_body":  # not in FAULTS: status 200 and nothing else
            self._send_raw(200, b"", "application/json")
        elif kind == "timeout":
            time.sleep(self.stub.hang)
            self._send(504, {"error": {"message": "too late", "type": "timeout"}})
        else:
            text = GARBAGE if kind == "unparseable" else answer_text(chat, key)
            model = str(body.get("model") or self.path.rsplit("/", 1)[-1].split(":", 1)[0])
            shape = self.stub.shapes.get(f"{route}:{model}") or self.stub.shapes.get(route)
            if shape is not None:
                self._send(200, fill_shape(shape, text, model))
            elif body.get("stream"):
                self._stream(_stream_chunks(body, text, key))
            else:
                self._send(200, self.stub.stamped(_completion(body, text, key)))

    def _decode(self, seconds: float) -> None:
        """Wait ``seconds`` as a server decoding: a step every 50 ms (none when frozen)."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            time.sleep(min(0.05, left))
            if not self.stub.frozen:
                with self.stub._lock:
                    self.stub.decode_steps += 1

    def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(payload).encode(), "application/json", headers)

    def _send_raw(self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout fault)
            pass

    def _stream(self, chunks: list[dict[str, Any]]) -> None:
        """Server-Sent Events in HTTP/1.1 chunked encoding, each event flushed as it is written."""
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for event in [*(json.dumps(chunk) for chunk in chunks), "[DONE]"]:
                data = f"data: {event}\n\n".encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):  # the client stopped reading
            self.close_connection = True


def _usage(body: dict[str, Any], text: str) -> dict[str, int]:
    prompt = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
    return {"prompt_tokens": prompt, "completion_tokens": len(text.split()), "total_tokens": prompt + len(text.split())}


def _completion(body: dict[str, Any], text: str, key: str) -> dict[str, Any]:
    n = max(1, int(body.get("n") or 1))
    texts = [text] + [
        answer_text(body, hashlib.sha256(f"{key}/{i}".encode()).hexdigest()) if text != GARBAGE else text for i in range(1, n)
    ]
    return {
        "id": f"chatcmpl-{key[:12]}",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "stub"),
        "choices": [
            {"index": i, "message": {"role": "assistant", "content": t}, "finish_reason": "stop"} for i, t in enumerate(texts)
        ],
        "usage": _usage(body, text),  # as llama-server: one answer's completion tokens
    }


def _stream_chunks(body: dict[str, Any], text: str, key: str) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects an OpenAI-compatible server streams for ``text``.

    The role first, then the text a word at a time, then the ``finish_reason``; the usage in a
    last chunk with no choices when ``stream_options.include_usage`` asks for it.
    """

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-{key[:12]}",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": body.get("model", "stub"),
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": piece}) for piece in _PIECE.findall(text)]
    chunks.append(chunk({}, "stop"))
    if (body.get("stream_options") or {}).get("include_usage"):
        chunks.append({**chunk({}), "choices": [], "usage": _usage(body, text)})
    return chunks
