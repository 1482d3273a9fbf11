"""The paper tables and the demo take each role's LM settings as a single run does (``--lm-arg``, ``--memory-lm-arg``,
``--preset``, ``--lm-config``): sent with every cell's calls, refused before any call where a model's provider
refuses them, saved in each cell's config.json, and the same command finishes a stopped table. Runs talk to the
loopback stub server replaying recorded provider shapes; assertions on settings read the requests it received."""

import json
import time
from pathlib import Path

import pytest

import memreason.eval.experience_transfer.table_cells as table_cells
import memreason.lm.rate as rate
from memreason.eval.cli import main as eval_main
from memreason.lm import LMChoice, ScriptedEngine
from memreason.lm.stub_server import StubServer, load_shape

ROOT = Path(__file__).resolve().parents[3]
SHAPES = ROOT / "tests" / "data" / "provider_shapes"
QUIET = ["--no-progress", "--no-report"]


def shapes(**by_key: str) -> dict:
    return {key: load_shape(SHAPES / f"{name}.json")[1] for key, name in by_key.items()}


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(name, "stub-key")


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("error:") or "Traceback" in line]
    assert len(lines) == 1, err
    return lines[0]


def cell_configs(out: Path) -> list[dict]:
    return [json.loads(path.read_text()) for path in sorted((out / "cells").glob("*/config.json"))]


def test_a_table_sends_each_roles_settings_saves_them_in_each_cell_and_continues(tmp_path):
    out = tmp_path / "tables"
    with StubServer(latency=0, fail_rate=0) as stub:
        argv = ["table3", "--levels", "1", "--rows", "episodic_cot,hdr", "--limit", "1", "--lm", "openai/stub"]
        argv += ["--lm-arg", "top_p=0.5", "--memory-lm-arg", "seed=3", "--api-base", stub.url, "--out", str(out), *QUIET]
        assert eval_main(argv) == 0
        bodies = stub.bodies()
        sent = len(stub.received)
        assert eval_main(argv) == 0  # the same command reads the finished cells back
        assert len(stub.received) == sent
    memory = [b for b in bodies if "seed" in b]  # the memory LM: a copy of the task LM with its own settings
    assert memory and len(memory) < len(bodies) and {b["seed"] for b in memory} == {3}
    assert {b["top_p"] for b in bodies} == {0.5}
    configs = cell_configs(out)
    assert len(configs) == 2
    assert all((c["lm_args"], c["memory_lm_args"]) == ({"top_p": 0.5}, {"seed": 3}) for c in configs)
    assert all("-lm-" in Path(c["out"]).name for c in configs)  # other settings, another cell


def test_a_stopped_table_finishes_with_the_same_settings(tmp_path):
    out = tmp_path / "tables"
    with StubServer(latency=0, fail_rate=0, shapes=shapes(openai="openai_reasoning_chat")) as stub:
        argv = ["table2", "--levels", "1", "--rows", "episodic,episodic_cot", "--limit", "1", "--lm", "openai/o4-mini"]
        argv += ["--lm-arg", "reasoning_effort=low", "--api-base", stub.url, "--out", str(out), *QUIET]
        assert eval_main(argv) == 0
        first = sorted((out / "cells").iterdir())[0]
        (first / "results.json").unlink()  # as if stopped before its end
        (out / "table2.json").unlink()
        before = len(stub.received)
        assert eval_main(argv) == 0
        assert len(stub.received) == before  # the stopped cell continues from its records, nothing asked again
    assert json.loads((out / "table2.json").read_text())["rows"][0]["cells"][0]["cell"] == str(first)
    assert {b["reasoning_effort"] for b in stub.bodies()} == {"low"}
    assert all(c["adapted"][0]["setting"] == "temperature" for c in cell_configs(out))  # 0 went out as 1


def test_a_refused_setting_stops_a_table_before_any_call(tmp_path, capsys):
    with StubServer(latency=0, fail_rate=0) as stub:
        argv = ["table2", "--levels", "1", "--limit", "1", "--lm", "openai/gpt-4o-mini,openai/o4-mini", "--lm-arg", "top_p=0.5"]
        assert eval_main([*argv, "--api-base", stub.url, "--out", str(tmp_path / "t"), *QUIET]) == 2
        assert stub.received == []  # not even the first column's cells
    assert one_error_line(capsys.readouterr().err) == (
        "error: --lm-arg top_p 0.5 cannot be sent to the task LM openai/o4-mini: OpenAI's reasoning models refuse top_p"
    )


def test_table5_has_no_task_lm_to_set(tmp_path, capsys):
    argv = ["table5", "--levels", "1", "--memory-lm", "openai/gpt-4.1", "--lm-arg", "top_p=0.5", "--out", str(tmp_path)]
    assert eval_main(argv) == 2
    assert one_error_line(capsys.readouterr().err).startswith("error: --lm-arg top_p: table5 has no task LM")


def test_table5_builds_memories_with_the_memory_roles_settings(tmp_path, capsys):
    out = tmp_path / "tables"
    with StubServer(latency=0, fail_rate=0, shapes=shapes(openai="openai_reasoning_chat")) as stub:
        argv = ["table5", "--levels", "1", "--rows", "direct_hypothesis", "--memory-lm", "openai/o4-mini"]
        argv += ["--memory-lm-arg", "reasoning_effort=high", "--api-base", stub.url, "--out", str(out), *QUIET]
        assert eval_main(argv) == 0
        assert stub.bodies() and {(b["reasoning_effort"], b["temperature"]) for b in stub.bodies()} == {("high", 1.0)}
        assert eval_main([*argv[:-8], "--memory-lm-arg", "temperature=0.2", *argv[-6:]]) == 2
    assert one_error_line(capsys.readouterr().err) == (
        "error: --memory-lm-arg temperature 0.2 cannot be sent to the memory LM openai/o4-mini: "
        "OpenAI's reasoning models take temperature 1 only"
    )
    (config,) = cell_configs(out)
    assert config["memory_lm_args"] == {"reasoning_effort": "high"} and config["adapted"][0]["sent"] == 1.0


def test_the_demo_takes_a_preset_and_continues(tmp_path, capsys):
    out = tmp_path / "demo"
    gemini = shapes(gemini="gemini_thinking_generate")
    with StubServer(latency=0, fail_rate=0, shapes=gemini) as stub:
        argv = ["demo", "--preset", "hdr-paper", "--rows", "episodic_cot,hdr", "--limit", "1", "--threads", "1"]
        argv += ["--api-base", stub.url, "--memory-api-base", stub.url.removesuffix("/v1"), "--out", str(out), "--no-progress"]
        assert eval_main(argv) == 0
        task, memory = stub.bodies("openai"), stub.bodies("gemini")
        sent = len(stub.received)
        assert eval_main(argv) == 0
        assert len(stub.received) == sent  # finished rows are read back
    assert task and all((b["model"], b["temperature"], b["seed"]) == ("gpt-4o-2024-08-06", 0.0, 0) for b in task)
    configs = [b.get("generationConfig") or b.get("generation_config") for b in memory]
    assert memory and all(c["temperature"] == 0 and c["seed"] == 0 for c in configs)
    assert "preset hdr-paper (HDR, Section 5.1)" in capsys.readouterr().err
    saved = cell_configs(out)
    assert len(saved) == 2 and all((c["preset"], c["memory_lm"]) == ("hdr-paper", "gemini/gemini-2.5-flash") for c in saved)


def test_the_demo_refuses_a_refused_setting_before_any_call(tmp_path, capsys):
    with StubServer(latency=0, fail_rate=0) as stub:
        argv = ["demo", "--lm", "openai/o4-mini", "--temperature", "0.5", "--limit", "1", "--api-base", stub.url]
        assert eval_main([*argv, "--out", str(tmp_path / "demo"), "--no-progress"]) == 2
        assert stub.received == []
    assert one_error_line(capsys.readouterr().err) == (
        "error: --temperature 0.5 cannot be sent to the task LM openai/o4-mini: OpenAI's reasoning models take temperature 1 only"
    )


# -- Table 5's judge waits for its role's rate limit ----------------------------------------------------------


def test_table5s_judge_calls_respect_the_rate_limit(tmp_path, monkeypatch):
    """The judge is a memory-role LM: with no --memory-rpm, --rpm caps it (one limiter per model in the process)."""
    monkeypatch.setattr(rate, "WINDOW", 0.5)  # requests per half second, for the test's sake
    started: list[float] = []

    def judge(call):
        started.append(time.monotonic())
        return {"matches": []}

    engine = ScriptedEngine(judge)
    monkeypatch.setattr(table_cells, "resolve_lm", lambda spec, **kw: LMChoice(spec, engine.lm(), local=False))
    out = tmp_path / "tables"
    memories = out / "cells" / "memory-direct_hypothesis-L1-mem"  # a memory built before: only the judge is called
    memories.mkdir(parents=True)
    hypotheses = [f"hypothesis {i}" for i in range(4)]
    (memories / "memory-run0.json").write_text(json.dumps({"hypotheses": hypotheses}))
    argv = ["table5", "--levels", "1", "--rows", "direct_hypothesis", "--memory-lm", "mem", "--f1", "judge", "--rpm", "2"]
    assert eval_main([*argv, "--out", str(out), *QUIET]) == 0
    assert len(started) == 4
    # at most 2 requests in any window: the third starts a window after the first answer came back
    assert started[2] - started[0] >= 0.5 * 0.95 and started[3] - started[1] >= 0.5 * 0.95
