"""95% CIs (Wilson's, or a bootstrap for partial scores) on every accuracy and ARC score, and paired tests between rows: by hand and on scripted runs."""

import json
import shutil
from pathlib import Path

import pytest

from memreason.datasets.experience_transfer import make_level
from memreason.eval.arc.tables import markdown_table
from memreason.eval.arc.tables import tables as arc_tables
from memreason.eval.cli import main as eval_main
from memreason.eval.stats import bootstrap_ci, intervals, mcnemar_p, paired, wilson_ci
from memreason.lm import LMChoice, ScriptedEngine
from tests.eval.arc.test_pooled_depths import results  # noqa: F401  (two ARC tasks, two runs, one retry: scores by hand)
from tests.helpers.scripted_answers import oracle_counter

SAVED = Path(__file__).resolve().parents[1] / "data" / "saved_runs"
LIMIT = 12


# -- the interval, by hand --------------------------------------------------------------------------


def test_an_interval_on_a_zero_one_vector_is_seeded_holds_the_mean_and_narrows_with_more_items():
    few = [1.0, 0.0, 1.0, 1.0, 0.0] * 4  # 20 items, mean 0.6
    low, high = bootstrap_ci(few)
    assert low < 0.6 < high and 0.0 <= low and high <= 1.0
    assert bootstrap_ci(few) == (low, high) == bootstrap_ci(few, seed=0)  # the default seed: the same interval each time
    many = few * 10  # 200 items, the same mean
    m_low, m_high = bootstrap_ci(many)
    assert m_low < 0.6 < m_high and m_high - m_low < (high - low) / 2  # ten times the items: about a third as wide
    assert bootstrap_ci([1.0] * 9) == (1.0, 1.0)  # all right: no spread


def test_two_items_by_hand():
    # resampled means of (0.5, 0.25): 0.25 (p = 1/4), 0.375 (1/2), 0.5 (1/4): the 2.5th and 97.5th percentiles are the ends
    assert bootstrap_ci([0.5, 0.25]) == (0.25, 0.5)


def test_named_columns_share_their_resamples_and_a_missing_score_has_no_interval():
    right = [1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0]
    other = [0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0]
    found = intervals({"a": right, "b": other, "k3": [1.0, None, 0.0, 1.0, 1.0, 0.0, 1.0], "empty": []})
    assert found["a"] == list(wilson_ci(4, 7)) and found["b"] == list(wilson_ci(4, 7))  # right or wrong: Wilson's
    partial = intervals({"a": [1.0, 0.5, 0.0], "b": [0.5, 0.5, 1.0]})  # partial scores: a bootstrap, as if asked alone
    assert partial["a"] == list(bootstrap_ci([1.0, 0.5, 0.0])) and partial["b"] == list(bootstrap_ci([0.5, 0.5, 1.0]))
    assert intervals({"all": [1.0] * 20})["all"] == pytest.approx([0.8389, 1.0], abs=1e-4)  # never [1, 1]
    assert found["k3"] is None and found["empty"] is None


# -- paired tests, by hand --------------------------------------------------------------------------


def test_mcnemar_on_a_hand_worked_table():
    # 10 items: both right 3, only A 5, only B 1, neither 1: p = 2 * (C(6,0) + C(6,1)) / 2^6 = 14 / 64
    a = {f"s{i}": [1.0 if i < 8 else 0.0] for i in range(10)}
    b = {f"s{i}": [1.0 if i < 3 or i == 8 else 0.0] for i in range(10)}
    found = paired(a, b)
    assert (found.items, found.both, found.only_a, found.only_b, found.neither) == (10, 3, 5, 1, 1)
    assert found.mcnemar_p == mcnemar_p(5, 1) == 14 / 64
    assert found.test == "mcnemar" and found.p_value == found.mcnemar_p  # right/wrong per item: McNemar is the test
    assert found.difference == pytest.approx((8 - 4) / 10) and found.ci[0] <= 0.4 <= found.ci[1]
    assert paired(a, a).p_value == 1.0 and paired(a, a).bootstrap_p == 1.0 and paired(a, a).ci == (0.0, 0.0)


def test_several_runs_are_averaged_per_item_and_pooled_by_majority():
    a = {"s1": [1.0, 0.0], "s2": [1.0, 1.0], "s3": [0.0, 0.0]}
    b = {"s1": [0.0, 0.0], "s2": [1.0, 0.0], "s3": [0.0, 0.0], "s4": [1.0, 1.0]}
    found = paired(a, b)
    # right in more than half of the runs: A s2; B none. Scores: A 0.5, 1, 0; B 0, 0.5, 0 -> differences 0.5, 0.5, 0
    assert (found.items, found.only_a, found.only_b, found.both, found.neither) == (3, 1, 0, 0, 2)
    assert found.left_out == (0, 1) and found.difference == pytest.approx(1 / 3)
    assert found.test == "bootstrap" and found.p_value == found.bootstrap_p  # scores between 0 and 1: the bootstrap
    with pytest.raises(ValueError, match="no items in common"):
        paired(a, {"elsewhere": [1.0]})


# -- Experience-Transfer: results, tables, report ----------------------------------------------------


@pytest.fixture
def lms(monkeypatch):
    """LM "split": counts right from semantic memory (the hypotheses), answers 0 from raw episodes;
    "late": right in its first 12 calls (run 0), then always 0 (run 1)."""
    oracle = oracle_counter()
    late = {"calls": 0}

    def split(call):
        return oracle(call) if "`hypotheses`" in call.system else {"reasoning": "-", "count": 0}

    def tiring(call):
        late["calls"] += 1
        return oracle(call) if late["calls"] <= LIMIT else {"reasoning": "-", "count": 0}

    engines = {"split": ScriptedEngine(split), "late": ScriptedEngine(tiring)}

    def resolve(spec, **kw):
        return LMChoice(spec or "split", engines[spec or "split"].lm(), local=False)

    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", resolve)
    monkeypatch.setattr("memreason.eval.experience_transfer.table_cells.resolve_lm", resolve)
    return engines


def targets(level=1):
    return [s.target for s in make_level(level).test[:LIMIT]]


def evaluate(tmp_path, program, *extra, level=1, lm="split"):
    out = tmp_path / f"{program}-L{level}-{lm}"
    argv = [program, "--level", str(level), "--limit", str(LIMIT), "--lm", lm, "--out", str(out), "--no-progress", "--no-report"]
    assert eval_main([*argv, *extra]) == 0
    return out


def test_results_carry_the_accuracy_ci_each_scene_averaged_over_runs(tmp_path, lms):
    run = evaluate(tmp_path, "episodic", "--runs", "2", "--temperature", "0.7", lm="late")
    results = json.loads((run / "results.json").read_text())
    # run 0 right everywhere, run 1 right only where the count is 0: a scene scores 1 or 1/2
    shares = [1.0 if t == 0 else 0.5 for t in targets()]
    assert results["accuracy"]["mean"] == pytest.approx(sum(shares) / LIMIT)
    assert results["accuracy_ci"] == list(bootstrap_ci(shares))
    scenes = make_level(1).test[:LIMIT]
    for n, ci in results["accuracy_by_objects_ci"].items():
        assert ci == intervals({None: [s for s, scene in zip(shares, scenes) if len(scene.objects) == int(n)]})[None]
    assert results["ci_method"] == {
        "method": "wilson score where every item is right or wrong, else percentile bootstrap",
        "level": 0.95,
        "resamples": 10_000,
        "seed": 0,
        "over": "scenes",
        "runs": "an item's score is its mean over the runs",
    }


def test_a_table_prints_each_cells_ci_and_each_row_tested_against_the_first(tmp_path, lms, capsys):
    argv = ["table3", "--levels", "1", "--lm", "split", "--rows", "episodic,semantic_oracle", "--limit", str(LIMIT)]
    assert eval_main([*argv, "--out", str(tmp_path / "tables"), "--no-progress", "--no-report"]) == 0
    printed = capsys.readouterr().out
    table = json.loads((tmp_path / "tables" / "table3.json").read_text())
    zeros = sum(t == 0 for t in targets())
    episodic = table["rows"][0]["cells"][0]
    assert episodic["value"] == pytest.approx(100 * zeros / LIMIT)
    low, high = wilson_ci(sum(t == 0 for t in targets()), len(targets()))
    assert episodic["ci"] == pytest.approx([100 * low, 100 * high])
    assert f"| Episodic memory | {100 * zeros / LIMIT:.1f} [{100 * low:.1f}, {100 * high:.1f}] |" in printed
    # semantic_oracle is right on every scene, episodic only where the count is 0: only A on the others, McNemar by hand
    [test] = table["comparisons"]
    discordant = LIMIT - zeros
    assert (test["a"], test["b"], test["items"], test["only_a"], test["only_b"]) == (
        "semantic_oracle",
        "episodic",
        LIMIT,
        discordant,
        0,
    )
    assert test["test"] == "mcnemar" and test["p_value"] == test["mcnemar_p"] == 2 / 2**discordant
    assert "Paired tests, each row A against episodic, on the same scenes" in printed
    gain = 100 * discordant / LIMIT
    assert f"| semantic_oracle | +{gain:.1f} [" in printed and f"p = {2 / 2**discordant:.3g} |" in printed
    # --compare names the pair (and its order)
    assert eval_main([*argv, "--compare", "episodic", "semantic_oracle", "--out", str(tmp_path / "tables"), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert f"| episodic − semantic_oracle | -{gain:.1f} [" in printed


@pytest.mark.parametrize(
    "compare, message",
    [
        (["hdr", "episodic"], "--compare hdr: not a row of this table (episodic, semantic_oracle)"),
        (["episodic", "episodic"], "--compare takes two different rows"),
    ],
)
def test_a_table_refuses_a_compare_of_rows_it_lacks_before_any_cell_runs(tmp_path, lms, capsys, compare, message):
    argv = ["table3", "--levels", "1", "--lm", "split", "--rows", "episodic,semantic_oracle", "--compare", *compare]
    assert eval_main([*argv, "--out", str(tmp_path / "tables"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1
    assert not (tmp_path / "tables" / "cells").exists()


def test_the_report_shows_the_intervals_and_tests_each_run_against_the_first(tmp_path, lms, capsys):
    episodic = evaluate(tmp_path, "episodic")
    semantic = evaluate(tmp_path, "semantic_oracle")
    level2 = evaluate(tmp_path, "semantic_oracle", level=2)
    out = tmp_path / "report"
    assert eval_main(["report", str(episodic), str(semantic), str(level2), "--out", str(out)]) == 0
    report = (out / "report.md").read_text()
    zeros = sum(t == 0 for t in targets())
    low, high = wilson_ci(sum(t == 0 for t in targets()), len(targets()))
    assert f"| {100 * zeros / LIMIT:.1f} ± 0.0 | [{100 * low:.1f}, {100 * high:.1f}] |" in report  # accuracy, its CI
    discordant = LIMIT - zeros
    p = 2 / 2**discordant  # McNemar by hand: every discordant scene right in A only
    row = f"| semantic_oracle L1 | episodic L1 | {LIMIT} | {discordant} | 0 | **{p:.3g}** | +{100 * discordant / LIMIT:.1f} ["
    assert "## Paired tests" in report and row in report
    assert "Not compared with the first run: semantic_oracle L2 (no scenes in common)." in report
    capsys.readouterr()
    # asked for by name, a pair without scenes in common is refused in one line, and nothing is written
    assert (
        eval_main(["report", str(episodic), str(level2), "--compare", str(level2), str(episodic), "--out", str(tmp_path / "r2")])
        == 2
    )
    err = capsys.readouterr().err
    assert err.startswith("error: cannot compare semantic_oracle L2") and "no scenes in common" in err and err.count("\n") == 1
    assert not (tmp_path / "r2").exists()
    assert eval_main(["report", str(episodic), "--compare", str(episodic), str(level2), "--out", str(tmp_path / "r3")]) == 2
    assert "not one of the report's runs" in capsys.readouterr().err


def test_a_report_of_a_run_saved_before_intervals_computes_its_ci_from_its_examples(tmp_path, capsys):
    run = tmp_path / "old"
    shutil.copytree(SAVED / "episodic_cot-L2", run)
    assert "accuracy_ci" not in json.loads((run / "results.json").read_text())
    assert eval_main(["report", str(run)]) == 0
    records = [json.loads(line) for line in (run / "examples.jsonl").read_text().splitlines()]
    low, high = wilson_ci(sum(bool(r["correct"]) for r in records), len(records))
    assert f"| [{100 * low:.1f}, {100 * high:.1f}] |" in (run / "report.md").read_text()


# -- ARC ----------------------------------------------------------------------------------------------


def test_arc_results_carry_a_ci_over_tasks_for_every_score(results):  # noqa: F811
    # official score per task, each the mean of its two runs: as it ended A 1, B (1 + 1/2)/2; after 0 retries A 1/2, B 1/4
    assert results["official_score"] == pytest.approx(0.875)
    assert results["official_score_ci"] == [0.75, 1.0] == results["oracle_at_k_ci"]["1"]  # one attempt: oracle@1 = official
    assert results["by_retries"]["0"]["official_score_ci"] == [0.25, 0.5] == results["score_by_retries_ci"]["0"]
    assert results["by_retries"]["1"]["official_score_ci"] == results["official_score_ci"]
    assert results["oracle_at_k_ci"]["2"] is None  # oracle@2 with one attempt a run: no score, no interval
    assert results["oracle_at_k_pooled_ci"]["2"] == list(wilson_ci(2, 2))  # two runs pooled: A 1, B 1
    # strict: A's last program right in both runs (1); B's only in run 0 (1/2)
    assert results["strict_score_ci"] == [0.5, 1.0] and results["ci_method"]["over"] == "tasks"


def test_arc_table_prints_the_intervals(results):  # noqa: F811
    lines = markdown_table([{**results, "wall_seconds": 1.0}]).splitlines()
    assert lines[2].startswith("| 0 | baseline | 37.50 (17.68) [25.00, 50.00] | - | - |")
    assert lines[3].startswith("| 1 | baseline | 87.50 (17.68) [75.00, 100.00] | - | - | 75.00 [50.00, 100.00] |")
    assert "in brackets: the 95% CI, a percentile bootstrap over the tasks" in arc_tables([{**results, "wall_seconds": 1.0}])
