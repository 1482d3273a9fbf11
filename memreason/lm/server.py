"""The embedded model served by llama.cpp's own HTTP server on loopback.

    server = local_server("model.gguf", slots=8)   # one per model file in this process
    server.url                                    # http://127.0.0.1:PORT/v1, started on first use
    lm = LlamaServerLM("llamacpp/model", server)  # a dspy.LM on DSPy's OpenAI-compatible path
    server.stop()                                 # also at exit, and by the kernel if we are killed

Why a server: a crash in llama.cpp (its AMX path segfaults on some Intel CPUs) takes
only the server down, not the run; and the server decodes its slots together
(continuous batching), so ``--threads T`` requests really run at once.

- **Safe on every x86-64 CPU.** The server starts with ``--no-repack``: no extra buffer
  types, so llama.cpp never repacks weights into the AMX layout (nor the AVX2 one).
  ``repack=True`` (or ``MEMREASON_LLAMA_REPACK=1``) turns repacking back on for a CPU
  where you have checked it works; here (AMD EPYC, AVX-512) it decodes about 20% faster.
- **Survives its engine.** When a call fails and the server process is gone (segfault,
  out of memory, ``kill -9``), :class:`LlamaServerLM` starts a new one on the same port
  and raises :class:`EngineDied`; the harness counts it as the fault ``engine_died`` and
  repeats the call (``memreason.lm.faults``).
- **Waits for a busy server, restarts a hung one.** A call has no short timeout: on 2 cores
  with many long prompts queued, an answer can take far longer than any fixed limit, and a
  call given up is work the server throws away. Instead, while calls are in flight, a
  watchdog reads the server's decode counter (``/metrics``); when it has not moved for
  ``stall_seconds`` (default 900; ``MEMREASON_LLAMA_STALL_SECONDS``), the server is hung: it
  is killed, and the calls waiting on it fail as ``EngineDied`` and are repeated.
- **Leaves nothing behind.** The server is stopped at exit and on Ctrl-C, and is
  started with ``PR_SET_PDEATHSIG`` from a thread that lives as long as this process,
  so the kernel kills it if this process is killed. Each process picks a free port:
  two runs on one machine never share a server.
- **Prefix reuse.** Each slot keeps the KV cache of its last prompt and llama.cpp sends
  a request to the slot whose cache matches it best, so what repeats (instructions,
  episodes, memory) is evaluated once per slot.
- **Deterministic mode** (``deterministic=True``, or ``MEMREASON_LLAMA_DETERMINISTIC=1``). At
  temperature 0 the default server can answer one prompt two ways: the arithmetic of a
  batch depends on its batch mates, and a prompt whose prefix comes from the cache is
  evaluated in other chunks than one evaluated whole. In this mode the server has one slot
  (one request at a time), keeps no prompt cache in memory (``--cache-ram 0``) and reuses
  no cached prefix (``--no-cache-prompt``), so a prompt is always evaluated the same way:
  equal prompts, equal answers, at the cost of batching and prefix reuse
  (``python -m memreason.eval.bench deterministic`` measures both).
"""

from __future__ import annotations

import atexit
import ctypes
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import dspy
from dspy.utils.exceptions import LMTransportError

from .cache import cache_dir
from .llama_build import server_binary

PROVIDER = "llamacpp"
SLOTS = 8  # requests decoded together by default
CONTEXT_PER_SLOT = 8192
MAX_TOKENS = 1024  # the server's cap when a request names none
STALL_SECONDS = 900.0  # calls in flight and no decode step for this long: the server is hung
CALL_TIMEOUT = 6 * 3600.0  # the last resort, for a server whose decode counter cannot be read
ENV_STALL = "MEMREASON_LLAMA_STALL_SECONDS"
ENV_REPACK = "MEMREASON_LLAMA_REPACK"  # "1": let llama.cpp repack weights (AMX on Intel): only where it is known to work
ENV_DETERMINISTIC = "MEMREASON_LLAMA_DETERMINISTIC"  # "1": one request at a time, no prompt cache (equal prompts, equal answers)


log = logging.getLogger(__name__)


class ServerFailed(RuntimeError):
    """llama-server would not start (not a GGUF file, out of memory, no free port, ...)."""


class EngineDied(ConnectionError):
    """The server process died during a call; a new one was started, so the call can be repeated."""


class TextOnlyModel(ValueError):
    """A request with images reached a model that reads only text."""


@dataclass
class EngineStats:
    """Running totals over the calls a server answered (DSPy cache hits are not calls).

    ``seconds`` adds up each call's latency, so with concurrent calls it exceeds the wall time.
    """

    calls: int = 0
    prompt_tokens: int = 0
    reused_prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    restarts: int = 0
    stalls: int = 0  # restarts because calls were in flight and the server stopped decoding
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, usage: dict[str, Any], seconds: float) -> None:
        details = usage.get("prompt_tokens_details") or {}
        with self.lock:
            self.calls += 1
            self.prompt_tokens += int(usage.get("prompt_tokens") or 0)
            self.reused_prompt_tokens += int(details.get("cached_tokens") or 0)
            self.completion_tokens += int(usage.get("completion_tokens") or 0)
            self.seconds += seconds

    def as_dict(self) -> dict[str, Any]:
        with self.lock:
            data = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "lock"}
        data["seconds"] = round(data["seconds"], 2)
        return data


def server_command(
    binary: str | Path,
    model: str | Path,
    port: int,
    *,
    slots: int = SLOTS,
    context: int = CONTEXT_PER_SLOT,
    threads: int | None = None,
    repack: bool = False,
    slot_files: str | Path | None = None,
    extra: tuple[str, ...] = (),
    deterministic: bool = False,
) -> list[str]:
    """The ``llama-server`` command line for one model on a loopback port (``deterministic``: one slot, no prompt
    cache kept in memory)."""
    if deterministic:
        slots = 1
    command = [
        str(binary),
        "--model",
        str(model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--parallel",
        str(slots),
        "--ctx-size",
        str(slots * context),
        "--cont-batching",
        "--threads",
        str(threads or os.cpu_count() or 1),
        "--n-predict",
        str(MAX_TOKENS),
        "--no-webui",
        "--cache-ram",
        "0" if deterministic else "2048",
        "--metrics",  # /metrics: the prompt tokens the server really evaluated (benchmarks read it)
    ]
    if deterministic:
        command.append("--no-cache-prompt")
    if slot_files:
        command += ["--slot-save-path", str(slot_files)]
    command += list(extra)
    if not repack:
        command.append("--no-repack")
    return command


class LlamaServer:
    """One ``llama-server`` process for one GGUF file, restarted when it dies."""

    def __init__(
        self,
        model: str | Path,
        *,
        slots: int = SLOTS,
        context: int = CONTEXT_PER_SLOT,
        threads: int | None = None,
        repack: bool | None = None,
        binary: str | Path | None = None,
        start_timeout: float = 300.0,
        extra: tuple[str, ...] = (),
        deterministic: bool | None = None,
    ):
        self.model = Path(model)
        if deterministic is None:
            deterministic = os.environ.get(ENV_DETERMINISTIC) == "1"
        self.deterministic = deterministic
        self.extra = tuple(extra)  # more llama-server flags (e.g. ("-lv", "4") for a verbose log)
        if repack is None:
            repack = os.environ.get(ENV_REPACK) == "1"
        self.slots, self.context, self.threads, self.repack = slots, context, threads, repack
        self.binary = binary
        self.start_timeout = start_timeout
        self.stats = EngineStats()
        self.generation = 0  # how many processes this server has started
        self.port: int | None = None
        self.log_path: Path | None = None
        self._process: subprocess.Popen | None = None
        self._slot_files = tempfile.TemporaryDirectory(prefix="llama-slots-")  # KV caches copied between slots
        self._lock = threading.RLock()
        stall = os.environ.get(ENV_STALL)
        self.stall_seconds = float(stall) if stall else STALL_SECONDS
        self._in_flight = 0
        self._watchdog: threading.Thread | None = None

    # -- state ----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The OpenAI-compatible base URL, starting the server if it is not running."""
        self.ensure()
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def command(self, port: int) -> list[str]:
        binary = self.binary or server_binary()
        return server_command(
            binary,
            self.model,
            port,
            slots=self.slots,
            context=self.context,
            threads=self.threads,
            repack=self.repack,
            slot_files=self._slot_files.name,
            extra=self.extra,
            deterministic=self.deterministic,
        )

    def share_prefix(self) -> int:
        """Copy the KV cache of the slot used last into every other idle slot; returns how many got it.

        llama-server reuses a prompt prefix only within the slot that computed it, so T
        requests sent at once would each compute the prefix they share. After one of them has
        run alone, this saves its slot and restores it into the others (a file copy of the KV
        cache, milliseconds), so every slot starts from the shared prefix.
        """
        self.ensure()
        slots = self._request("GET", "/slots")
        idle = [slot for slot in slots if not slot.get("is_processing")]
        used = [slot for slot in idle if slot.get("n_prompt_tokens")]
        if not used or len(idle) < 2:
            return 0
        source = max(used, key=lambda slot: slot.get("id_task", -1))
        name = {"filename": "shared-prefix.bin"}
        self._request("POST", f"/slots/{source['id']}?action=save", name)
        for slot in idle:
            if slot["id"] != source["id"]:
                self._request("POST", f"/slots/{slot['id']}?action=restore", name)
        return len(idle) - 1

    def erase_slots(self) -> None:
        """Empty every slot's KV cache (a benchmark pass then pays for its prefix again)."""
        for slot in self._request("GET", "/slots"):
            self._request("POST", f"/slots/{slot['id']}?action=erase", {})

    def _request(self, method: str, path: str, body: dict | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}", data=data, method=method, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=120) as answer:
            return json.load(answer)

    # -- calls in flight, and the watchdog that tells a busy server from a hung one ---------------

    def call_started(self) -> None:
        """A call is waiting on the server (:meth:`call_ended` when it returns or fails)."""
        with self._lock:
            self._in_flight += 1
            if self._watchdog is None or not self._watchdog.is_alive():
                self._watchdog = threading.Thread(target=self._watch, name="llama-server-watchdog", daemon=True)
                self._watchdog.start()

    def call_ended(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def decode_steps(self, timeout: float) -> int | None:
        """The server's count of decode steps (``llamacpp:n_decode_total``); None if it did not answer within
        ``timeout`` seconds (it answers between two steps, so a long step delays it); -1 if it answered
        without the counter (a server of your own without ``/metrics``: it cannot be watched)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=timeout) as answer:
                text = answer.read().decode("utf-8", "replace")
        except urllib.error.HTTPError:
            return -1
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError, ValueError):
            return None
        found = re.search(r"^llamacpp:n_decode_total\s+([0-9.eE+]+)", text, re.M)
        return int(float(found.group(1))) if found else -1

    def _watch(self) -> None:
        """While calls are in flight, kill the server if its decode counter stands still, or it does not
        answer, for ``stall_seconds``; the calls then fail as :class:`EngineDied` and are repeated."""
        poll = max(0.05, min(30.0, self.stall_seconds / 10))
        seen: tuple[int, int] | None = None  # (process generation, decode steps) last read
        since = time.monotonic()  # when the server was last seen to make progress (or to be idle)
        while True:
            time.sleep(poll)
            with self._lock:
                busy, generation, process = self._in_flight > 0, self.generation, self._process
            if not busy or process is None or process.poll() is not None:
                seen, since = None, time.monotonic()
                continue
            steps = self.decode_steps(timeout=max(poll, min(120.0, self.stall_seconds / 2)))
            if steps == -1 or (steps is not None and (generation, steps) != seen):
                seen, since = (generation, steps), time.monotonic()
                continue
            if time.monotonic() - since <= self.stall_seconds:
                continue
            with self._lock:
                if self._process is process and process.poll() is None:
                    self.stats.stalls += 1
                    log.warning(
                        "llama-server (pid %s) made no decode step in %.0f s with calls waiting (its log: %s); "
                        "killing it: the calls are repeated on a new one",
                        process.pid,
                        self.stall_seconds,
                        self.log_path,
                    )
                    process.kill()
            seen, since = None, time.monotonic()

    # -- life cycle -----------------------------------------------------------------------

    def ensure(self) -> None:
        """Start the server unless it is running."""
        with self._lock:
            if not self.alive():
                if self._process is not None:  # it died between calls
                    self.stats.restarts += 1
                self._start()

    def replace_if_dead(self, generation: int) -> bool:
        """After a failed call made on process ``generation``: True if that process died (a new one now runs)."""
        with self._lock:
            if self.generation != generation:
                return True  # another thread saw it die and started the next one
            process = self._process
            if process is None:
                return False
            try:
                process.wait(timeout=1.0)  # a killed process may take a moment to be reaped
            except subprocess.TimeoutExpired:
                return False
            self.stats.restarts += 1
            log.warning(
                "llama-server (pid %s) died with exit %s (its log: %s); starting a new one",
                process.pid,
                process.returncode,
                self.log_path,
            )
            self._start()
            return True

    def stop(self) -> None:
        with self._lock:
            process, self._process = self._process, None
            ours = process is not None and process.poll() is None  # running until we stop it (not crashed)
            if ours:
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            if self.log_path is not None and ours:  # we stopped it: its log has nothing to tell
                self.log_path.unlink(missing_ok=True)
            for saved in Path(self._slot_files.name).glob("*"):
                saved.unlink(missing_ok=True)

    def _start(self) -> None:
        if not self.model.is_file():
            raise ServerFailed(f"no model file at {self.model}")
        logs = cache_dir() / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        keep_port = self.port  # a restart reuses the port, so URLs already handed out stay valid
        last = ""
        for attempt in range(3):
            port = keep_port if keep_port and attempt == 0 else _free_port()
            command = self.command(port)
            handle, name = tempfile.mkstemp(prefix=f"llama-server-{os.getpid()}-", suffix=".log", dir=logs)
            with os.fdopen(handle, "w") as log:
                process = _spawn(command, log)
            self._process, self.port, self.log_path = process, port, Path(name)
            if self._wait_ready(process):
                self.generation += 1
                return
            last = _tail(self.log_path)
            if "bind" not in last.lower() and "address" not in last.lower():
                break  # not a port clash: trying other ports will not help
        self._process = None
        raise ServerFailed(f"llama-server would not start for {self.model.name}: {_reason(last)} (log: {self.log_path})")

    def _wait_ready(self, process: subprocess.Popen) -> bool:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as answer:
                    if answer.status == 200:
                        return True
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass  # not listening yet, or 503 while the model loads
            time.sleep(0.1)
        process.kill()
        process.wait()
        return False


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _tail(path: Path | None, size: int = 4000) -> str:
    if path is None or not path.exists():
        return ""
    data = path.read_bytes()[-size:]
    return data.decode(errors="replace")


def _reason(log: str) -> str:
    """One line saying why the server stopped: its first error line (the cause; later ones are
    consequences), without the timestamp and level llama.cpp puts before it."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    errors = [line for line in lines if re.search(r"(^|\s)E\s|error", line, re.I)]
    line = (errors or lines or ["no output"])[0]
    return re.sub(r"^[\d.]+\s+[EWI]\s+", "", line)[:300]


# -- starting processes that die with us -------------------------------------------------------

# PR_SET_PDEATHSIG fires when the *thread* that started the child exits. Children are
# therefore started from this executor's one thread, which lives until the process ends.
_spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llama-server-spawner")


def _die_with_parent() -> None:
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _spawn(command: list[str], log) -> subprocess.Popen:
    def start() -> subprocess.Popen:
        return subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,
            close_fds=True,
        )

    return _spawner.submit(start).result()


# -- one server per model file, stopped at exit ------------------------------------------------

_servers: dict[str, LlamaServer] = {}
_servers_lock = threading.Lock()


def local_server(model: str | Path, **options: Any) -> LlamaServer:
    """The shared server of one GGUF file (created on first request; ``slots`` only grows it; ``deterministic=True``
    restarts it in that mode, which it keeps)."""
    key = str(Path(model).resolve())
    with _servers_lock:
        server = _servers.get(key)
        if server is None:
            server = _servers[key] = LlamaServer(key, **options)
            return server
        if options.get("deterministic") and not server.deterministic:
            server.stop()
            server.deterministic = True
        if options.get("slots", 0) > server.slots:
            server.stop()
            server.slots = options["slots"]
        return server


def stop_all() -> None:
    with _servers_lock:
        servers = list(_servers.values())
    for server in servers:
        server.stop()


atexit.register(stop_all)


# -- the DSPy side --------------------------------------------------------------------------------


def register_provider() -> None:
    """Declare ``llamacpp/<model>`` to DSPy: an OpenAI-compatible server that honours JSON schemas.

    With it, DSPy's JSONAdapter sends the output schema as ``response_format`` and
    llama-server decodes under the grammar it compiles from the schema, so typed
    outputs always parse. A ``llama-server`` of your own works the same way:
    ``--lm llamacpp/NAME --api-base http://HOST:PORT/v1``.
    """
    from dspy._vendor.lm15.access import AccessPolicy, EndpointSupport
    from dspy.lm15 import ModelSupport, OpenAIChatCompat, ProviderDefinition
    from dspy.lm15 import register_provider as register

    access = AccessPolicy(
        provider=PROVIDER,
        supports=EndpointSupport(complete=True, stream=True, models=True),
        auth_modes=("bearer",),
        base_url="http://127.0.0.1:8080/v1",
    )
    compat = OpenAIChatCompat(
        instruction_role="system",
        max_tokens_field="max_tokens",
        stream_usage="include",
        thinking_format="none",
        tool_result_name="omit",
        strict_tools="omit",
        cache_control="none",
        tool_result_media="reject",
    )
    definition = ProviderDefinition.chat(
        access, compat=compat, placeholder_key="no-key", note="llama.cpp's llama-server (keyless)"
    )
    register(definition, supports=ModelSupport(response_schema=True, function_calling=False, reasoning=False))


class LlamaServerLM(dspy.LM):
    """A ``dspy.LM`` on a :class:`LlamaServer`: DSPy's OpenAI-compatible route, plus crash recovery and stats."""

    def __init__(self, model: str, server: LlamaServer, **kwargs: Any):
        register_provider()
        kwargs.setdefault("api_key", "no-key")
        kwargs.setdefault("num_retries", 0)  # a dead server is restarted here and the call repeated by the caller
        super().__init__(model, api_base=server.url, **kwargs)
        self.server_model = str(server.model)  # copies find the live server by its model file
        self.server_generation = server.generation  # the process this LM's pooled connections point at

    @property
    def server(self) -> LlamaServer:
        return local_server(self.server_model)

    def __call__(self, prompt=None, *, messages=None, **kwargs):
        _refuse_images(messages)
        server = self.server
        if (kwargs.get("n") or self.kwargs.get("n") or 1) > 1:
            return self._together(server, prompt, messages, kwargs)
        for fresh_connection in (False, True):
            server.ensure()
            generation, started = server.generation, time.perf_counter()
            if fresh_connection or self.server_generation != generation:
                self.close()  # kept-alive connections to an earlier process lead nowhere
                self.server_generation = generation
            _answered.usage = None
            server.call_started()
            try:  # the URL of the running process (a restart keeps the port unless another program took it)
                outputs = super().__call__(
                    prompt, messages=messages, **{**kwargs, "api_base": f"http://127.0.0.1:{server.port}/v1"}
                )
            except LMTransportError as exc:
                if server.replace_if_dead(generation):
                    raise EngineDied(f"llama-server died during the call and was restarted ({exc})") from exc
                if fresh_connection or generation == 1:
                    raise
                continue  # the server is up and was restarted earlier: a stale pooled connection, once more
            finally:
                server.call_ended()
            if _answered.usage:  # the server answered (a DSPy cache hit carries no usage)
                server.stats.add(_answered.usage, time.perf_counter() - started)
            return outputs

    async def acall(self, prompt=None, *, messages=None, **kwargs):
        import asyncio

        return await asyncio.to_thread(self.__call__, prompt, messages=messages, **kwargs)

    def _together(self, server: LlamaServer, prompt, messages, kwargs) -> list:
        """A call with ``n`` > 1 as ONE request: llama-server evaluates the prompt once and decodes the
        ``n`` answers together (DSPy's own engine would send ``n`` requests one after another).

        It goes through DSPy's LiteLLM route, which keeps ``n`` in the request; DSPy's cache and
        history work as for any call. llama-server's ``usage`` counts one answer's tokens, so the
        completion tokens are counted again, by the server's tokenizer, over all ``n`` answers."""
        server.ensure()
        started = time.perf_counter()
        settings = {k: v for k, v in self.kwargs.items() if k not in ("api_base", "api_key")}
        twin = _TogetherLM(
            self.model,
            server=server,
            engine="litellm",
            api_base=f"http://127.0.0.1:{server.port}/v1",
            api_key="no-key",
            cache=self.cache,
            num_retries=0,
            **settings,
        )
        twin._warned_zero_temp_rollout = True
        twin.update_history = self.update_history  # GuardedLM reads each call's entry there
        _answered.usage = None
        generation = server.generation
        server.call_started()
        try:
            outputs = twin(prompt, messages=messages, **kwargs)
        except LMTransportError as exc:
            if server.replace_if_dead(generation):
                raise EngineDied(f"llama-server died during the call and was restarted ({exc})") from exc
            raise
        finally:
            server.call_ended()
        if _answered.usage:
            server.stats.add(_answered.usage, time.perf_counter() - started)
        return outputs

    def share_prefix(self) -> int:
        """See :meth:`LlamaServer.share_prefix`: call it after one request ran alone, before sending many.

        A speed-up only: if the server cannot do it (an older build, a restart under way), it
        returns 0 and every slot computes its prefix itself.
        """
        try:
            return self.server.share_prefix()
        except (OSError, ValueError) as exc:  # URLError and HTTPError are OSErrors; bad JSON a ValueError
            log.warning("llama-server: slots not shared (%s)", exc)
            return 0

    def update_history(self, entry):
        super().update_history(entry)
        _answered.usage = entry.get("usage") or None


_answered = threading.local()  # the usage of the call this thread is making


class _TogetherLM(dspy.LM):
    """DSPy's LiteLLM route to a llama-server for calls with ``n`` > 1 (see :meth:`LlamaServerLM._together`)."""

    def __init__(self, model: str, *, server: LlamaServer, **kwargs: Any):
        super().__init__(model, **kwargs)
        self.server = server

    def _check_truncation(self, raw):  # DSPy's hook on the raw answer, before its usage is read
        _count_every_answer(self.server, raw)
        return super()._check_truncation(raw)


def _count_every_answer(server: LlamaServer, raw: Any) -> None:
    """Set a raw answer's completion tokens to those of all its choices (llama-server reports one's)."""
    usage = getattr(raw, "usage", None) if not isinstance(raw, dict) else raw.get("usage")
    choices = getattr(raw, "choices", None) if not isinstance(raw, dict) else raw.get("choices")
    if usage is None or len(choices or []) < 2:
        return
    texts = []
    for choice in choices:
        message = choice.get("message") if isinstance(choice, dict) else getattr(choice, "message", None)
        content = message.get("content") if isinstance(message, dict) else getattr(message, "content", None)
        texts.append(content or "")
    try:
        total = sum(len(server._request("POST", "/tokenize", {"content": text}).get("tokens", [])) for text in texts)
    except (OSError, ValueError) as exc:
        log.warning("llama-server: answers not counted (%s)", exc)
        return
    prompt = (usage.get("prompt_tokens") if isinstance(usage, dict) else getattr(usage, "prompt_tokens", 0)) or 0
    if isinstance(usage, dict):
        usage.update(completion_tokens=total, total_tokens=prompt + total)
    else:
        usage.completion_tokens, usage.total_tokens = total, prompt + total


def _refuse_images(messages) -> None:
    for message in messages or ():
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list) and any(isinstance(p, dict) and p.get("type") == "image_url" for p in content):
            raise TextOnlyModel("this model reads text only; use --modality text, or a vision model with --lm")
