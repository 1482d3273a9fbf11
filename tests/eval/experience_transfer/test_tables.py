"""``python -m eval table2..table5``: cells run once through the CLI, tables in the paper's shape."""

import json
from pathlib import Path

import pytest

import memreason.eval.experience_transfer.table_cells as table_cells
import memreason.eval.experience_transfer.tables as tables
from memreason.datasets.experience_transfer import make_level
from memreason.eval.cli import main as eval_main
from memreason.lm import LMChoice, LMConfigError, ScriptedEngine
from tests.helpers.scripted_answers import Script, approve_all, given, oracle_counter

LIMIT = 6


def always(count):
    return lambda call: {"reasoning": "-", "count": count}


@pytest.fixture
def engines(monkeypatch):
    """LM name -> scripted engine: "good" counts right, "zero" always answers 0, "memory" builds memory."""
    found = {
        "good": ScriptedEngine(oracle_counter()),
        "zero": ScriptedEngine(always(0)),
    }

    def resolve(spec, **kw):
        name = spec or "good"
        if name not in found:
            raise LMConfigError(f"unknown LM {name!r}")
        return LMChoice(name, found[name].lm(), local=False)

    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", resolve)
    monkeypatch.setattr(table_cells, "resolve_lm", resolve)
    return found


def run(argv, tmp_path):
    return eval_main([*argv, "--out", str(tmp_path / "tables"), "--no-progress"])


def zero_accuracy(level):
    targets = [s.target for s in make_level(level).test[:LIMIT]]
    return 100 * sum(t == 0 for t in targets) / LIMIT


def test_table2_has_the_papers_rows_and_one_column_per_level_and_lm(tmp_path, engines, capsys):
    argv = ["table2", "--levels", "1,2", "--lm", "good,zero", "--limit", str(LIMIT), "--no-report"]
    assert run(argv, tmp_path) == 0
    table = json.loads((tmp_path / "tables" / "table2.json").read_text())
    cells = [Path(c["cell"]) for r in table["rows"] for c in r["cells"]]
    assert len(cells) == 24 and all((c / "results.json").exists() and not (c / "report.md").exists() for c in cells)
    assert [r["program"] for r in table["rows"]] == [
        "episodic",
        "semantic_oracle",
        "episodic_semantic_oracle",
        "episodic_cot",
        "semantic_oracle_cot",
        "episodic_semantic_oracle_cot",
    ]
    assert [r["marks"] for r in table["rows"]] == [[False]] * 3 + [[True]] * 3
    assert table["columns"] == [
        {"level": 1, "lm": "good"},
        {"level": 1, "lm": "zero"},
        {"level": 2, "lm": "good"},
        {"level": 2, "lm": "zero"},
    ]
    for row in table["rows"]:
        values = {(c["level"], c["lm"]): c["value"] for c in row["cells"]}
        assert values == pytest.approx(
            {(1, "good"): 100.0, (1, "zero"): zero_accuracy(1), (2, "good"): 100.0, (2, "zero"): zero_accuracy(2)}
        )
    markdown = (tmp_path / "tables" / "table2.md").read_text()
    assert "| Memory | CoT | Lv. 1 good | Lv. 1 zero | Lv. 2 good | Lv. 2 zero |" in markdown
    assert "| Semantic memory | ✓ | 100.0 [61.0, 100.0] | " in markdown  # the accuracy, its 95% CI over 6 scenes (Wilson)
    assert markdown in capsys.readouterr().out


def test_finished_cells_are_read_back_not_rerun(tmp_path, engines):
    argv = ["table3", "--levels", "1", "--lm", "zero", "--limit", "3", "--rows", "episodic_cot,semantic_oracle"]
    assert run(argv, tmp_path) == 0
    calls = len(engines["zero"].calls)
    assert calls == 6  # two cells of three scenes
    assert run(argv, tmp_path) == 0
    assert len(engines["zero"].calls) == calls
    # a table with another row reuses the finished cell and runs only the new one
    assert run(["table3", "--levels", "1", "--lm", "zero", "--limit", "3", "--rows", "episodic_cot,episodic"], tmp_path) == 0
    assert len(engines["zero"].calls) == calls + 3


def test_table4_rows_are_memory_lms_with_an_average(tmp_path, engines):
    script = Script(
        factors={"factors": ["color"]},
        hypotheses={"hypotheses": ["Red squares are anomalies."]},
        verdicts=approve_all,
        count=always(1),
    )
    engines["memory"] = ScriptedEngine(script)
    assert run(["table4", "--levels", "1,2", "--memory-lms", "memory", "--lm", "good", "--limit", "3"], tmp_path) == 0
    table = json.loads((tmp_path / "tables" / "table4.json").read_text())
    assert [r["label"] for r in table["rows"]] == ["memory"]
    assert {c["value"] for c in table["rows"][0]["cells"]} == {100.0}  # the task LM answers; it counts right
    assert "count" not in script.asked  # the memory LM only built memory
    markdown = (tmp_path / "tables" / "table4.md").read_text()
    assert (
        "| Models | Lv. 1 | Lv. 2 | Ave. |" in markdown
        and "| memory | 100.0 [43.9, 100.0] | 100.0 [43.9, 100.0] | 100.0 |" in markdown  # 3 scenes all right: Wilson
    )
    assert (tmp_path / "tables" / "cells" / "hdr-L1-good-mem-memory-limit3" / "results.json").exists()


def test_table5_scores_memories_and_borrows_finished_hdr_cells(tmp_path, engines):
    oracle = make_level(2).oracle_hypotheses
    engines["memory"] = ScriptedEngine(
        Script(
            factors={"factors": ["color", "shape", "background"]},
            hypotheses=lambda call: {
                "hypotheses": oracle
                if given(call, "factors")  # direct hypothesis has none
                else ["An image is normal if the object is in the top-right position."]
            },
            verdicts=approve_all,
            count=always(1),
        )
    )
    # HDR's memory at level 2 already exists in a Table 3 cell: Table 5 reads it, builds only the others
    assert run(["table3", "--levels", "2", "--lm", "memory", "--rows", "hdr", "--limit", "2"], tmp_path) == 0
    before = len(engines["memory"].calls)
    assert run(["table5", "--levels", "2", "--memory-lm", "memory", "--limit", "2"], tmp_path) == 0
    table = json.loads((tmp_path / "tables" / "table5.json").read_text())
    f1 = {r["program"]: r["cells"][0]["value"] for r in table["rows"]}
    assert all(r["cells"][0]["wall_seconds"] >= 0 for r in table["rows"])  # the memory's build time, shown in the table
    assert f1 == {"direct_hypothesis": 0.0, "two_stage": 1.0, "hdr": 1.0}
    assert [r["marks"] for r in table["rows"]] == [[False, False], [True, False], [True, True]]
    new = engines["memory"].calls[before:]
    assert new and not any("[[ ## verdicts ## ]]" in c.system for c in new)  # no HDR verification re-run
    assert not any("[[ ## count ## ]]" in c.system for c in new)  # memories only, no scenes answered
    hdr_cell = table["rows"][2]["cells"][0]["cell"]
    assert hdr_cell.endswith("cells/hdr-L2-memory-limit2")
    assert (
        json.loads((tmp_path / "tables" / "cells" / "hdr-L2-memory-limit2" / "memory-run0-f1-parse.json").read_text())["f1"]
        == 1.0
    )
    # memory-only cells go through the harness's memory step: metered by role and step, faults counted
    built = sorted((tmp_path / "tables" / "cells").glob("memory-*/memory-run0.json"))
    assert len(built) == 2
    for path in built:
        record = json.loads(path.read_text())
        assert set(record["usage"]) == {"memory"} and record["faults"] == {} and record["tokens"]["calls"] >= 1


@pytest.mark.parametrize(
    "argv, message",
    [
        (["table2", "--levels", "4"], "--levels must name levels"),
        (["table3", "--rows", "nonsense"], "'nonsense' is not an Experience-Transfer program"),
        (["table2", "--lm", "nosuch"], "unknown LM"),
        (["table5", "--f1", "vibes"], "invalid choice: 'vibes'"),
        (["table9"], "unknown program or command 'table9'"),
        (["table4"], "--memory-lms"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, engines, capsys, argv, message):
    assert run(argv, tmp_path) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1
    assert not (tmp_path / "tables" / "cells").exists()  # nothing ran


def test_results_carry_the_parser_f1_of_the_memory_a_run_built(tmp_path, engines):
    assert run(["table2", "--levels", "2", "--lm", "good", "--limit", "2", "--rows", "episodic,semantic_oracle"], tmp_path) == 0
    cells = tmp_path / "tables" / "cells"
    oracle = json.loads((cells / "semantic_oracle-L2-good-limit2" / "results.json").read_text())["hypothesis_f1"]
    assert oracle["mode"] == "parse" and oracle["mean"] == 1.0  # the oracle statements read back as the table
    assert json.loads((cells / "episodic-L2-good-limit2" / "results.json").read_text())["hypothesis_f1"] is None


def test_several_rule_tables_are_column_groups_with_each_rows_spread_over_them(tmp_path, engines):
    from memreason.datasets.experience_transfer import load_rules
    from memreason.eval.metrics import mean_std

    names = ["hard-test-7-0", "hard-test-7-1", "hard-test-7-2"]
    rows = "episodic_cot,semantic_oracle_cot"
    argv = ["table3", "--levels", "2", "--lm", "zero", "--limit", "3", "--rows", rows, "--rules", ",".join(names), "--no-report"]
    assert run(argv, tmp_path) == 0
    table = json.loads((tmp_path / "tables" / "table3.json").read_text())
    assert table["columns"] == [{"level": 2, "lm": "zero", "rules": name} for name in names]
    expected = {}
    for name in names:  # "zero" answers 0: a cell's accuracy is the share of its table's scenes that hold none
        targets = [s.target for s in make_level(2, rules=load_rules(name)).test[:3]]
        expected[name] = 100 * sum(t == 0 for t in targets) / 3
    assert len(set(expected.values())) > 1  # the tables differ, so the spread is not trivially 0
    for row in table["rows"]:
        assert {c["rules"]: c["value"] for c in row["cells"]} == pytest.approx(expected)
        assert all(name in Path(c["cell"]).name for c, name in zip(row["cells"], names))  # a cell per table
    mean, std = mean_std(list(expected.values()))
    low, high = min(expected.values()), max(expected.values())
    markdown = (tmp_path / "tables" / "table3.md").read_text()
    assert "Over the 3 rule tables" in markdown
    for row in table["rows"]:
        assert f"| {row['label']} | {mean:.1f} ± {std:.1f} ({low:.1f} to {high:.1f}) |" in markdown
    assert "| Methods | Lv. 2 hard-test-7-0 | Lv. 2 hard-test-7-1 | Lv. 2 hard-test-7-2 |" in markdown
    assert [(c["rules"], c["a"], c["b"]) for c in table["comparisons"]] == [
        (name, "semantic_oracle_cot", "episodic_cot") for name in names
    ]  # the paired test in each table's column
    calls = len(engines["zero"].calls)
    one = ["table3", "--levels", "2", "--lm", "zero", "--limit", "3", "--rows", rows, "--rules", names[1], "--no-report"]
    assert run(one, tmp_path) == 0  # one of the tables alone: its cells are read back
    assert len(engines["zero"].calls) == calls
    single = (tmp_path / "tables" / "table3.md").read_text()
    assert "Over the" not in single and ", rule table hard-test-7-1" in single


def test_checked_memories_say_over_the_tables_how_many_rounds_proposed_nothing_new(tmp_path):
    def memory(directory, run, counts, rules):
        directory.mkdir(parents=True, exist_ok=True)
        record = {"rounds": [{"round": i + 1, "counts": c} for i, c in enumerate(counts)], "rules": rules}
        (directory / f"memory-run{run}.json").write_text(json.dumps(record))

    first, second = tmp_path / "a", tmp_path / "b"
    memory(first, 0, [{"new": 4, "verified": 1}, {"new": 0, "verified": 0}], [{"label": "ok"}])
    memory(first, 1, [{"new": 3, "verified": 0}, {"new": 0}, {"new": 0}], [])
    memory(second, 0, [{"new": 2, "verified": 2}], [{"label": "ok"}, {"label": "bad"}])
    assert table_cells._rounds(first) == {"rounds": {"rounds": 5, "nothing_new": 3, "rules": 1, "memories": 2, "empty": 1}}
    assert table_cells._rounds(tmp_path / "none") == {}  # a program without checked memories

    columns = [{"level": 2, "lm": "m", "rules": name} for name in ("t0", "t1")]
    cells = [
        {**c, "value": v, "std": 0.0, "cell": "x", **table_cells._rounds(d)}
        for c, v, d in zip(columns, (50.0, 70.0), (first, second))
    ]
    table = {"table": "table3", "title": "T", "value": "accuracy", "command": "c", "mark_names": [], "columns": columns}
    table["rows"] = [{"label": "HDR, rules checked by code", "program": "hdr_grounded", "marks": [], "cells": cells}]
    markdown = tables.render_markdown(table)
    assert "| HDR, rules checked by code | 60.0 ± 14.1 (50.0 to 70.0) |" in markdown
    assert (
        "hdr_grounded, Lv. 2: 3 rules verified in 3 memories over 2 tables (1 verified none); 3 of 6 rounds proposed nothing new."
        in markdown
    )


def test_cells_sharing_one_cache_list_each_scene_once(tmp_path, monkeypatch):
    # per-object rows list the same scenes; with --cache the second cell reads the first one's listing
    from tests.helpers.scripted_answers import first_entry_labeller, perceiver

    script = Script(objects=perceiver, label=first_entry_labeller)
    engine = ScriptedEngine(script)

    def resolve(spec, **kw):
        return LMChoice("good", engine.lm(cache=True), local=False)

    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", resolve)
    monkeypatch.setattr(table_cells, "resolve_lm", resolve)
    argv = ["table3", "--levels", "2", "--rows", "episodic_cot,semantic_oracle_cot", "--per-object", "--retrieve-k", "2"]
    argv += ["--limit", "3", "--no-report", "--no-progress"]

    assert eval_main([*argv, "--out", str(tmp_path / "own")]) == 0
    own = {name: script.asked.count(name) for name in ("objects", "label")}
    assert own["objects"] == 2 * 3  # each cell lists the 3 scenes
    assert eval_main([*argv, "--out", str(tmp_path / "shared"), "--cache", str(tmp_path / "cache")]) == 0
    shared = {name: script.asked.count(name) - own[name] for name in ("objects", "label")}
    assert shared == {"objects": 3, "label": own["label"]}  # listed once; the rows' memories differ, so each labels
    assert (tmp_path / "cache").is_dir() and not list((tmp_path / "shared" / "cells").glob("*/dspy_cache"))
    read = [json.loads((tmp_path / out / "table3.json").read_text()) for out in ("own", "shared")]
    assert [[c["value"] for c in row["cells"]] for row in read[0]["rows"]] == [
        [c["value"] for c in row["cells"]] for row in read[1]["rows"]
    ]
