"""Per-role LM settings from the command line, a config file and the papers' presets; reasoning models driven as
their providers require. Runs talk to the loopback stub server replaying recorded provider shapes
(``tests/data/provider_shapes``); every assertion on settings reads the requests the stub received."""

import json
import logging
import os
from pathlib import Path

import dspy
import pytest

import memreason.eval.arc.sandbox as arc_sandbox
import memreason.eval.cli as cli
from memreason.eval.cli import build_parser
from memreason.eval.cli.lm_settings import LM_CONFIG_BYTES, apply_lm_settings
from memreason.eval.harness.lms import resolve_lms
from memreason.lm import LMChoice, ScriptedEngine
from memreason.lm.stub_server import StubServer, load_shape
from tests.helpers.arc_helpers import flip_task, small_sandbox

ROOT = Path(__file__).resolve().parents[3]
SHAPES = ROOT / "tests" / "data" / "provider_shapes"
REARC_PS = ROOT / "datasets" / "arc" / "memories" / "rearc_ps.json"
QUIET = ["--no-progress", "--backoff", "0.01"]


def shapes(**by_key: str) -> dict:
    """``openai="openai_reasoning_chat"`` -> the stub's ``shapes`` (a key ``openai:MODEL`` answers that model alone)."""
    return {key.replace("__", ":").replace("_dash_", "-"): load_shape(SHAPES / f"{name}.json")[1] for key, name in by_key.items()}


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(name, "stub-key")


@pytest.fixture
def quick_sandbox(monkeypatch):
    monkeypatch.setattr(arc_sandbox, "make_sandbox", lambda workers, wall_seconds: small_sandbox())


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("error:") or "Traceback" in line]
    assert len(lines) == 1, err
    return lines[0]


def parsed(argv: list[str]):
    args = build_parser().parse_args(argv)
    apply_lm_settings(args)
    return args


# -- the flags and the file --------------------------------------------------------------------------


def test_lm_args_are_read_as_json_where_they_parse_else_as_text():
    args = parsed(
        [
            "hdr",
            "--lm-arg",
            "reasoning_effort=medium",
            "--lm-arg",
            "top_p=0.9",
            "--lm-arg",
            'thinking={"type": "enabled", "budget_tokens": 2048}',
            "--lm-arg",
            "parallel_tool_calls=false",
            "--memory-lm-arg",
            "seed=7",
            "--memory-lm-arg",
            'stop=["END"]',
        ]
    )
    assert args.lm_args == {
        "reasoning_effort": "medium",
        "top_p": 0.9,
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "parallel_tool_calls": False,
    }
    assert args.memory_lm_args == {"seed": 7, "stop": ["END"]}
    assert args.origins["lm_args.top_p"] == "--lm-arg top_p"


def test_temperature_and_max_tokens_in_lm_args_are_the_roles_own_flags():
    args = parsed(["hdr", "--lm-arg", "temperature=0.4", "--memory-lm-arg", "max_completion_tokens=900"])
    assert (args.temperature, args.memory_max_tokens) == (0.4, 900) and args.lm_args == {} and args.memory_lm_args == {}
    assert args.origins["temperature"] == "--lm-arg temperature"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--lm-arg", "reasoning_effort"], "--lm-arg takes KEY=VALUE (such as reasoning_effort=medium), got 'reasoning_effort'"),
        (["--memory-lm-arg", "=3"], "--memory-lm-arg takes KEY=VALUE"),
        (["--preset", "gpt-paper"], "--preset: unknown preset 'gpt-paper'; choose from arcmemo-paper, hdr-paper"),
        (["--temperature", "0.3", "--lm-arg", "temperature=0.5"], "--temperature 0.3 and --lm-arg temperature=0.5 disagree"),
        (["--lm-arg", "model=openai/gpt-4o"], "--lm-arg model: give the task LM's model with --lm"),
        (["--lm-arg", "temperature=5"], "--temperature must be in [0, 2]"),
        (["--lm-config", "nowhere.json"], "cannot read --lm-config nowhere.json"),
        (
            ["--lm", "openai/gpt-4.1", "--lm-arg", "api_key=sk-123"],
            "--lm-arg api_key carries a credential, which is no setting of the task LM",
        ),
        (["--memory-api-base", "http://127.0.0.1:9/v1"], "--memory-api-base is the address of the memory LM's server"),
        (["--lm-arg", "top_p="], "--lm-arg top_p= has no value"),
        (["--lm-arg", "top_p=  "], "--lm-arg top_p= has no value"),
        (["--memory-lm-arg", 'stop=""'], "--memory-lm-arg stop= has no value"),
    ],
)
def test_bad_settings_are_one_line_and_exit_2(argv, message, capsys):
    assert cli.main(["hdr", "--level", "1", "--limit", "1", "--no-progress", *argv]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert message in line


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda d: Path("/dev/zero"), "--lm-config /dev/zero is not a regular file"),
        (_fifo, "is not a regular file (a folder, device or pipe)"),  # never opened for reading: no hang
        (lambda d: d, "is not a regular file"),
        (
            lambda d: _write(d / "big.json", json.dumps({"task": {"stop": ["x" * (LM_CONFIG_BYTES + 1)]}})),
            "is larger than 64 KiB",
        ),
        (lambda d: _write(d / "bin.json", bytes(range(256))), "is not text (not UTF-8 at byte 128)"),
        (lambda d: _write(d / "nul.json", b"{}\x00"), "is not text (it holds NUL bytes)"),
        (lambda d: _write(d / "empty.json", json.dumps({"task": {"top_p": ""}})), "(task.top_p) is empty"),
    ],
)
def test_an_lm_config_that_is_no_small_text_file_is_one_line_and_nothing_is_run(make, message, tmp_path, capsys):
    given = make(tmp_path if make is not _fifo else tmp_path / "settings.fifo")
    argv = ["hdr", "--level", "1", "--limit", "1", "--no-progress", "--lm-config", str(given), "--out", str(tmp_path / "run")]
    assert cli.main(argv) == 2
    assert message in one_error_line(capsys.readouterr().err)
    assert not (tmp_path / "run").exists()


def _write(path: Path, data: str | bytes) -> Path:
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


def test_a_config_file_sets_each_role_and_the_flags_given_override_it(tmp_path):
    config = tmp_path / "lms.json"
    config.write_text(
        json.dumps(
            {
                "task": {"model": "openai/o4-mini", "max_tokens": 20000, "reasoning_effort": "high", "api_base": "http://a:1/v1"},
                "memory": {"model": "hosted_vllm/Qwen/Qwen3-8B", "temperature": 0.6, "top_k": 20, "api_base": "http://b:2/v1"},
            }
        )
    )
    args = parsed(["hdr", "--lm-config", str(config), "--memory-lm-arg", "top_k=40", "--max-tokens", "32000"])
    assert (args.lm, args.max_tokens, args.lm_args, args.api_base) == (
        "openai/o4-mini",
        32000,
        {"reasoning_effort": "high"},
        "http://a:1/v1",
    )
    assert (args.memory_lm, args.memory_temperature, args.memory_lm_args, args.memory_api_base) == (
        "hosted_vllm/Qwen/Qwen3-8B",
        0.6,
        {"top_k": 40},  # the flag wins
        "http://b:2/v1",
    )
    assert args.origins["max_tokens"] == "--max-tokens" and args.origins["lm"] == f"--lm-config {config} (task.model)"
    toml = tmp_path / "lms.toml"
    toml.write_text('[task]\nmodel = "openai/gpt-4.1"\ntemperature = 0.2\n\n[memory]\nseed = 3\n')
    args = parsed(["hdr", "--lm-config", str(toml)])
    assert (args.lm, args.temperature, args.memory_lm_args) == ("openai/gpt-4.1", 0.2, {"seed": 3})


def test_a_preset_is_the_weakest_layer(tmp_path):
    config = tmp_path / "lms.json"
    config.write_text(json.dumps({"memory": {"model": "openai/gpt-4.1-mini"}}))
    args = parsed(["arcmemo_ps", "--preset", "arcmemo-paper", "--lm-config", str(config), "--memory-max-tokens", "1500"])
    assert (args.lm, args.max_tokens, args.lm_args) == ("openai/o4-mini", 32000, {"reasoning_effort": "medium"})
    assert (args.memory_lm, args.memory_temperature, args.memory_max_tokens) == ("openai/gpt-4.1-mini", 0.3, 1500)
    assert args.origins["memory_temperature"] == "--preset arcmemo-paper (memory.temperature)"


def test_the_memory_lm_gets_the_task_address_only_when_it_is_the_same_kind_of_model():
    seen = []

    def resolve(spec, **choose):
        seen.append((spec, choose["api_base"], choose["role"]))
        return LMChoice(spec, ScriptedEngine(lambda call: {}).lm(), local=False)

    for argv in (
        ["--lm", "hosted_vllm/Qwen/Qwen3-8B", "--api-base", "http://a:1/v1", "--memory-lm", "openai/gpt-4.1"],
        ["--lm", "openai/stub", "--api-base", "http://a:1/v1", "--memory-lm", "openai/other"],
        ["--lm", "hosted_vllm/Q", "--api-base", "http://a:1/v1", "--memory-lm", "openai/g", "--memory-api-base", "http://b:2/v1"],
        ["--lm", "openai/stub", "--api-base", "http://a:1/v1", "--memory-api-base", "http://b:2/v1"],
    ):
        resolve_lms(parsed(["hdr", *argv]), resolve=resolve)
    assert seen == [
        ("hosted_vllm/Qwen/Qwen3-8B", "http://a:1/v1", "task LM"),
        ("openai/gpt-4.1", None, "memory LM"),  # an API model is not sent to the self-hosted server
        ("openai/stub", "http://a:1/v1", "task LM"),
        ("openai/other", "http://a:1/v1", "memory LM"),
        ("hosted_vllm/Q", "http://a:1/v1", "task LM"),
        ("openai/g", "http://b:2/v1", "memory LM"),
        ("openai/stub", "http://a:1/v1", "task LM"),
        ("openai/stub", "http://b:2/v1", "memory LM"),  # the task model on the memory's own server
    ]


def test_each_role_on_its_own_server(tmp_path):
    with StubServer(latency=0, fail_rate=0) as task_server, StubServer(latency=0, fail_rate=0) as memory_server:
        argv = ["hdr", "--level", "1", "--limit", "2", "--lm", "openai/task-model", "--api-base", task_server.url]
        argv += ["--memory-lm", "openai/memory-model", "--memory-api-base", memory_server.url, "--memory-lm-arg", "seed=5"]
        assert cli.main([*argv, "--out", str(tmp_path / "run"), *QUIET, "--no-report"]) == 0
        assert {b["model"] for b in task_server.bodies()} == {"task-model"}
        assert {(b["model"], b.get("seed")) for b in memory_server.bodies()} == {("memory-model", 5)}
        address = memory_server.url
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["memory_api_base"] == address and config["memory_lm_args"] == {"seed": 5}


# -- the issue's own commands: runs with settings the provider accepts, or one line before any call ---------


def test_hdr_on_o4_mini_never_sends_temperature_0_and_counts_reasoning_apart(tmp_path, capsys):
    """``python -m eval hdr --level 1 --lm openai/o4-mini`` sent temperature 0.0 with every request."""
    out = tmp_path / "run"
    with StubServer(latency=0, fail_rate=0, shapes=shapes(openai="openai_reasoning_chat")) as stub:
        argv = ["hdr", "--level", "1", "--limit", "2", "--lm", "openai/o4-mini", "--api-base", stub.url]
        assert cli.main([*argv, "--out", str(out), *QUIET]) == 0
        bodies = stub.bodies("openai")
    assert bodies and all(b["temperature"] == 1.0 and b["model"] == "o4-mini" for b in bodies)
    err = capsys.readouterr().err
    assert "note: task LM openai/o4-mini: temperature 0 -> 1 (OpenAI's reasoning models take temperature 1 only)" in err
    config = json.loads((out / "config.json").read_text())
    assert config["adapted"] == [
        {
            "role": "task LM",
            "model": "openai/o4-mini",
            "setting": "temperature",
            "asked": 0.0,
            "sent": 1.0,
            "why": "OpenAI's reasoning models take temperature 1 only",
        }
    ]
    results = json.loads((out / "results.json").read_text())
    task = results["tokens"]["task"]
    assert task["reasoning"] == 1792 * task["calls"] and task["completion"] == 1920 * task["calls"]
    assert results["cost"]["reasoning"]["task"] == pytest.approx(task["reasoning"] * 4.4e-6, rel=1e-3)
    report = (out / "report.md").read_text()
    assert "| of which reasoning | visible |" in report and f"| {task['reasoning']:,} |" in report


def test_arc1d_baseline_on_o4_mini_runs_with_its_settings_and_checks_no_memory_settings(tmp_path, quick_sandbox, capsys):
    """``python -m eval baseline --split arc1d --lm openai/o4-mini --temperature 1 --max-tokens 32000`` was refused
    over the memory LM's defaults (temperature 0.3, 1000 tokens), which a program without memory never uses."""
    with StubServer(latency=0, fail_rate=0, shapes=shapes(openai="openai_reasoning_chat")) as stub:
        argv = ["baseline", "--split", "arc1d", "--size", "2", "--attempts", "1", "--lm", "openai/o4-mini"]
        argv += ["--temperature", "1", "--max-tokens", "32000", "--api-base", stub.url]
        assert cli.main([*argv, "--out", str(tmp_path / "run"), *QUIET, "--no-report"]) == 0
        bodies = stub.bodies("openai")
        assert len(bodies) == 2 and all((b["temperature"], b["max_completion_tokens"]) == (1.0, 32000) for b in bodies)
        assert "error" not in capsys.readouterr().err
        # the solver's default temperature (0.7) is adapted; one the user gives is refused before any call
        assert cli.main([*argv[:-6], "--api-base", stub.url, "--out", str(tmp_path / "adapted"), *QUIET, "--no-report"]) == 0
        assert {b["temperature"] for b in stub.bodies("openai")[2:]} == {1.0}
        config = json.loads((tmp_path / "adapted" / "config.json").read_text())
        assert config["temperature"] == 1.0 and config["adapted"][0]["asked"] == 0.7
        sent = len(stub.received)
        capsys.readouterr()
        argv = [*argv[:-6], "--temperature", "0.7", "--api-base", stub.url, "--out", str(tmp_path / "refused"), *QUIET]
        assert cli.main(argv) == 2
        assert len(stub.received) == sent  # refused before any call
    line = one_error_line(capsys.readouterr().err)
    assert (
        line
        == "error: --temperature 0.7 cannot be sent to the task LM openai/o4-mini: OpenAI's reasoning models take temperature 1 only"
    )


def test_a_memory_setting_is_refused_naming_the_memory_role(tmp_path, capsys):
    with StubServer(latency=0, fail_rate=0) as stub:
        argv = ["arcmemo_ps", "--split", "arc1d", "--size", "1", "--lm", "openai/o4-mini", "--api-base", stub.url]
        assert cli.main([*argv, "--memory-temperature", "0.5", "--out", str(tmp_path / "r"), *QUIET]) == 2
        assert stub.received == []
    assert one_error_line(capsys.readouterr().err) == (
        "error: --memory-temperature 0.5 cannot be sent to the memory LM openai/o4-mini: "
        "OpenAI's reasoning models take temperature 1 only"
    )


def test_anthropic_thinking_from_the_command_line(tmp_path, capsys):
    thinking = '{"type": "enabled", "budget_tokens": 2048}'
    with StubServer(latency=0, fail_rate=0, shapes=shapes(anthropic="anthropic_thinking_messages")) as stub:
        base = stub.url.removesuffix("/v1")
        argv = ["hdr", "--level", "1", "--limit", "1", "--lm", "anthropic/claude-sonnet-4-5", "--api-base", base]
        argv += ["--lm-arg", f"thinking={thinking}"]
        assert cli.main([*argv, "--max-tokens", "2000", "--out", str(tmp_path / "r1"), *QUIET]) == 2
        assert stub.received == []
        assert "error: --max-tokens 2000 cannot be sent to the task LM anthropic/claude-sonnet-4-5" in capsys.readouterr().err
        assert cli.main([*argv, "--out", str(tmp_path / "r2"), *QUIET, "--no-report"]) == 0
        bodies = stub.bodies("anthropic")
    assert bodies and all(
        b["temperature"] == 1.0 and b["max_tokens"] == 2048 + 4096 and b["thinking"]["budget_tokens"] == 2048 for b in bodies
    )
    results = json.loads((tmp_path / "r2" / "results.json").read_text())
    assert 0 < results["tokens"]["task"]["reasoning"] < results["tokens"]["task"]["completion"]


def test_arcmemo_ps_from_python_uses_the_lms_temperature(caplog):
    """``ArcMemoPS()`` sent its own temperature 0.7 over the LM's with every call: o4-mini refuses 0.7."""
    from memreason.programs import ArcMemoPS, ConceptMemory

    with StubServer(latency=0, fail_rate=0, shapes=shapes(openai="openai_reasoning_chat")) as stub:
        lm = dspy.LM("openai/o4-mini", api_base=stub.url, temperature=1.0, max_tokens=16000, cache=False)
        with small_sandbox() as box, dspy.context(lm=lm, adapter=dspy.ChatAdapter()):
            program = ArcMemoPS(sandbox=box, attempts=2)
            program.use_memory(ConceptMemory("ps"))
            program(flip_task())
            assert {b["temperature"] for b in stub.bodies()} == {1.0}
            gpt = dspy.LM("openai/gpt-4.1", api_base=stub.url, temperature=0.2, cache=False)
            with dspy.context(lm=gpt), caplog.at_level(logging.INFO, logger="memreason"):
                sent = len(stub.received)
                ArcMemoPS(sandbox=box, attempts=1, temperature=0.7).solver(flip_task())
                assert {b["temperature"] for b in stub.bodies()[sent:]} == {0.7}  # asked of the program: it says so
    assert "ArcSolver: attempts sampled at the program's temperature 0.7, not the LM's 0.2" in caplog.text


# -- the papers' presets -----------------------------------------------------------------------------


def test_the_arcmemo_protocol_from_one_command(tmp_path, quick_sandbox, capsys):
    """``--preset arcmemo-paper``: o4-mini at medium effort solves, GPT-4.1 at 0.3 / 1,000 tokens selects; the
    full val100 protocol's estimate is printed before any call."""
    seen_at_estimate = []

    class Watch(logging.Handler):
        def emit(self, record):
            if "budget estimate for the ArcMemo paper" in record.getMessage():
                seen_at_estimate.append(len(stub.received))

    watch = Watch()
    logging.getLogger("memreason").addHandler(watch)
    out = tmp_path / "run"
    try:
        with StubServer(
            latency=0, fail_rate=0, shapes=shapes(openai__o4_dash_mini="openai_reasoning_chat", openai="openai_chat")
        ) as stub:
            argv = ["arcmemo_ps", "--preset", "arcmemo-paper", "--split", "val100", "--limit", "2", "--memory", str(REARC_PS)]
            assert cli.main([*argv, "--api-base", stub.url, "--out", str(out), *QUIET, "--budget-usd", "5"]) == 0
            bodies = stub.bodies("openai")
    finally:
        logging.getLogger("memreason").removeHandler(watch)
    assert seen_at_estimate == [0]  # printed before any call
    solver = [b for b in bodies if b["model"] == "o4-mini"]
    memory = [b for b in bodies if b["model"] == "gpt-4.1"]
    assert len(solver) == 4 and len(memory) == 2 and len(bodies) == 6  # 2 tasks x 2 attempts; a selection each
    assert all((b["temperature"], b["max_completion_tokens"], b["reasoning_effort"]) == (1.0, 32000, "medium") for b in solver)
    assert all((b["temperature"], b["max_completion_tokens"]) == (0.3, 1000) and "reasoning_effort" not in b for b in memory)
    err = capsys.readouterr().err
    assert "preset arcmemo-paper (ArcMemo, Appendix A.2): task LM openai/o4-mini (temperature 1.0, max_tokens 32000, " in err
    assert "budget estimate for the ArcMemo paper's val100 protocol (100 tasks x 3 runs, 2 attempts, 0 retries" in err
    assert "note:" not in err  # the preset's settings are what the models take: nothing adapted
    config = json.loads((out / "config.json").read_text())
    assert (config["preset"], config["lm"], config["memory_lm"]) == ("arcmemo-paper", "openai/o4-mini", "openai/gpt-4.1")
    assert (config["max_tokens"], config["lm_args"], config["memory_temperature"], config["memory_max_tokens"]) == (
        32000,
        {"reasoning_effort": "medium"},
        0.3,
        1000,
    )
    tokens = json.loads((out / "results.json").read_text())["tokens"]
    assert tokens["task"]["reasoning"] == 4 * 1792 and "reasoning" not in tokens["memory"]


def test_the_hdr_preset_sends_each_role_to_its_model(tmp_path, capsys):
    with StubServer(latency=0, fail_rate=0, shapes=shapes(gemini="gemini_thinking_generate")) as stub:
        argv = ["hdr", "--preset", "hdr-paper", "--level", "1", "--limit", "2", "--api-base", stub.url]
        argv += ["--memory-api-base", stub.url.removesuffix("/v1")]
        assert cli.main([*argv, "--out", str(tmp_path / "run"), *QUIET, "--no-report"]) == 0
        task, memory = stub.bodies("openai"), stub.bodies("gemini")
    assert task and all((b["model"], b["temperature"], b["seed"]) == ("gpt-4o-2024-08-06", 0.0, 0) for b in task)
    configs = [b.get("generationConfig") or b.get("generation_config") for b in memory]
    assert memory and all(c["temperature"] == 0 and c["seed"] == 0 for c in configs)
    assert "preset hdr-paper (HDR, Section 5.1): task LM openai/gpt-4o-2024-08-06" in capsys.readouterr().err
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert (config["preset"], config["memory_lm"], config["memory_lm_args"]) == (
        "hdr-paper",
        "gemini/gemini-2.5-flash",
        {"seed": 0},
    )


def test_optimize_takes_the_same_settings():
    from memreason.optimize.cli import build_parser as optimize_parser
    from memreason.optimize.tune import StudyOptions

    args = optimize_parser().parse_args(["hdr", "--preset", "hdr-paper", "--lm-arg", "top_p=0.5", "--memory-lm-arg", "seed=2"])
    apply_lm_settings(args)
    options = StudyOptions.from_args(args)
    assert (options.lm, options.lm_args, options.memory_lm_args) == (
        "openai/gpt-4o-2024-08-06",
        {"seed": 0, "top_p": 0.5},
        {"seed": 2},
    )


def test_a_run_with_lm_settings_continues_and_refuses_other_settings(tmp_path, capsys):
    out = tmp_path / "run"
    with StubServer(latency=0, fail_rate=0, shapes=shapes(openai="openai_reasoning_chat")) as stub:
        argv = ["hdr", "--level", "1", "--limit", "2", "--lm", "openai/o4-mini", "--lm-arg", "reasoning_effort=low"]
        argv += ["--api-base", stub.url, "--out", str(out), *QUIET, "--no-report"]
        assert cli.main(argv) == 0
        sent = len(stub.received)
        assert {b["reasoning_effort"] for b in stub.bodies()} == {"low"}
        assert cli.main(["--resume", str(out), "--api-base", stub.url, *QUIET, "--no-report"]) == 0
        assert cli.main(argv) == 0  # the same command continues the run
        assert len(stub.received) == sent  # nothing asked again
        capsys.readouterr()
        assert cli.main(["--resume", str(out), "--lm-arg", "reasoning_effort=high", "--api-base", stub.url]) == 2
        assert one_error_line(capsys.readouterr().err) == "error: --resume takes the run's own config; drop --lm-arg"
        high = [a.replace("reasoning_effort=low", "reasoning_effort=high") for a in argv]
        assert cli.main(high) == 2
        assert "lm_args {'reasoning_effort': 'low'} != {'reasoning_effort': 'high'}" in one_error_line(capsys.readouterr().err)


def test_repetitions_on_a_reasoning_model_sample_at_the_temperature_it_is_sent(tmp_path):
    """The default temperature 0 goes out as 1 to o4-mini, so --runs 2 samples twice rather than being refused."""
    with StubServer(latency=0, fail_rate=0, shapes=shapes(openai="openai_reasoning_chat")) as stub:
        argv = ["hdr", "--level", "1", "--limit", "1", "--runs", "2", "--lm", "openai/o4-mini", "--api-base", stub.url]
        assert cli.main([*argv, "--out", str(tmp_path / "run"), *QUIET, "--no-report"]) == 0
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["repetitions"]["vary_by"].startswith("sampling (--temperature 1)")


@pytest.mark.parametrize(
    "command",
    [
        ["fewshot", "--task", "rg:puzzle24", "--size", "2", "--seed-size", "1"],  # a stream task
        ["episodic_cot", "--task", "list_functions", "--limit", "1"],  # a problem task
    ],
)
def test_stream_and_problem_tasks_take_each_roles_settings(command, tmp_path):
    with StubServer(latency=0, fail_rate=0) as stub:
        argv = [*command, "--lm", "openai/stub", "--api-base", stub.url, "--lm-arg", "top_p=0.5", "--lm-arg", "seed=9"]
        assert cli.main([*argv, "--out", str(tmp_path / "run"), *QUIET, "--no-report"]) == 0
        bodies = stub.bodies()
    assert bodies and all((b["top_p"], b["seed"]) == (0.5, 9) for b in bodies)
    assert json.loads((tmp_path / "run" / "config.json").read_text())["lm_args"] == {"top_p": 0.5, "seed": 9}


def test_a_program_without_memory_names_an_unused_memory_lm_and_continues(tmp_path, quick_sandbox):
    with StubServer(latency=0, fail_rate=0, shapes=shapes(openai="openai_reasoning_chat")) as stub:
        argv = ["baseline", "--split", "arc1d", "--size", "1", "--attempts", "1", "--lm", "openai/o4-mini"]
        argv += ["--memory-lm", "openai/gpt-4.1", "--api-base", stub.url, "--out", str(tmp_path / "run"), *QUIET, "--no-report"]
        assert cli.main(argv) == 0
        assert {b["model"] for b in stub.bodies()} == {"o4-mini"}  # the memory LM is never called
        assert cli.main(argv) == 0  # the same command continues the run
    assert json.loads((tmp_path / "run" / "config.json").read_text())["memory_lm"] == "openai/gpt-4.1"


def proposes(body: dict) -> bool:
    """Whether ``body`` is a checked ACRE program's proposal (its prompt lists the refuted hypotheses)."""
    return "`refuted`" in body["messages"][0]["content"]


def test_hdr_checked_samples_on_a_reasoning_memory_lm(tmp_path, capsys):
    """Sampled rounds go out at 0.7 (Qiu et al.'s) where the memory LM takes it; o4-mini gets its own temperature
    (recorded in ``adapted``), and a sample_temperature the knobs give that it refuses stops the run before any call."""
    knobs = tmp_path / "knobs.json"
    knobs.write_text(json.dumps({"knobs": {"samples": 2, "N": 1}}))
    with StubServer(latency=0, fail_rate=0, shapes=shapes(openai__o4_dash_mini="openai_reasoning_chat")) as stub:
        base = ["hdr_checked", "--task", "acre", "--limit", "1", "--config", str(knobs), "--api-base", stub.url, *QUIET]
        # exit 1: the stub's answers are no ACRE answers, so the query fails (the proposals are what is looked at)
        assert cli.main([*base, "--lm", "openai/stub", "--out", str(tmp_path / "plain"), "--no-report"]) == 1
        sampled = [b for b in stub.bodies() if proposes(b)]
        assert len(sampled) == 2 and {b["temperature"] for b in sampled} == {0.7}
        before = len(stub.received)
        out = tmp_path / "o4"
        assert cli.main([*base, "--lm", "openai/o4-mini", "--out", str(out), "--no-report"]) == 1
        sampled = [b for b in stub.bodies()[before:] if proposes(b)]
        assert len(sampled) == 2 and {b["temperature"] for b in sampled} == {1.0}
        config = json.loads((out / "config.json").read_text())
        assert config["sample_temperature"] is None
        assert {
            "role": "memory LM",
            "model": "openai/o4-mini",
            "setting": "sample_temperature",
            "asked": 0.7,
            "sent": 1.0,
            "why": "OpenAI's reasoning models take temperature 1 only; the memory LM's own is used",
        } in config["adapted"]
        assert "note: memory LM openai/o4-mini: sample_temperature 0.7 -> 1" in capsys.readouterr().err
        knobs.write_text(json.dumps({"knobs": {"samples": 2, "N": 1, "sample_temperature": 0.7}}))
        sent = len(stub.received)
        assert cli.main([*base, "--lm", "openai/o4-mini", "--out", str(tmp_path / "refused")]) == 2
        assert len(stub.received) == sent
    assert one_error_line(capsys.readouterr().err) == (
        f"error: --config {knobs} sample_temperature 0.7 cannot be sent to the memory LM openai/o4-mini: "
        "OpenAI's reasoning models take temperature 1 only"
    )
