"""The memory role's own generation settings in ARC runs (ArcMemo, Appendix A.2): temperature 0.3 and at most
1000 tokens for concept selection and abstraction, the solver on its own temperature and ``--max-tokens``."""

import json
import sys
import textwrap
from pathlib import Path

import dspy
import pytest

import memreason.eval.arc.sandbox as arc_sandbox
from memreason.eval.cli import build_parser
from memreason.eval.cli import build_parser as et_parser
from memreason.eval.cli import main as eval_main
from memreason.eval.harness.errors import UsageError
from memreason.eval.harness.lms import resolve_lms
from memreason.lm import LMChoice, LMConfigError, ScriptedEngine, resolve_lm
from memreason.lm import server as server_module
from memreason.lm.resolve import with_generation
from tests.helpers.arc_helpers import FLIP, memory_file, small_sandbox, tiny  # noqa: F401
from tests.helpers.scripted_answers import Script, outputs

ROOT = Path(__file__).resolve().parents[3]


class RecordingEngine(ScriptedEngine):
    """A scripted engine that notes, per call, the output asked for and the temperature and cap it was sent with."""

    def __init__(self, respond):
        super().__init__(respond)
        self.settings: list[tuple[str, float | None, int | None]] = []

    def complete(self, request):
        response = super().complete(request)
        self.settings.append((outputs(self.calls[-1])[-1], request.config.temperature, request.config.max_tokens))
        return response


def resolver(engine, resolved=None):
    """A stand-in for ``resolve_lm``: an LM on ``engine`` built with the settings asked for (noted in ``resolved``)."""

    def resolve(spec, **choose):
        if resolved is not None:
            resolved.append((spec, choose))
        return LMChoice(
            spec or "embedded", engine.lm(temperature=choose["temperature"], max_tokens=choose["max_tokens"]), local=False
        )

    return resolve


def settings(choice: LMChoice) -> tuple[float | None, int | None]:
    return choice.lm.kwargs.get("temperature"), choice.lm.kwargs.get("max_tokens")


@pytest.fixture
def engine():
    return RecordingEngine(
        Script(
            program={"program": FLIP},
            selected={"reasoning": "cues", "selected": ["flip rows"]},
            pseudocode={"pseudocode": "1. flip each row"},
            concepts={"concepts": [{"title": "flip rows", "kind": "routine"}]},
        )
    )


@pytest.fixture
def scripted(engine, monkeypatch):
    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", resolver(engine))
    monkeypatch.setattr(arc_sandbox, "make_sandbox", lambda workers, wall_seconds: small_sandbox())
    return engine


def arc_lms(argv: list[str], engine, resolved=None) -> tuple[LMChoice, LMChoice]:
    """The LMs an ARC evaluation with ``argv`` resolves."""
    args = build_parser().parse_args(["arcmemo_ps", *argv])
    return resolve_lms(
        args,
        temperature=0.0,
        memory_temperature=args.memory_temperature,
        memory_max_tokens=args.memory_max_tokens,
        resolve=resolver(engine, resolved),
    )


# -- resolution ------------------------------------------------------------------------------------


def test_the_memory_lm_gets_the_papers_settings_by_default(engine):
    task, memory = arc_lms(["--max-tokens", "32000"], engine)
    assert settings(task) == (0.0, 32000)  # the solver's cap; its temperature comes with each attempt
    assert settings(memory) == (0.3, 1000)
    assert memory is not task and memory.lm is not task.lm
    assert (memory.spec, memory.local) == (task.spec, task.local)
    assert settings(task) == (0.0, 32000)  # copying left the task LM alone


def test_the_memory_flags_set_the_memory_lm(engine):
    task, memory = arc_lms(["--memory-temperature", "0.5", "--memory-max-tokens", "2000"], engine)
    assert settings(task) == (0.0, None)
    assert settings(memory) == (0.5, 2000)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--memory-temperature", "2.5"], "--memory-temperature must be in [0, 2]"),
        (["--memory-temperature", "warm"], "--memory-temperature must be a number"),
        (["--memory-max-tokens", "0"], "--memory-max-tokens must be at least 1"),
    ],
)
def test_bad_memory_flags_are_refused(argv, message):
    with pytest.raises(UsageError, match=message.replace("[", r"\[").replace("]", r"\]")):
        build_parser().parse_args(["arcmemo_ps", *argv])


def test_a_named_memory_lm_is_resolved_with_the_memory_settings(engine):
    resolved = []
    task, memory = arc_lms(
        ["--lm", "openai/o4-mini", "--max-tokens", "32000", "--memory-lm", "openai/gpt-4.1", "--memory-temperature", "0.3"],
        engine,
        resolved,
    )
    assert [(spec, choose["temperature"], choose["max_tokens"]) for spec, choose in resolved] == [
        ("openai/o4-mini", 0.0, 32000),
        ("openai/gpt-4.1", 0.3, 1000),
    ]
    assert (task.spec, memory.spec) == ("openai/o4-mini", "openai/gpt-4.1")
    assert settings(memory) == (0.3, 1000)


def test_other_clis_keep_the_task_lm_for_memory(engine):
    """Experience Transfer and optimize pass no memory settings: the memory LM is the task LM, as before."""
    args = et_parser().parse_args(["hdr", "--level", "1", "--max-tokens", "500"])
    task, memory = resolve_lms(args, resolve=resolver(engine))
    assert memory is task and settings(task) == (0.0, 500)
    resolved = []
    args = et_parser().parse_args(["hdr", "--level", "1", "--memory-lm", "openai/gpt-4.1", "--temperature", "0.2"])
    task, memory = resolve_lms(args, resolve=resolver(engine, resolved))
    first, second = ({k: v for k, v in choose.items() if k != "role"} for _, choose in resolved)
    assert first == second  # same settings for both (each named by its role)
    assert [choose["role"] for _, choose in resolved] == ["task LM", "memory LM"]
    assert settings(memory) == (0.2, None)
    with pytest.raises(UsageError, match="--memory-temperature"):
        et_parser().parse_args(["hdr", "--memory-temperature", "0.3"])


def test_an_openai_reasoning_model_keeps_its_own_cap_field(monkeypatch):
    reasoning = LMChoice("openai/o4-mini", dspy.LM("openai/o4-mini", temperature=1.0, max_tokens=32000), local=False)
    copied = with_generation(reasoning, temperature=1.0, max_tokens=16000)
    assert copied.lm.kwargs["max_completion_tokens"] == 16000 and "max_tokens" not in copied.lm.kwargs
    with pytest.raises(LMConfigError, match="reasoning models take temperature 1"):
        with_generation(reasoning, temperature=0.3, max_tokens=1000)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with pytest.raises(LMConfigError, match="temperature 0.3 cannot be sent to the task LM openai/o4-mini"):  # one line
        resolve_lm("openai/o4-mini", temperature=0.3, max_tokens=1000)
    # a temperature of 0 is a temperature: given, refused; a default, adapted (it was sent as 0.0 before)
    with pytest.raises(LMConfigError, match="temperature 0 cannot be sent to the memory LM"):
        with_generation(reasoning, temperature=0.0, max_tokens=None)
    adapted = with_generation(reasoning, temperature=0.0, max_tokens=None, given={})
    assert adapted.lm.kwargs["temperature"] == 1.0 and [a.setting for a in adapted.adapted] == ["temperature"]


@pytest.fixture
def stub_server(tmp_path, monkeypatch):
    """A stand-in llama-server (``memreason.lm.stub_server``) and a GGUF file for it; servers stopped afterwards."""
    script = tmp_path / "llama-server"
    script.write_text(
        textwrap.dedent(f"""\
        #!/bin/sh
        exec {sys.executable} -m memreason.lm.stub_server --as-llama-server --latency 0 --fail-rate 0 --lifetime 120 "$@"
        """)
    )
    script.chmod(0o755)
    monkeypatch.setenv("MEMREASON_LLAMA_SERVER", str(script))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("MEMREASON_CACHE", str(tmp_path / "cache"))
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF")
    yield model
    server_module.stop_all()
    server_module._servers.clear()


def test_a_local_memory_lm_is_a_copy_on_the_same_server(stub_server):
    task = resolve_lm(f"local:{stub_server}", cache=False, temperature=0.0)
    memory = with_generation(task, temperature=0.3, max_tokens=1000)
    assert memory.local and memory.spec == task.spec and memory.adapter().__class__ is task.adapter().__class__
    server = task.lm.server
    assert memory.lm.server is server and server.generation == 1
    with dspy.context(lm=memory.lm, adapter=memory.adapter()):
        answer = dspy.Predict("question -> count: int")(question="how many?")
    assert isinstance(answer.count, int)
    assert server.generation == 1 and server.stats.calls == 1  # answered by the one running server
    assert settings(memory) == (0.3, 1000) and settings(task) == (0.0, None)


# -- the CLI ------------------------------------------------------------------------------------------


def by_output(engine) -> dict[str, set[tuple[float | None, int | None]]]:
    seen: dict[str, set] = {}
    for output, temperature, cap in engine.settings:
        seen.setdefault(output, set()).add((temperature, cap))
    return seen


def test_an_arc_run_sends_memory_calls_with_the_memory_settings(tmp_path, tiny, memory_file, scripted):
    out = tmp_path / "run"
    assert (
        eval_main(
            [
                "arcmemo_ps",
                "--split",
                str(tiny),
                "--memory",
                str(memory_file),
                "--attempts",
                "1",
                "--max-tokens",
                "4000",
                "--out",
                str(out),
                "--no-progress",
                "--no-report",
            ]
        )
        == 0
    )
    seen = by_output(scripted)
    assert seen.pop("program") == {(0.7, 4000)}  # the solver: its --temperature, its --max-tokens
    assert seen and all(sent == {(0.3, 1000)} for sent in seen.values())  # concept selection: the memory role
    config = json.loads((out / "config.json").read_text())
    assert (config["memory_temperature"], config["memory_max_tokens"], config["max_tokens"]) == (0.3, 1000, 4000)


def test_build_memory_abstracts_with_the_memory_settings(tmp_path, tiny, scripted):
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    (solutions / "a_flip.py").write_text(FLIP)
    log = tmp_path / "log"
    assert (
        eval_main(
            [
                "build_memory",
                "--format",
                "ps",
                "--split",
                str(tiny),
                "--solutions",
                str(solutions),
                "--out",
                str(tmp_path / "ps.json"),
                "--run-dir",
                str(log),
                "--memory-temperature",
                "0.2",
                "--memory-max-tokens",
                "800",
                "--no-progress",
                "--no-report",
            ]
        )
        == 0
    )
    seen = by_output(scripted)
    assert seen and "program" not in seen and all(sent == {(0.2, 800)} for sent in seen.values())
    config = json.loads((log / "config.json").read_text())
    assert (config["memory_temperature"], config["memory_max_tokens"]) == (0.2, 800)
    argv = [
        "build_memory",
        "--format",
        "ps",
        "--split",
        str(tiny),
        "--solutions",
        str(solutions),
        "--out",
        str(tmp_path / "ps.json"),
        "--run-dir",
        str(log),
        "--no-progress",
    ]
    assert eval_main(argv) == 2  # the defaults (0.3, 1000) are another build


def test_a_continued_run_with_other_memory_settings_is_refused(tmp_path, tiny, scripted, capsys):
    out = tmp_path / "run"
    argv = ["baseline", "--split", str(tiny), "--attempts", "1", "--out", str(out), "--no-progress", "--no-report"]
    assert eval_main(argv) == 0
    capsys.readouterr()
    assert eval_main([*argv, "--memory-temperature", "0.7"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "memory_temperature 0.3 != 0.7" in err
    assert eval_main([*argv, "--memory-max-tokens", "2000"]) == 2
    assert eval_main(argv) == 0  # the same settings: continued


def test_a_run_saved_before_the_memory_settings_resumes_with_the_old_ones(tmp_path, tiny, scripted, monkeypatch, capsys):
    """Such a run made its memory calls at temperature 0 with the solver's cap: --resume goes on that way, while
    the new defaults are another run (one line, exit 2)."""
    out = tmp_path / "run"
    argv = ["baseline", "--split", str(tiny), "--attempts", "1", "--out", str(out), "--no-progress", "--no-report"]
    assert eval_main(argv) == 0
    config = json.loads((out / "config.json").read_text())
    del config["memory_temperature"], config["memory_max_tokens"]
    (out / "config.json").write_text(json.dumps(config))
    capsys.readouterr()
    assert eval_main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert "memory_temperature 0.0 != 0.3" in err and "memory_max_tokens None != 1000" in err
    lms = []
    import memreason.eval.harness.setup as run_setup

    real = run_setup.resolve_lms
    monkeypatch.setattr(run_setup, "resolve_lms", lambda *a, **kw: lms.append(real(*a, **kw)) or lms[-1])
    assert eval_main(["--resume", str(out), "--no-progress", "--no-report"]) == 0
    ((task, memory),) = lms
    assert settings(task) == (0.0, None) and settings(memory) == (0.0, None)  # as the run was made
    assert "memory_temperature" not in json.loads((out / "config.json").read_text())  # its config is kept as it was


@pytest.mark.parametrize("threads, attempts, slots", [(5, 2, 10), (2, 2, 8), (3, 1, 8)])
def test_an_arc_run_asks_the_server_for_a_slot_per_attempt_of_each_task_at_once(
    tmp_path, tiny, engine, monkeypatch, threads, attempts, slots
):
    resolved = []
    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", resolver(engine, resolved))
    monkeypatch.setattr(arc_sandbox, "make_sandbox", lambda workers, wall_seconds: small_sandbox())
    argv = ["baseline", "--split", str(tiny), "--threads", str(threads), "--attempts", str(attempts), "--one-prefill"]
    assert eval_main([*argv, "--out", str(tmp_path / "run"), "--no-progress", "--no-report"]) == 0
    assert {choose["slots"] for _, choose in resolved} == {slots}  # threads x attempts, never under the default 8
