"""``python -m eval <program> --task acre|list_functions``: run directories, results, resume and show, offline."""

from __future__ import annotations

import json
import re
from pathlib import Path

from memreason.eval.cli import main as eval_main
from memreason.lm import LMChoice, ScriptedEngine


def _respond(call):
    wanted = call.system.split("output fields")[-1]
    if "`function`" in wanted:
        return {"function": "def f(xs):\n    return xs\n"}
    if "`hypotheses`" in wanted and "blickets" in call.system:
        return {"hypotheses": [{"blickets": [], "rule": "any"}]}
    if "`hypotheses`" in wanted:  # HDR's generator
        return {"hypotheses": ["The output follows from the input."]}
    if "`factors`" in wanted:
        return {"factors": ["order"]}
    if "`verdicts`" in wanted:
        return {"verdicts": []}
    if "undetermined" in call.system and "`answer`" in wanted:
        return {"reasoning": "from the experiments", "answer": "off"}
    return {
        "reasoning": "from the examples",
        "answer": [int(v) for v in re.findall(r"-?\d+", call.user_text.split("Input List")[-1])[:1]],
    }


def _scripted(monkeypatch) -> ScriptedEngine:
    engine = ScriptedEngine(_respond)

    def resolve(spec, **kw):
        return LMChoice(spec or "embedded", engine.lm(), local=False)

    # the runs' resolver, and the tables' check of their LMs before any cell (else it starts the embedded server)
    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", resolve)
    monkeypatch.setattr("memreason.eval.experience_transfer.table_cells.resolve_lm", resolve)
    return engine


def test_checked_program_on_acre_end_to_end_resumes_and_shows(tmp_path, monkeypatch, capsys):
    engine = _scripted(monkeypatch)
    run = tmp_path / "acre"
    argv = ["hdr_checked", "--task", "acre", "--limit", "3", "--seed", "0", "--out", str(run), "--no-progress"]
    assert eval_main(argv) == 0
    results = json.loads((run / "results.json").read_text())
    config = json.loads((run / "config.json").read_text())
    assert config["task"] == "acre" and results["task"] == "acre" and results["examples"] == 3
    assert 0 <= results["accuracy"]["mean"] <= 1 and len(results["accuracy_ci"]) == 2
    lines = [json.loads(line) for line in (run / "examples.jsonl").read_text().splitlines()]
    assert [r["id"] for r in lines] == ["0-0", "1-0", "2-0"] and all(r["source"] for r in lines)
    assert sorted(p.name for p in (run / "memory" / "run0").iterdir()) == ["0.json", "1.json", "2.json"]
    calls = len(engine.calls)
    assert eval_main(argv) == 0 and len(engine.calls) == calls  # finished: nothing asked again
    (run / "examples.jsonl").write_text("".join(line + "\n" for line in (run / "examples.jsonl").read_text().splitlines()[:2]))
    assert eval_main(["--resume", str(run), "--no-progress"]) == 0
    assert len(engine.calls) == calls + 1  # only the lost query's answer; its memory was restored
    assert json.loads((run / "results.json").read_text())["accuracy"] == results["accuracy"]
    capsys.readouterr()
    assert eval_main(["show", str(run)]) == 0
    assert "hdr_checked" in capsys.readouterr().out


def test_problems_with_the_same_episodes_share_one_memory_built_once(tmp_path, monkeypatch):
    engine = _scripted(monkeypatch)
    run = tmp_path / "acre"
    argv = ["hdr_checked", "--task", "acre", "--limit", "8", "--threads", "4", "--out", str(run), "--no-progress"]
    assert eval_main(argv) == 0  # problems 0-3 and 4-7 each share one set of experiments
    proposals = [c for c in engine.calls if "blickets" in c.system]
    assert len(proposals) == 4  # two memories, two rounds each (the second proposes nothing new)
    records = {p.stem: json.loads(p.read_text()) for p in (run / "memory" / "run0").iterdir()}
    firsts = sorted(k for k, r in records.items() if "same_episodes_as" not in r)
    assert firsts == ["0", "4"] and {r.get("same_episodes_as") for k, r in records.items() if k not in firsts} == {"0", "4"}
    assert all(r["rounds"] == records[r.get("same_episodes_as", k)]["rounds"] for k, r in records.items())
    results = json.loads((run / "results.json").read_text())
    assert results["tokens"]["memory"]["calls"] == 4  # the copies count none of the calls


def test_config_gives_a_checked_programs_knobs_on_a_task(tmp_path, monkeypatch, capsys):
    engine = _scripted(monkeypatch)
    knobs = tmp_path / "k.json"
    knobs.write_text(json.dumps({"knobs": {"samples": 2, "N": 1}}))
    run = tmp_path / "lf"
    argv = ["hdr_checked", "--task", "list_functions", "--limit", "1", "--config", str(knobs), "--out", str(run)]
    assert eval_main([*argv, "--no-progress"]) == 0
    assert "95% CI over the queries" in capsys.readouterr().out  # the summary's note: queries, not scenes
    assert json.loads((run / "config.json").read_text())["knobs"] == {"samples": 2, "N": 1}
    assert len([c for c in engine.calls if "`function`" in c.system.split("output fields")[-1]]) == 2  # n = 2, 1 round


def test_no_memory_row_on_list_functions_end_to_end(tmp_path, monkeypatch):
    _scripted(monkeypatch)
    run = tmp_path / "lf"
    assert eval_main(["episodic_cot", "--task", "list_functions", "--limit", "2", "--out", str(run), "--no-progress"]) == 0
    results = json.loads((run / "results.json").read_text())
    assert results["program"] == "episodic_cot" and results["task"] == "list_functions" and results["examples"] == 2
    lines = [json.loads(line) for line in (run / "examples.jsonl").read_text().splitlines()]
    assert all(r["prediction"].startswith("[") for r in lines)


def test_table3_on_acre_has_the_inductive_rows_intervals_and_paired_tests(tmp_path, monkeypatch, capsys):
    _scripted(monkeypatch)
    out = tmp_path / "tables"
    assert eval_main(["table3", "--task", "acre", "--limit", "3", "--out", str(out), "--no-progress"]) == 0
    table = json.loads((out / "table3.json").read_text())
    assert [r["program"] for r in table["rows"]] == ["episodic_cot", "hdr", "hdr_checked", "episodic_semantic_oracle_cot"]
    assert table["columns"] == [{"level": "acre", "lm": "embedded"}]
    assert all(len(r["cells"][0]["ci"]) == 2 and r["cells"][0]["examples"] == 3 for r in table["rows"])
    assert [(c["a"], c["b"]) for c in table["comparisons"]] == [
        ("hdr", "episodic_cot"),
        ("hdr_checked", "episodic_cot"),
        ("episodic_semantic_oracle_cot", "episodic_cot"),
    ]
    markdown = (out / "table3.md").read_text()
    assert "| Methods | acre |" in markdown and "no oracle row" not in markdown and "Paired tests" in markdown
    assert "Episodic + Semantic: the true rule (CoT)" in markdown
    assert "on the same queries" in markdown and "per query" in markdown and "scene" not in markdown.split("Paired tests")[1]
    assert "95% CI over the queries" in markdown and "scene" not in markdown.split("Command:")[0]
    assert "HDR, hypotheses checked in code" in markdown
    for row in table["rows"]:  # each cell writes its own report, as an Experience-Transfer cell does
        assert f"# Run report: {row['program']} acre" in (Path(row["cells"][0]["cell"]) / "report.md").read_text()


def test_the_oracle_rows_read_acres_true_blickets_and_list_functions_has_none(tmp_path, monkeypatch, capsys):
    from memreason.datasets.inductive import ACRE
    from memreason.eval.experience_transfer.tables import inductive_rows

    engine = _scripted(monkeypatch)
    run = tmp_path / "oracle"
    assert eval_main(["semantic_oracle_cot", "--task", "acre", "--limit", "2", "--out", str(run), "--no-progress"]) == 0
    truth = ACRE().problems(seed=0, limit=1)[0].oracle
    memory = json.loads((run / "memory" / "run0" / "0.json").read_text())
    assert memory["hypotheses"] == truth["hypotheses"] and memory["tokens"]["calls"] == 0  # no LM builds it
    readers = [c for c in engine.calls if "undetermined" in c.system]
    assert len(readers) == 2 and all(f"Blickets: {', '.join(truth['blickets'])}." in c.user_text for c in readers)
    assert "## episodes ##" not in readers[0].user_text  # semantic memory only: the examples are not shown
    assert [r.program for r in inductive_rows("list_functions")] == ["episodic_cot", "hdr", "hdr_checked"]
    capsys.readouterr()
    code = eval_main(["semantic_oracle_cot", "--task", "list_functions", "--limit", "2", "--out", str(tmp_path / "lf")])
    err = capsys.readouterr().err
    assert code == 2 and "list_functions" in err and err.count("\n") == 1


def test_table3_task_refuses_what_only_experience_transfer_has(tmp_path, capsys):
    code = eval_main(["table3", "--task", "acre", "--per-object", "--out", str(tmp_path / "t")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: --per-object is an Experience-Transfer option") and err.count("\n") == 1


def test_an_inductive_run_writes_its_report_with_the_checked_hypotheses(tmp_path, monkeypatch, capsys):
    _scripted(monkeypatch)
    run = tmp_path / "acre"
    assert eval_main(["hdr_checked", "--task", "acre", "--limit", "3", "--out", str(run), "--no-progress"]) == 0
    assert f"report: {run / 'report.md'}" in capsys.readouterr().out
    results = json.loads((run / "results.json").read_text())
    report = (run / "report.md").read_text()
    assert report.startswith("# Run report: hdr_checked acre\n")
    accuracy, ci = results["accuracy"], results["accuracy_ci"]
    score = f"| {100 * accuracy['mean']:.1f} ± {100 * accuracy['std']:.1f} | [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}] |"
    assert "| hdr_checked acre | acre | embedded | embedded | 3 | 1 |" in report and score in report
    assert f"| {results['tokens']['task']['prompt']:,} |" in report  # tokens by role
    assert "## Failures and retries" in report and "## Tokens and cost" in report
    kept = f"{100 * results['hypothesis_kept']:.1f}"
    by = results["answered_by"]
    assert sum(by.values()) == 3 and set(by) <= {"hypothesis", "reasoner"}
    narrowed = f"{100 * results['hypothesis_narrowed']:.1f}"
    header = "| run | hypothesis kept % | narrowed in code % | answered by hypothesis | answered by reasoner |"
    row = f"| hdr_checked acre | {kept} | {narrowed} | {by.get('hypothesis', 0)} | {by.get('reasoner', 0)} |"
    assert "## Checked hypotheses" in report and header in report and row in report
    # what only Experience-Transfer (or ARC) has is left out, plots and sections alike
    assert not (run / "accuracy_by_method.png").exists() and not (run / "accuracy_by_objects.png").exists()
    for absent in ("Accuracy by method", "## Accuracy by objects", "## ARC", "## Paired tests"):
        assert absent not in report
    assert (run / "accuracy_vs_tokens.png").exists()  # the one plot every run has


def test_no_report_is_respected_and_report_writes_it_later(tmp_path, monkeypatch, capsys):
    _scripted(monkeypatch)
    run = tmp_path / "lf"
    argv = ["episodic_cot", "--task", "list_functions", "--limit", "2", "--out", str(run), "--no-progress", "--no-report"]
    assert eval_main(argv) == 0
    assert "report:" not in capsys.readouterr().out
    assert not (run / "report.md").exists() and not list(run.glob("*.png"))
    assert eval_main(["report", str(run)]) == 0
    assert capsys.readouterr().out == f"report: {run / 'report.md'}\n"
    report = (run / "report.md").read_text()
    assert report.startswith("# Run report: episodic_cot list_functions\n") and "| list_functions |" in report
    assert "Checked hypotheses" not in report  # no checked program, no hypotheses to count
    assert not (run / "accuracy_by_method.png").exists()


def test_report_compares_inductive_runs_on_the_queries_of_the_same_task(tmp_path, monkeypatch, capsys):
    _scripted(monkeypatch)
    runs = {}
    for program, task in (("episodic_cot", "acre"), ("hdr_checked", "acre"), ("episodic_cot", "list_functions")):
        runs[program, task] = tmp_path / f"{program}-{task}"
        argv = [program, "--task", task, "--limit", "3", "--out", str(runs[program, task]), "--no-progress", "--no-report"]
        assert eval_main(argv) == 0
    base, checked, other = runs["episodic_cot", "acre"], runs["hdr_checked", "acre"], runs["episodic_cot", "list_functions"]
    out = tmp_path / "compare"
    capsys.readouterr()
    assert eval_main(["report", str(base), str(checked), str(other), "--out", str(out)]) == 0
    report = (out / "report.md").read_text()
    assert report.startswith("# Comparison of 3 runs\n")
    assert "## Paired tests" in report and "| A | B | queries | right in A only |" in report
    assert "| hdr_checked acre | episodic_cot acre | 3 |" in report  # the three ACRE queries, paired
    assert "Paired on the queries both rows hold. Right or wrong per query (answer right;" in report
    # List Functions' query ids are ACRE's ("0-0"), but not its queries
    assert "Not compared with the first run: episodic_cot list_functions (no queries in common)." in report
    assert "| hdr_checked acre |" in report.split("## Checked hypotheses")[1]  # the checked run only
    assert "| episodic_cot acre |" not in report.split("## Checked hypotheses")[1]
    assert not (out / "accuracy_by_method.png").exists()
    code = eval_main(["report", str(base), str(other), "--out", str(tmp_path / "refused"), "--compare", str(other), str(base)])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: cannot compare episodic_cot list_functions") and "no queries in common" in err
    assert not (tmp_path / "refused").exists()
