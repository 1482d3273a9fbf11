"""The ``python -m optimize`` command line: one root parser with subcommands, typed options for the library, a help
for every command users type, and bad values refused by the parser in one line."""

import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import memreason.optimize.cli as cli
from memreason.eval.cli.options import OPTIONS as COMMON
from memreason.eval.harness.options import LMOptions
from memreason.optimize.cli import compile as compile_command
from memreason.optimize.cli import study as study_command
from memreason.optimize.cli.common import OPTIONS
from memreason.optimize.compile import CompileOptions
from memreason.optimize.consolidator import ConsolidatorOptions
from memreason.optimize.tune import StudyOptions
from memreason.programs import PROGRAMS

ROOT = Path(__file__).resolve().parents[2]
OPTIMIZE = ROOT / "optimize"
COMMANDS = [
    [],
    ["compile"],
    ["compile", "consolidator"],
    *([name] for name in PROGRAMS),
    *(["compile", name] for name in PROGRAMS),
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda words: " ".join(words) or "(root)")
def test_every_command_has_a_help_that_exits_0(command, capsys):
    assert cli.main([*command, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: memreason-optimize" + "".join(f" {word}" for word in command))


def test_python_m_optimize_help_from_the_repository_root():
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run(
        [sys.executable, "-m", "optimize", "compile", "consolidator", "--help"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "--labeled-demos" in done.stdout and "--optimizer {bootstrap,mipro,gepa,simba}" in done.stdout


HEAVY = ("dspy", "litellm", "optuna")  # what a study or a compile needs, and no help


@pytest.mark.parametrize("command", [[], ["fewshot"], ["compile", "hdr"], ["compile", "consolidator"]])
def test_help_imports_neither_dspy_nor_litellm_nor_optuna(command):
    script = (
        "import sys\n"
        "from memreason.optimize.cli import main\n"
        "code = main(sys.argv[1:] + ['--help'])\n"
        f"print('loaded:', code, *sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))\n"
    )
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run([sys.executable, "-c", script, *command], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage: " in done.stdout
    assert done.stdout.splitlines()[-1] == "loaded: 0", done.stdout.splitlines()[-1]


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["hdr", "--level", "1"], StudyOptions(program="hdr", level=1)),
        (["arcmemo_ps"], StudyOptions(program="arcmemo_ps")),
        (["compile", "hdr", "--level", "1", "--optimizer", "gepa"], CompileOptions(program="hdr", level=1, optimizer="gepa")),
        (["compile", "arcmemo_ps", "--optimizer", "bootstrap"], CompileOptions(program="arcmemo_ps", optimizer="bootstrap")),
        (["compile", "consolidator", "--optimizer", "gepa"], ConsolidatorOptions(optimizer="gepa")),
    ],
)
def test_the_parser_and_the_typed_options_default_alike(argv, expected):
    assert type(expected).from_args(cli.build_parser().parse_args(argv)) == expected


def test_each_command_hands_its_library_function_typed_options():
    parser = cli.build_parser()
    args = parser.parse_args(
        [
            "hdr",
            "--level",
            "2",
            "--trials",
            "5",
            "--param",
            "K=1:2",
            "--param",
            "cot=false",
            "--objectives",
            "accuracy,tokens",
            "--sampler",
            "grid",
            "--threads",
            "3",
            "--out",
            "here",
            "--lm",
            "openai/x",
            "--lm-retries",
            "0",
            "--mlflow",
        ]
    )
    study = StudyOptions.from_args(args)
    assert isinstance(study, LMOptions) and args.handler is study_command.run
    assert (study.program, study.level, study.trials, study.param, study.objectives, study.sampler) == (
        "hdr",
        2,
        5,
        ["K=1:2", "cot=false"],
        "accuracy,tokens",
        "grid",
    )
    assert (study.threads, study.out, study.lm, study.lm_retries, study.mlflow) == (3, Path("here"), "openai/x", 0, "")

    args = parser.parse_args(
        [
            "compile",
            "arcmemo_ps",
            "--optimizer",
            "mipro",
            "--split",
            "val100",
            "--memory",
            "ps.json",
            "--knob",
            "top_k=1",
            "--knob",
            "attempts=1",
            "--candidates",
            "2",
            "--trainset-size",
            "4",
        ]
    )
    compiled = CompileOptions.from_args(args)
    assert args.handler is compile_command.run_program
    assert (compiled.program, compiled.optimizer, compiled.split, compiled.memory, compiled.knob) == (
        "arcmemo_ps",
        "mipro",
        "val100",
        "ps.json",
        ["top_k=1", "attempts=1"],
    )
    assert (compiled.candidates, compiled.trainset_size, compiled.max_demos, compiled.level) == (2, 4, 4, None)

    args = parser.parse_args(
        [
            "compile",
            "consolidator",
            "--program",
            "hdr_grounded",
            "--optimizer",
            "bootstrap",
            "--paper-levels",
            "1,2",
            "--threshold",
            "0.8",
            "--level",
            "3",
            "--program-state",
            "s.json",
        ]
    )
    consolidator = ConsolidatorOptions.from_args(args)
    assert args.handler is compile_command.run_consolidator
    assert (consolidator.program, consolidator.paper_levels, consolidator.threshold, consolidator.level) == (
        "hdr_grounded",
        [1, 2],
        0.8,
        3,
    )
    assert (consolidator.program_state, consolidator.max_demos, consolidator.train_tables) == (Path("s.json"), 2, 8)


@pytest.mark.parametrize(
    "argv, message",
    [
        ([], "the following arguments are required: PROGRAM | compile"),
        (["compile"], "the following arguments are required: PROGRAM | consolidator"),
        (["hdr", "--trials", "4"], "hdr needs --level {1,2,3}"),
        (["compile", "hdr", "--optimizer", "gepa"], "the following arguments are required: --level"),
        (["compile", "hdr", "--level", "1"], "the following arguments are required: --optimizer"),
        (["hdr", "--level", "4"], "--level must be 1, 2 or 3, got 4"),
        (["hdr", "--level", "1", "--pruner", "hyperband"], "argument --pruner: invalid choice: 'hyperband'"),
        (["hdr", "--level", "1", "--demo-source", "mined"], "argument --demo-source: invalid choice: 'mined'"),
        (["hdr", "--level", "1", "--modality", "audio"], "argument --modality: invalid choice: 'audio'"),
        (["hdr", "--level", "1", "--objectives", "tokens"], "argument --objectives: invalid choice: 'tokens'"),
        (["hdr", "--level", "1", "--trials", "0"], "--trials must be at least 1, got 0"),
        (["hdr", "--level", "1", "--seed", "-1"], "--seed must be at least 0, got -1"),
        (["compile", "hdr", "--level", "1", "--optimizer", "gepa", "--max-demos", "-1"], "--max-demos must be at least 0"),
        (
            ["compile", "consolidator", "--optimizer", "gepa", "--labeled-rules", "some"],
            "argument --labeled-rules: invalid choice: 'some'",
        ),
        (["compile", "consolidator", "--optimizer", "gepa", "--threshold", "-0.5"], "--threshold must be at least 0"),
        (["compile", "consolidator", "--optimizer", "gepa", "--split", "val100"], "unrecognized arguments: --split val100"),
        (["nosuch"], "unknown program 'nosuch'; choose from: "),
        (["compile", "nosuch"], "unknown program 'nosuch'; choose from: "),
    ],
)
def test_bad_values_are_refused_by_the_parser_in_one_line(argv, message, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1
    assert not list(tmp_path.iterdir())  # nothing made


def test_the_namespace_dies_at_the_edge():
    """Below optimize/cli/ no module imports argparse or takes a parsed namespace."""
    for path in OPTIMIZE.rglob("*.py"):
        if path.relative_to(OPTIMIZE).parts[0] == "cli":
            continue
        text = path.read_text()
        assert not re.search(r"\bargparse\b|\bNamespace\b|\bargs\.", text), path


def test_every_option_is_declared_once():
    """Options more than one command takes come from eval's OPTIONS or optimize's own; the rest once, in one module."""
    assert not set(OPTIONS) & set(COMMON)
    declared = Counter()
    for path in (OPTIMIZE / "cli").glob("*.py"):
        declared.update(re.findall(r'add_argument\(\s*"(--[a-z0-9-]+)"', path.read_text()))
    assert not set(declared) & (set(OPTIONS) | set(COMMON))
    assert [flag for flag, n in declared.items() if n > 1] == []
