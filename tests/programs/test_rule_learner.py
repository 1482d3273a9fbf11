"""``rule_learner``: a symbolic rule learner as a reference row, with no LM building its memory."""

import json

import dspy
import pytest

import memreason.eval.cli as cli
from memreason.datasets.experience_transfer import RuleTable, load_rules, make_level
from memreason.eval.experience_transfer.hypothesis_scoring import memory_f1, score_rules
from memreason.eval.experience_transfer.run import level_episodes
from memreason.lm import LMChoice, ScriptedEngine
from memreason.programs import PROGRAMS, Rule, RuleLearner, build_program, learn_rules
from memreason.programs.hdr.rule_check import LabelledEpisode
from memreason.signatures import Episode
from tests.helpers.scripted_answers import oracle_counter


def labelled(rows):
    """(attributes, label) rows as code sees episodes."""
    return [LabelledEpisode(i, attributes, label) for i, (attributes, label) in enumerate(rows)]


def statements(checks):
    return [c.rule.statement() for c in checks]


def test_the_greedy_cover_takes_the_rule_that_explains_most_then_the_general_then_the_first_enumerated():
    rows = labelled(
        [
            ({"shape": "square", "color": "red"}, "anomaly"),
            ({"shape": "circle", "color": "red"}, "anomaly"),
            ({"shape": "square", "color": "green"}, "normal"),
            ({"shape": "circle", "color": "blue"}, "normal"),
            ({"shape": "circle", "color": "blue"}, "normal"),  # a repeated combination counts once
        ]
    )
    # red explains two combinations; green and blue one each, with one condition as with two: the colour seen first
    assert statements(learn_rules(rows)) == [
        "Objects with color red are labelled anomaly.",
        "Objects with color green are labelled normal.",
        "Objects with color blue are labelled normal.",
    ]
    # no rule explains an object shown with both labels: it stays unexplained
    noisy = labelled([({"color": "red"}, "anomaly"), ({"color": "red"}, "normal"), ({"color": "blue"}, "normal")])
    assert statements(learn_rules(noisy)) == ["Objects with color blue are labelled normal."]


TWO_BY_TWO = {
    "name": "red is odd",
    "attributes": {"shape": ["square", "circle"], "color": ["red", "green"], "background": ["white", "black"]},
    "labels": ["normal", "anomaly"],
    "count_label": "anomaly",
    "rules": [
        {"shape": s, "color": c, "background": b, "label": "anomaly" if c == "red" else "normal"}
        for b in ("white", "black")
        for c in ("red", "green")
        for s in ("square", "circle")
    ],
    "level3_mask": [{"shape": "square", "color": "red", "background": "black"}],
}


def test_only_a_general_rule_reaches_a_masked_combination_and_f1_says_so():
    data = make_level(3, rules=RuleTable.from_dict(TWO_BY_TWO))
    rows = labelled([(e.attributes(), e.label) for e in data.episodes])
    rules = [c.rule for c in learn_rules(rows)]
    assert [r.statement() for r in rules] == [
        "Objects with color green are labelled normal.",  # four combinations shown
        "Objects with color red are labelled anomaly.",  # three shown, and the masked red square on black
    ]
    assert any(r.matches({"shape": "square", "color": "red", "background": "black"}) for r in rules)
    learned = score_rules(rules, data)
    assert (learned.precision, learned.recall, learned.f1) == (1.0, 1.0, 1.0)
    exact = [Rule.of({k: [v] for k, v in data.rules.as_dict(c).items()}, data.rules.label_of(c)) for c in data.visible]
    assert score_rules(exact, data).recall == 7 / 8  # one rule per combination shown: the masked one unreached


def test_on_the_papers_table_level_3_a_general_rule_reaches_a_masked_object():
    data = make_level(3)
    rules = learn_rules(labelled([(e.attributes(), e.label) for e in data.episodes]))
    assert statements(rules) == statements(learn_rules(labelled([(e.attributes(), e.label) for e in data.episodes])))
    red_on_black = next(
        c.rule for c in rules if c.rule.statement() == "Objects with background black and color red are labelled normal."
    )
    assert red_on_black.matches({"shape": "square", "color": "red", "background": "black"})  # masked at Level 3
    level2 = make_level(2)
    full = [c.rule for c in learn_rules(labelled([(e.attributes(), e.label) for e in level2.episodes]))]
    assert score_rules(full, level2).f1 == 1.0


def test_the_program_builds_its_memory_without_an_lm_and_refuses_images():
    data = make_level(1)
    program = build_program("rule_learner")
    assert isinstance(program, RuleLearner) and PROGRAMS["rule_learner"].needs_attributes
    assert not program.consolidation_predictors()  # nothing to compile or call: no LM writes this memory
    record = program.memorize(level_episodes(data.episodes, "text"))  # no LM configured: a call would fail
    assert record["hypotheses"] == program.hypotheses and record["explained_all"] and record["unexplained"] == []
    assert [r["statement"] for r in record["rules"]] == program.hypotheses
    f1 = memory_f1(record, data)
    assert f1["mode"] == "rules" and f1["f1"] == 1.0
    task = ScriptedEngine(oracle_counter())
    with dspy.context(lm=task.lm()):
        assert program(query=data.query, scene=data.test[0].text()).count == data.test[0].target
    assert all(h in task.calls[0].user_text for h in program.hypotheses)  # read as hdr_grounded's rules are read
    with pytest.raises(ValueError, match="reads the episodes' attributes"):
        program.memorize([Episode(observation="a red square", label="anomaly")])


@pytest.fixture
def engines(monkeypatch):
    engines = {
        "memory": ScriptedEngine(lambda call: pytest.fail("the rule learner called an LM")),
        "task": ScriptedEngine(oracle_counter()),
    }
    resolve = lambda spec, **kw: LMChoice(spec, engines.get(spec, engines["task"]).lm(), local=False)  # noqa: E731
    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", resolve)
    monkeypatch.setattr("memreason.eval.experience_transfer.table_cells.resolve_lm", resolve)
    return engines


def test_rule_learner_through_the_cli(tmp_path, engines):
    out = tmp_path / "run"
    argv = ["rule_learner", "--level", "2", "--limit", "4", "--lm", "task", "--memory-lm", "memory", "--out", str(out)]
    assert cli.main([*argv, "--no-progress"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["accuracy"]["mean"] == 1.0 and len(engines["task"].calls) == 4 and not engines["memory"].calls
    assert results["hypothesis_f1"]["mode"] == "rules" and results["hypothesis_f1"]["mean"] == 1.0
    record = json.loads((out / "memory-run0.json").read_text())
    assert record["rules"] and record["learner"].startswith("greedy set cover")
    assert cli.main(["show", str(out), "--width", "200"]) == 0


def test_rule_learner_as_a_row_of_the_table_commands(tmp_path, engines):
    common = ["--levels", "3", "--limit", "3", "--out", str(tmp_path / "tables"), "--no-progress"]
    assert cli.main(["table3", "--rows", "rule_learner", *common]) == 0
    assert "Rule learner, no LM (reference)" in (tmp_path / "tables" / "table3.md").read_text()
    assert cli.main(["table5", "--rows", "rule_learner", *common]) == 0
    rows = json.loads((tmp_path / "tables" / "table5.json").read_text())["rows"]
    learner = next(r for r in rows if r["program"] == "rule_learner")
    assert (
        learner["cells"][0]["value"]
        == score_rules(
            [c.rule for c in learn_rules(labelled([(e.attributes(), e.label) for e in make_level(3).episodes]))], make_level(3)
        ).f1
    )


def test_a_generated_table_is_named_on_the_command_line_as_its_file_would_be(tmp_path, engines):
    from memreason.datasets.experience_transfer.random_tables import random_tables, table_named

    (table,) = random_tables("test", 1, seed=7, hard=True)
    assert table.name == "hard-test-7-0 (interaction)" and table_named("hard-test-7-0").to_dict() == table.to_dict()
    assert table_named(table.name).to_dict() == table.to_dict()
    with pytest.raises(ValueError, match="that draw is 'hard-test-7-0 \\(interaction\\)'"):
        table_named("hard-test-7-0 (pair_flip)")
    assert load_rules("hard-test-7-0").to_dict() == table.to_dict() and table_named("no-such-table") is None
    (tmp_path / "table.json").write_text(json.dumps(table.to_dict()))
    engines["task"] = ScriptedEngine(oracle_counter(table))  # counts right on this table
    runs = {}
    for name, rules in (("by-name", "hard-test-7-0"), ("by-file", str(tmp_path / "table.json"))):
        argv = ["rule_learner", "--level", "3", "--limit", "4", "--rules", rules, "--out", str(tmp_path / name)]
        assert cli.main([*argv, "--lm", "task", "--memory-lm", "memory", "--no-progress"]) == 0
        runs[name] = json.loads((tmp_path / name / "memory-run0.json").read_text())
        assert json.loads((tmp_path / name / "results.json").read_text())["accuracy"]["mean"] == 1.0
    assert runs["by-name"]["rules"] == runs["by-file"]["rules"] and runs["by-name"]["rules"]
    assert load_rules(None).to_dict() == RuleTable.paper().to_dict()
