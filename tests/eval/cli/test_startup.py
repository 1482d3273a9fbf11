"""Commands start quickly: parsing the arguments, printing help and listing the tasks import no model library (DSPy,
LiteLLM) and no reasoning-gym; a command imports them when it runs something (each check in a fresh interpreter)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

HEAVY = ("dspy", "litellm", "reasoning_gym")


def imported(code: str) -> dict:
    """What ``code`` printed, and which of :data:`HEAVY` it imported, run in a fresh interpreter."""
    probe = (
        "import contextlib, io, json, sys\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        + "".join(f"    {line}\n" for line in code.splitlines())
        + f"heavy = sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r})\n"
        + "print(json.dumps({'out': out.getvalue(), 'heavy': heavy}))\n"
    )
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def main_of(argv: list[str]) -> str:
    return f"from memreason.eval.cli import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n    pass"


@pytest.mark.parametrize(
    "argv",
    [["--help"], ["stream_baseline", "--help"], ["hdr", "--help"], ["arcmemo_ps", "--help"], ["table3", "--help"]],
)
def test_help_imports_no_model_library(argv):
    found = imported(main_of(argv))
    assert found["heavy"] == []
    assert "usage:" in found["out"]


def test_listing_the_tasks_imports_no_model_library():
    found = imported(main_of(["tasks"]))
    assert found["heavy"] == []
    assert "rg:NAME (stream" in found["out"] and "    programs: stream_baseline, fewshot" in found["out"]


def test_the_parser_is_built_without_a_model_library():
    assert imported("from memreason.eval.cli import build_parser\nbuild_parser()")["heavy"] == []


def test_the_programs_are_listed_without_importing_them_and_named_they_are():
    listed = imported("from memreason.programs import PROGRAMS\nprint(len(PROGRAMS))")
    assert listed["heavy"] == [] and int(listed["out"]) > 30
    named = imported("from memreason.programs import FewShot, PROGRAMS\nprint(PROGRAMS['fewshot'].build().__class__ is FewShot)")
    assert named["heavy"] == ["dspy"] and named["out"].strip() == "True"


def test_a_run_imports_the_model_libraries_when_it_runs():
    # the same names as ever: what a command needs is imported once it is asked for
    found = imported("from memreason.lm import resolve_lm\nfrom memreason.eval.stream.task import GymTask\nGymTask('puzzle24')")
    assert found["heavy"] == ["dspy", "reasoning_gym"]


def test_a_finished_run_asked_again_imports_no_model_library(tmp_path, monkeypatch):
    from memreason.eval.cli import main
    from memreason.lm import LMChoice, ScriptedEngine
    from tests.helpers.stream_answers import respond

    engine = ScriptedEngine(respond)
    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", lambda spec, **kw: LMChoice(spec, engine.lm(), local=False))
    run = tmp_path / "run"
    argv = ["stream_baseline", "--task", "rg:puzzle24", "--size", "2", "--seed-size", "0", "--lm", "openai/stub"]
    argv += ["--api-base", "http://127.0.0.1:9/v1", "--no-progress"]  # no server there: none asked
    assert main([*argv, "--out", str(run)]) == 0
    shutil.copytree(run, tmp_path / "copy")  # times kept; the copy is not locked by this process, which holds the run
    argv += ["--out", str(tmp_path / "copy")]
    found = imported(f"from memreason.eval.cli import main\nprint('exit', main({argv!r}))")
    assert found["heavy"] == []  # its saved results, read before any model library or the task's data
    assert "stream_baseline on rg:puzzle24: accuracy" in found["out"] and found["out"].endswith("exit 0\n")
