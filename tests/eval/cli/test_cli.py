"""The command-line layer: every command the documentation has shown still parses, --help works for each, and
a run saved by an earlier version of the command line resumes."""

import json
import shlex
import shutil
from pathlib import Path

import pytest

import memreason.eval.arc.sandbox as arc_sandbox
from memreason.eval.cli import build_parser as eval_parser
from memreason.eval.cli import main as eval_main
from memreason.eval.harness.runs import comparable
from memreason.eval.stats import wilson_ci
from memreason.lm import LMChoice, ScriptedEngine
from memreason.optimize.cli import build_parser as optimize_parser
from tests.helpers.arc_helpers import four_tasks, small_sandbox, write_tasks
from tests.helpers.scripted_answers import oracle_counter

SAVED = Path(__file__).resolve().parents[2] / "data" / "saved_runs"

# Command lines the README showed before the command line became one root parser per entry point
# (each as it was printed, continuation lines dropped, shell variables given a value).
README_COMMANDS = """
python -m eval demo
python -m eval episodic_cot --level 1 --limit 24
python -m eval hdr --level 1 --config runs/optimize/hdr-L1/best.json --program-state runs/optimize/hdr-L1/best_program.json
python -m eval hdr --level 1 --mlflow
python -m eval hdr --level 1 --mlflow http://localhost:5000
python -m eval hdr --level 2 --per-object --retrieve-k 3 --threads 16 --max-tokens 2048
python -m eval hdr_grounded --level 1 --limit 6 --per-object --threads 6 --mlflow
python -m eval arcmemo_oe --split val100 --tasks 00576224,009d5c81 --memory oe-seeds.json --top-k 3 --attempts 2 --retries 1 --retry-mode passes --continual-every 5 --max-tokens 768 --threads 4
python -m eval arcmemo_ps --split val100 --tasks 00576224 --memory ps-seeds.json --attempts 2 --retries 1 --max-tokens 768
python -m eval arcmemo_ps --split val100 --memory ps.json --config runs/optimize/arcmemo_ps-val100/best.json
python -m eval baseline --split val100 --tasks 00576224 --attempts 2 --retries 1 --max-tokens 768
python -m eval build_memory --format oe --split barc_seeds --solutions datasets/arc/seed_solutions --threads 4 --out oe-seeds.json
python -m eval build_memory --format ps --split barc_seeds --solutions datasets/arc/seed_solutions --max-tokens 768 --out ps-seeds.json
python -m eval show RUN_DIR --id L1-s004 --messages
python -m eval show RUN_DIR --step hypothesis_generator
python -m eval show RUN_DIR --wrong
python -m eval report RUN_DIR OTHER_RUN_DIR
python -m eval arc_table RUN_DIR OTHER_RUN_DIR
python -m eval table2 --levels 1,2,3 --lm openai/gpt-4o,embedded --runs 3
python -m eval table3 --levels 1,2 --rows episodic_cot,semantic_oracle_cot,hdr,hdr_grounded --per-object --threads 16
python -m eval table3 --levels 2 --rows semantic_oracle_cot,hdr_grounded,episodic_cot --per-object --retrieve-k 3 --threads 16 --out runs/po
python -m eval table3 --levels 1 --rows hdr --threads 16 --max-tokens 2048 --out runs/tables
python -m eval table4 --memory-lms gemini/gemini-2.5-flash,openai/gpt-4o --lm openai/gpt-4o
python -m eval table5 --levels 1,2,3 --memory-lm gemini/gemini-2.5-flash
python -m eval table5 --levels 1,2,3 --rows hdr --program-state hdr=DIR/program.json
python -m eval table5 --levels 2 --rows hdr_grounded --rules datasets/experience_transfer/example_table.json --out runs/example
python -m optimize hdr --level 1 --trials 8 --limit 30 --enqueue K=2,N=3,cot=true,demos=0
python -m optimize hdr --level 1 --trials 20 --objectives accuracy,tokens
python -m optimize hdr --level 2 --trials 8 --program-state DIR/program.json
python -m optimize arcmemo_ps --split val100 --memory ps.json --trials 20 --limit 10 --param attempts=2
python -m optimize compile hdr --level 1 --optimizer bootstrap --trainset-size 20 --out runs/compiled/hdr-bootstrap
python -m optimize compile consolidator --program hdr --optimizer gepa --budget 8 --train-tables 3 --val-tables 2
python -m optimize compile consolidator --program hdr --optimizer bootstrap --max-demos 0 --labeled-demos 3 --labeled-rules specific
python -m optimize compile consolidator --program hdr_grounded --optimizer bootstrap --threshold 0.8 --max-demos 1
""".strip().splitlines()


def _parser_and_words(line: str):
    words = shlex.split(line)[2:]
    return (eval_parser() if words[0] == "eval" else optimize_parser()), words[1:]


@pytest.mark.parametrize("line", README_COMMANDS)
def test_every_documented_command_still_parses(line):
    parser, words = _parser_and_words(line)
    args = parser.parse_args(words)
    assert callable(args.handler)


@pytest.mark.parametrize(
    "line", sorted({" ".join(shlex.split(line)[: 4 if " compile " in line else 3]) for line in README_COMMANDS})
)
def test_help_of_every_documented_command(line, capsys):
    parser, words = _parser_and_words(line)
    with pytest.raises(SystemExit) as exit:
        parser.parse_args([*words, "--help"])
    assert exit.value.code == 0 and "usage:" in capsys.readouterr().out


def test_bad_values_are_refused_by_the_parser_in_one_line(capsys):
    for argv in (
        ["hdr", "--level", "4"],
        ["hdr", "--level", "1", "--seed", "-1"],
        ["hdr", "--level", "1", "--limit", "0"],
        ["hdr", "--modality", "audio"],
        ["table5", "--f1", "guess"],
        ["nosuchprogram"],
    ):
        assert eval_main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and len(err.strip().splitlines()) == 1, (argv, err)


def _saved(name: str, tmp_path: Path) -> Path:
    run = tmp_path / name
    shutil.copytree(SAVED / name, run)
    return run


def test_an_experience_transfer_run_saved_before_the_change_resumes(tmp_path, monkeypatch):
    engine = ScriptedEngine(oracle_counter())
    monkeypatch.setattr(
        "memreason.eval.harness.lms.resolve_lm", lambda spec, **kw: LMChoice(spec or "embedded", engine.lm(), local=False)
    )
    run = _saved("episodic_cot-L2", tmp_path)
    before = json.loads((run / "results.json").read_text())
    assert len((run / "examples.jsonl").read_text().splitlines()) == 4  # 6 asked for, 2 lost in a crash
    assert eval_main(["--resume", str(run), "--no-progress", "--no-report"]) == 0
    assert len(engine.calls) == 2  # only the two missing scenes were answered
    after = json.loads((run / "results.json").read_text())
    new = {"accuracy_ci", "accuracy_by_objects_ci", "ci_method", "manifest"}  # the intervals and the manifest, added
    assert new <= set(after) and not new & set(before)
    assert {k: v for k, v in comparable(after).items() if k not in new} == comparable(before)
    assert after["accuracy_ci"] == list(wilson_ci(6, 6))  # the oracle answered every scene right: Wilson's, never [1, 1]
    assert set(after["accuracy_by_objects_ci"]) == {"2", "3", "4"}
    assert all(low < 1.0 == high for low, high in after["accuracy_by_objects_ci"].values())


def test_an_arc_run_saved_before_the_change_resumes(tmp_path, monkeypatch):
    from tests.eval.arc.test_resume import script

    engine = ScriptedEngine(script())
    monkeypatch.setattr(
        "memreason.eval.harness.lms.resolve_lm",
        lambda spec, **kw: LMChoice(spec or "embedded", engine.lm(cache=True), local=False),
    )
    monkeypatch.setattr(arc_sandbox, "make_sandbox", lambda workers, wall_seconds: small_sandbox())
    run = _saved("arcmemo_ps", tmp_path)
    split = write_tasks(tmp_path / "split", *four_tasks())
    config = json.loads((run / "config.json").read_text())
    config["split"], config["out"] = str(split), str(run)  # where this copy of the run and its tasks live
    (run / "config.json").write_text(json.dumps(config))
    before = json.loads((run / "results.json").read_text())
    assert eval_main(["--resume", str(run), "--no-progress", "--no-report"]) == 0
    after = json.loads((run / "results.json").read_text())
    assert len((run / "examples.jsonl").read_text().splitlines()) == 4
    assert "answer" not in config and after["config"]["answer"] == "fields"  # as runs before --answer ran
    assert comparable(after)["oracle_at_k"] == comparable(before)["oracle_at_k"]
    levels = comparable(before)["by_retries"]  # the scores it had (later versions add keys, e.g. pooled ones per depth)
    assert {
        r: {k: v for k, v in level.items() if k in levels[r]} for r, level in comparable(after)["by_retries"].items()
    } == levels
    for key in ("official_score", "strict_score", "score_by_retries"):  # the scores it had, the same
        assert after[key] == before[key]
    for key in ("official_score", "strict_score"):  # and now a 95% CI over its tasks beside each
        assert after[f"{key}_ci"][0] <= after[key] <= after[f"{key}_ci"][1] and f"{key}_ci" not in before
    assert set(after["score_by_retries_ci"]) == set(after["score_by_retries"]) and after["ci_method"]["over"] == "tasks"


def test_a_reader_that_goes_away_stops_the_command_quietly():
    """`python -m eval tasks | head -1`: stdout's reader closes first; the command exits 141, no traceback."""
    import os
    import subprocess
    import sys

    read, write = os.pipe()
    os.close(read)  # the reader is gone before the command prints
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3]), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "eval", "tasks"], stdout=write, stderr=subprocess.PIPE, text=True, env=env, timeout=120
        )
    finally:
        os.close(write)
    assert done.returncode == 141, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr
