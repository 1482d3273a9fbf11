"""The local llama-server: its command line, crash recovery, clean-up, ports and slot sharing.

A stub stands in for llama-server (``python -m memreason.lm.stub_server --as-llama-server``):
these tests are offline and need neither the model nor a build. The real server is
exercised by the ``local_lm`` tests in ``test_local_lm.py``.
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import urllib.request
from pathlib import Path

import dspy
import pytest

from memreason.datasets.experience_transfer import make_level
from memreason.eval.experience_transfer.run import ExperienceTransferConfig, evaluate_experience_transfer
from memreason.lm import EngineDied, LlamaServer, LMConfigError, resolve_lm
from memreason.lm import server as server_module
from memreason.lm.faults import RetryPolicy, fault_kind
from memreason.lm.server import server_command

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def stub_binary(tmp_path, monkeypatch):
    """An executable that behaves like llama-server for the library (flags, /health, chat completions)."""
    script = tmp_path / "llama-server"
    script.write_text(
        textwrap.dedent(f"""\
        #!/bin/sh
        exec {sys.executable} -m memreason.lm.stub_server --as-llama-server --latency ${{STUB_LATENCY:-0.05}} ${{STUB_FROZEN:+--frozen}} --fail-rate 0 --lifetime 120 "$@"
        """)
    )
    script.chmod(0o755)
    monkeypatch.setenv("MEMREASON_LLAMA_SERVER", str(script))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("MEMREASON_CACHE", str(tmp_path / "cache"))
    return script


@pytest.fixture
def model_file(tmp_path):
    path = tmp_path / "tiny.gguf"
    path.write_bytes(b"GGUF")
    return path


@pytest.fixture(autouse=True)
def _stop_servers():
    yield
    server_module.stop_all()
    server_module._servers.clear()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().split()[2] if Path(f"/proc/{pid}/stat").exists() else "X"
    return state != "Z"


def _wait_gone(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_repacking_is_off_by_default(monkeypatch):
    """AMX (and every other extra-buffer repacking) stays off unless asked for."""
    monkeypatch.delenv("MEMREASON_LLAMA_REPACK", raising=False)
    assert "--no-repack" in server_command("llama-server", "m.gguf", 8080)
    assert "--no-repack" in LlamaServer("m.gguf", binary="llama-server").command(8080)
    assert "--no-repack" not in server_command("llama-server", "m.gguf", 8080, repack=True)
    monkeypatch.setenv("MEMREASON_LLAMA_REPACK", "1")
    assert "--no-repack" not in LlamaServer("m.gguf", binary="llama-server").command(8080)


def test_command_binds_loopback_with_parallel_slots():
    command = server_command("llama-server", "m.gguf", 8123, slots=6, context=4096)
    flags = dict(zip(command[1::2], command[2::2]))
    assert flags["--host"] == "127.0.0.1" and flags["--port"] == "8123"
    assert flags["--parallel"] == "6" and flags["--ctx-size"] == str(6 * 4096)
    assert "--cont-batching" in command


def test_embedded_route_is_dspys_openai_compatible_path_with_json_schemas(stub_binary, model_file):
    choice = resolve_lm(f"local:{model_file}", cache=False)
    assert choice.local and isinstance(choice.lm, dspy.LM) and choice.lm.model.startswith("llamacpp/")
    server = choice.lm.server
    assert server.alive() and server.url.startswith("http://127.0.0.1:")
    with dspy.context(lm=choice.lm, adapter=choice.adapter()):
        answer = dspy.Predict("question -> count: int")(question="how many?")
    assert isinstance(answer.count, int)
    with urllib.request.urlopen(server.url.removesuffix("/v1") + "/stats") as reply:
        stats = json.load(reply)
    assert stats["served"]["ok"] == 1
    assert server.stats.calls == 1 and server.stats.prompt_tokens > 0


def test_a_file_the_server_cannot_load_fails_at_resolution(tmp_path, monkeypatch, model_file):
    broken = tmp_path / "broken-server"
    broken.write_text("#!/bin/sh\necho 'error: failed to load model' >&2\nexit 1\n")
    broken.chmod(0o755)
    monkeypatch.setenv("MEMREASON_LLAMA_SERVER", str(broken))
    monkeypatch.setenv("MEMREASON_CACHE", str(tmp_path / "cache"))
    with pytest.raises(LMConfigError, match="failed to load model"):
        resolve_lm(f"local:{model_file}")


def test_two_servers_take_different_ports(stub_binary, model_file, tmp_path):
    other = tmp_path / "other.gguf"
    other.write_bytes(b"GGUF")
    first, second = LlamaServer(model_file), LlamaServer(other)
    try:
        first.ensure()
        second.ensure()
        assert first.port != second.port and first.alive() and second.alive()
    finally:
        first.stop()
        second.stop()
    assert not first.alive() and not second.alive()


def test_a_server_killed_between_calls_is_restarted_on_its_port(stub_binary, model_file):
    choice = resolve_lm(f"local:{model_file}", cache=False)
    server = choice.lm.server
    pid, port = server.pid, server.port
    os.kill(pid, signal.SIGKILL)
    assert _wait_gone(pid)
    ask = dspy.Predict("question -> count: int")
    with dspy.context(lm=choice.lm, adapter=choice.adapter()):
        try:  # found dead before the call (restarted quietly) or by the call (EngineDied: the caller repeats it)
            answer = ask(question="still there?")
        except EngineDied:
            answer = ask(question="still there?")
    assert isinstance(answer.count, int)
    assert server.alive() and server.pid != pid and server.port == port and server.stats.restarts == 1


def test_a_call_in_flight_when_the_server_dies_raises_engine_died(stub_binary, model_file, monkeypatch):
    monkeypatch.setenv("STUB_LATENCY", "2")
    choice = resolve_lm(f"local:{model_file}", cache=False)
    server = choice.lm.server
    pid = server.pid
    threading.Timer(0.5, os.kill, (pid, signal.SIGKILL)).start()
    with dspy.context(lm=choice.lm, adapter=choice.adapter()), pytest.raises(EngineDied) as caught:
        dspy.Predict("question -> count: int")(question="slow one")
    assert fault_kind(caught.value) == "engine_died"
    assert server.alive() and server.pid != pid and server.stats.restarts == 1


def test_a_busy_server_is_waited_for_past_the_stall_limit(stub_binary, model_file, monkeypatch):
    """A call longer than the stall limit is answered while the server's decode counter moves."""
    monkeypatch.setenv("STUB_LATENCY", "2")
    monkeypatch.setenv(server_module.ENV_STALL, "0.5")
    choice = resolve_lm(f"local:{model_file}", cache=False)
    server = choice.lm.server
    pid = server.pid
    with dspy.context(lm=choice.lm, adapter=choice.adapter()):
        answer = dspy.Predict("question -> count: int")(question="slow but working")
    assert isinstance(answer.count, int)
    assert server.pid == pid and server.stats.stalls == 0 and server.stats.restarts == 0


def test_a_hung_server_is_killed_and_the_call_fails_to_be_repeated(stub_binary, model_file, monkeypatch):
    """No decode step for the stall limit while a call waits: the server is killed and restarted, the call
    fails as engine_died (the harness repeats it) long before the call's own timeout."""
    monkeypatch.setenv("STUB_LATENCY", "30")
    monkeypatch.setenv("STUB_FROZEN", "1")
    monkeypatch.setenv(server_module.ENV_STALL, "0.5")
    choice = resolve_lm(f"local:{model_file}", cache=False)
    server = choice.lm.server
    pid = server.pid
    started = time.monotonic()
    with dspy.context(lm=choice.lm, adapter=choice.adapter()), pytest.raises(EngineDied) as caught:
        dspy.Predict("question -> count: int")(question="never answered")
    assert time.monotonic() - started < 15
    assert fault_kind(caught.value) == "engine_died"
    assert server.stats.stalls == 1 and server.stats.restarts == 1 and server.alive() and server.pid != pid


def test_a_local_call_has_no_short_timeout(stub_binary, model_file):
    choice = resolve_lm(f"local:{model_file}", cache=False)
    assert choice.lm.kwargs["timeout"] == server_module.CALL_TIMEOUT >= 3600


def test_a_run_survives_kill_9_of_its_server(stub_binary, model_file, tmp_path, monkeypatch):
    """The server dies mid-run: every scene is still answered and the fault is counted."""
    monkeypatch.setenv("STUB_LATENCY", "0.3")  # calls are always in flight: the kill hits some
    choice = resolve_lm(f"local:{model_file}", cache=False)
    server = choice.lm.server
    first = server.pid
    stats_url = server.url.removesuffix("/v1") + "/stats"

    def kill_after_some_answers():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with urllib.request.urlopen(stats_url) as reply:
                if json.load(reply)["served"]["ok"] >= 3:
                    os.kill(first, signal.SIGKILL)
                    return
            time.sleep(0.02)

    killer = threading.Thread(target=kill_after_some_answers)
    killer.start()
    config = ExperienceTransferConfig(program="episodic", level=1, limit=12, threads=4)
    results = evaluate_experience_transfer(
        config,
        task=choice,
        memory=choice,
        run_dir=tmp_path / "run",
        data=make_level(1),
        progress=False,
        policy=RetryPolicy(retries=2, backoff=0.01),
    )
    killer.join()
    records = [json.loads(line) for line in (tmp_path / "run" / "examples.jsonl").read_text().splitlines()]
    assert len(records) == 12 and not any(r["error"] for r in records)
    assert results["faults"].get("engine_died", 0) >= 1
    assert results["execution"]["engine"]["restarts"] == 1 and server.pid != first


def _python_starting_a_server(model_file, then: str) -> list[str]:
    """A Python command that starts the shared server of ``model_file``, prints its pid, then runs ``then``."""
    return [
        sys.executable,
        "-c",
        textwrap.dedent(f"""\
        from memreason.lm import local_server
        server = local_server({str(model_file)!r})
        server.ensure()
        print(server.pid, flush=True)
        """)
        + then,
    ]


def test_the_server_dies_with_a_killed_parent(stub_binary, model_file):
    parent = subprocess.Popen(
        _python_starting_a_server(model_file, "import time; time.sleep(60)"), stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    child = int(parent.stdout.readline())
    assert _alive(child)
    parent.kill()
    parent.wait()
    assert _wait_gone(child), "llama-server outlived the process that started it"


def test_the_server_stops_when_python_exits(stub_binary, model_file):
    done = subprocess.run(_python_starting_a_server(model_file, ""), capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert _wait_gone(int(done.stdout.strip()))


def test_share_prefix_copies_the_last_used_slot_into_the_idle_ones(stub_binary, model_file):
    choice = resolve_lm(f"local:{model_file}", cache=False)
    server = choice.lm.server
    with dspy.context(lm=choice.lm, adapter=choice.adapter()):
        dspy.Predict("question -> count: int")(question="warm up")
    assert choice.lm.share_prefix() == 3  # the stub has 4 slots
    with urllib.request.urlopen(server.url.removesuffix("/v1") + "/stats") as reply:
        actions = json.load(reply)["slot_actions"]
    saved = [a for a in actions if a.endswith("action=save")]
    restored = [a for a in actions if a.endswith("action=restore")]
    assert len(saved) == 1 and len(restored) == 3
    assert saved[0].split("?")[0] not in {a.split("?")[0] for a in restored}


def test_threads_share_the_prefix_after_the_first_scene(stub_binary, model_file, tmp_path):
    choice = resolve_lm(f"local:{model_file}", cache=False)
    config = ExperienceTransferConfig(program="episodic", level=1, limit=6, threads=3)
    evaluate_experience_transfer(config, task=choice, memory=choice, run_dir=tmp_path / "run", progress=False)
    with urllib.request.urlopen(choice.lm.server.url.removesuffix("/v1") + "/stats") as reply:
        stats = json.load(reply)
    assert stats["served"]["ok"] == 6 and any(a.endswith("action=restore") for a in stats["slot_actions"])


def test_images_are_refused_before_the_server_sees_them(stub_binary, model_file):
    from PIL import Image

    from memreason.lm import TextOnlyModel

    choice = resolve_lm(f"local:{model_file}", cache=False)
    with dspy.context(lm=choice.lm, adapter=choice.adapter()), pytest.raises(TextOnlyModel):
        dspy.Predict("picture: dspy.Image -> count: int")(picture=dspy.Image(Image.new("RGB", (4, 4))))
    assert choice.lm.server.stats.calls == 0


def test_a_server_that_cannot_share_slots_costs_speed_not_the_run(stub_binary, model_file, monkeypatch):
    import urllib.error

    choice = resolve_lm(f"local:{model_file}", cache=False)

    def refuse(*args, **kwargs):
        raise urllib.error.HTTPError("http://x/slots", 501, "not supported", {}, None)

    monkeypatch.setattr(choice.lm.server, "_request", refuse)
    assert choice.lm.share_prefix() == 0


def test_n_answers_come_from_one_request_and_every_answer_is_counted(stub_binary, model_file):
    """A call with n > 1 is one request (llama-server evaluates its prompt once); its completion
    tokens are those of all n answers, though the server's usage counts one."""
    from memreason.lm.faults import GuardedLM
    from memreason.lm.tokens import Meter, metering

    choice = resolve_lm(f"local:{model_file}", cache=False)
    guarded = GuardedLM(choice.lm, role="task")
    from memreason.programs.shared.usage import usage

    meter = Meter()
    with dspy.context(lm=guarded, adapter=choice.adapter()), metering(meter), usage() as spent:
        out = dspy.Predict("question -> program: str")(question="write it", config={"n": 3, "temperature": 0.7})
    assert len(out.completions.program) == 3
    with urllib.request.urlopen(choice.lm.server.url.removesuffix("/v1") + "/stats") as reply:
        requests = json.load(reply)["requests"]
    assert [r["n"] for r in requests] == [3]
    tokens = meter.tokens()
    assert tokens.calls == 1
    assert tokens.completion == sum(len(json.dumps({"program": p}).split()) for p in out.completions.program)
    assert spent["completion"] == tokens.completion  # DSPy's usage tracker sees the same count


def test_the_deterministic_mode_has_one_slot_and_no_prompt_cache(stub_binary, model_file):
    command = server_command("llama-server", "m.gguf", 8123, slots=6, deterministic=True)
    flags = dict(zip(command[1::2], command[2::2]))
    assert flags["--parallel"] == "1" and flags["--cache-ram"] == "0" and "--no-cache-prompt" in command
    default = server_command("llama-server", "m.gguf", 8123, slots=6)
    assert dict(zip(default[1::2], default[2::2]))["--cache-ram"] != "0" and "--no-cache-prompt" not in default
    plain = resolve_lm(f"local:{model_file}", cache=False, slots=8)
    assert not plain.lm.server.deterministic
    choice = resolve_lm(f"local:{model_file}", cache=False, slots=8, deterministic=True)  # the server restarts in it
    server = choice.lm.server
    assert server is plain.lm.server and server.deterministic and server.alive()
    assert dict(zip(server.command(1)[1::2], server.command(1)[2::2]))["--parallel"] == "1"
    with dspy.context(lm=choice.lm, adapter=choice.adapter()):
        assert dspy.Predict("question -> answer")(question="one").answer


def test_a_remote_model_refuses_the_deterministic_mode():
    with pytest.raises(LMConfigError, match="--deterministic is a mode of the embedded model's server"):
        resolve_lm("openai/gpt-4o-mini", deterministic=True)


def test_the_deterministic_benchmark_answers_the_same_prompts_in_both_modes(stub_binary, model_file, tmp_path, capsys):
    from memreason.eval.bench.deterministic import differing, main

    assert differing([["a", "b", "c"], ["a", "x", "c"], ["a", "b", "c"]]) == 1
    figures = tmp_path / "figures.json"
    argv = [
        "--lm",
        f"local:{model_file}",
        "--task",
        "rg:puzzle24",
        "--size",
        "3",
        "--rounds",
        "2",
        "--threads",
        "2",
        "--json",
        str(figures),
    ]
    assert main(argv) == 0
    out = json.loads(figures.read_text())
    assert set(out["modes"]) == {"default", "deterministic"} and out["throughput_ratio"] > 0
    assert all(len(mode["walls"]) == 2 for mode in out["modes"].values())
    assert "deterministic / default completion tokens per second" in capsys.readouterr().out
    server = server_module.local_server(model_file)
    assert server.deterministic and "--no-cache-prompt" in server.command(1)
