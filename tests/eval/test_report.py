"""Reports: every run writes report.md with PNG plots; ``python -m eval report`` compares runs."""

import json

import pytest

import memreason.eval.cli as cli
from memreason.eval.cli import main as report_main
from memreason.lm import LMChoice, ScriptedEngine
from tests.helpers.scripted_answers import oracle_counter

PNG = b"\x89PNG\r\n\x1a\n"

# results.json as eval/experience_transfer.py wrote it before failures, retries, steps and cost
OLD_RESULTS = {
    "program": "hdr",
    "task": "experience_transfer",
    "level": 2,
    "modality": "text",
    "lm": "embedded",
    "memory_lm": "embedded",
    "examples": 150,
    "runs": 3,
    "accuracy": {"mean": 0.4133, "std": 0.0411, "per_run": [0.36, 0.42, 0.46]},
    "accuracy_by_objects": {"2": 0.52, "3": 0.4, "4": 0.32},
    "errors": {"AdapterParseError": 2},
    "tokens": {
        "memory": {"prompt": 9000, "completion": 1200, "total": 10200, "calls": 12},
        "task": {"prompt": 450000, "completion": 30000, "total": 480000, "calls": 450},
    },
    "wall_seconds": 5321.4,
    "config": {"program": "hdr", "level": 2},
    "engine": {"calls": 462, "seconds": 5000.0},
}

ARC_RESULTS = {
    "program": "arcmemo_ps",
    "task": "arc",
    "split": "val100",
    "lm": "openai/gpt-4o-mini",
    "memory_lm": "openai/gpt-4o-mini",
    "examples": 100,
    "runs": 1,
    "official_score": 0.35,
    "strict_score": 0.3,
    "oracle_at_k": {"1": 0.31, "2": 0.35, "3": 0.38},
    "score_by_retries": {"0": 0.25, "1": 0.31, "2": 0.35},
    "tokens": {
        "memory": {"prompt": 100000, "completion": 0, "calls": 10},
        "task": {"prompt": 100000, "completion": 50000, "calls": 300},
    },
}


def write_run(folder, results):
    folder.mkdir(parents=True)
    (folder / "results.json").write_text(json.dumps(results))
    return folder


def assert_png(path):
    assert path.exists() and path.read_bytes()[:8] == PNG and path.stat().st_size > 2000


def test_every_run_writes_a_report_with_its_numbers_and_plots(tmp_path, monkeypatch, capsys):
    engine = ScriptedEngine(oracle_counter())
    monkeypatch.setattr(
        "memreason.eval.harness.lms.resolve_lm", lambda spec, **kw: LMChoice("scripted", engine.lm(), local=False)
    )
    out = tmp_path / "run"
    assert cli.main(["episodic_cot", "--level", "1", "--limit", "6", "--out", str(out), "--no-progress"]) == 0
    assert f"report: {out / 'report.md'}" in capsys.readouterr().out
    report = (out / "report.md").read_text()
    results = json.loads((out / "results.json").read_text())
    assert "# Run report: episodic_cot L1" in report
    assert "| 100.0 ± 0.0 |" in report  # the accuracy
    assert f"| {results['tokens']['task']['prompt']:,} |" in report  # task prompt tokens
    assert "| episodic_cot L1 | task | reasoner |" in report  # tokens by program step
    for name in ("accuracy_by_method.png", "accuracy_vs_tokens.png", "accuracy_by_objects.png"):
        assert_png(out / name)
        assert f"]({name})" in report
    assert not (out / "arc_score_vs_k.png").exists()


def test_a_report_reads_results_written_before_the_newer_keys(tmp_path, capsys):
    run = write_run(tmp_path / "old", OLD_RESULTS)
    assert report_main(["report", str(run)]) == 0
    assert capsys.readouterr().out.strip() == f"report: {run / 'report.md'}"
    report = (run / "report.md").read_text()
    assert "| 41.3 ± 4.1 |" in report and "36.0, 42.0, 46.0" in report
    assert "| hdr L2 | 2 | AdapterParseError 2 | — | — |" in report  # failures from the old "errors"
    assert "| hdr L2 | task | embedded | 450,000 | 30,000 | 450 | unknown |" in report  # local model: no price
    assert_png(run / "accuracy_by_method.png")


def test_runs_compared_side_by_side_with_arc_curves(tmp_path, capsys):
    one = write_run(tmp_path / "hdr", OLD_RESULTS)
    two = write_run(tmp_path / "episodic", {**OLD_RESULTS, "program": "episodic_cot", "accuracy": {"mean": 0.3, "std": 0.0}})
    arc = write_run(tmp_path / "arc", ARC_RESULTS)
    out = tmp_path / "compare"
    assert report_main(["report", str(one), str(two), str(arc), "--out", str(out)]) == 0
    report = (out / "report.md").read_text()
    assert "# Comparison of 3 runs" in report
    for row in ("| hdr L2 (embedded) |", "| episodic_cot L2 (embedded) |", "| arcmemo_ps val100 (openai/gpt-4o-mini) |"):
        assert row in report
    assert "| 35.0 | 30.0 | 31.0 | 35.0 | 38.0 |" in report  # official, strict, oracle@1..3
    assert "| 25.0 | 31.0 | 35.0 |" in report  # by retries
    # gpt-4o-mini at LiteLLM's offline price ($0.15 and $0.60 per million): memory $0.015, task $0.045
    assert "| $0.0600 |" in report and "| $0.0150 |" in report and "| $0.0450 |" in report
    for name in ("accuracy_by_method.png", "accuracy_vs_tokens.png", "arc_score_vs_k.png", "arc_score_vs_retries.png"):
        assert_png(out / name)


def write_examples(folder, right):
    lines = [json.dumps({"run": 0, "id": f"{i}-0", "correct": r, "score": float(r)}) for i, r in enumerate(right)]
    (folder / "examples.jsonl").write_text("".join(line + "\n" for line in lines))
    return folder


def test_inductive_runs_are_paired_on_the_queries_of_their_own_task_and_seed(tmp_path, capsys):
    acre = {
        "program": "episodic_cot",
        "task": "acre",
        "seed": 0,
        "lm": "embedded",
        "memory_lm": "embedded",
        "examples": 4,
        "runs": 1,
        "accuracy": {"mean": 0.25, "std": 0.0, "per_run": [0.25]},
        "accuracy_ci": [0.0, 0.75],
        "hypothesis_kept": None,
        "answered_by": {},
        "config": {"program": "episodic_cot", "task": "acre", "seed": 0},
    }
    checked = {**acre, "program": "hdr_checked", "accuracy": {"mean": 0.75, "std": 0.0}, "accuracy_ci": [0.25, 1.0]}
    checked.update(hypothesis_kept=0.5, hypothesis_narrowed=0.25, answered_by={"hypothesis": 2, "reasoner": 2})
    base = write_examples(write_run(tmp_path / "base", acre), [True, False, False, False])
    one = write_examples(write_run(tmp_path / "checked", checked), [True, True, True, False])
    seed = write_examples(write_run(tmp_path / "seed1", {**checked, "config": {"seed": 1}}), [True] * 4)
    scenes = write_examples(write_run(tmp_path / "et", OLD_RESULTS), [True] * 4)  # the same ids, scenes
    out = tmp_path / "compare"
    assert report_main(["report", str(base), str(one), str(seed), str(scenes), "--out", str(out)]) == 0
    report = (out / "report.md").read_text()
    assert "| episodic_cot acre | acre | embedded | embedded | 4 | 1 | 25.0 ± 0.0 | [0.0, 75.0] |" in report
    assert "| hdr_checked acre [checked] | episodic_cot acre | 4 | 2 | 0 |" in report
    assert (
        "Not compared with the first run: hdr_checked acre [seed1] (no queries in common); hdr L2 (other items: scenes)."
        in report
    )
    hypotheses = report.split("## Checked hypotheses")[1]
    assert "| run | hypothesis kept % | narrowed in code % | answered by hypothesis | answered by reasoner |" in hypotheses
    assert "| hdr_checked acre [checked] | 50.0 | 25.0 | 2 | 2 |" in hypotheses and "episodic_cot" not in hypotheses
    assert_png(out / "accuracy_by_method.png")  # the Experience-Transfer run's


@pytest.mark.parametrize("make, message", [(False, "no run directory"), (True, "no results.json in")])
def test_a_run_without_results_is_one_line_and_exit_2(tmp_path, capsys, make, message):
    folder = tmp_path / "run"
    if make:
        folder.mkdir()
        (folder / "config.json").write_text("{}")
    assert report_main(["report", str(folder)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_report_needs_a_run_dir(capsys):
    assert report_main(["report"]) == 2
    assert capsys.readouterr().err.startswith("error: ")
