"""``hdr_grounded`` and per-object reasoning on the scripted engine: rules checked by code, counts computed in code."""

import asyncio
import json

import dspy
import pytest

import memreason.eval.cli as cli
from memreason.datasets.experience_transfer import RuleTable, make_level
from memreason.eval.cli import main as eval_main
from memreason.eval.experience_transfer.hypothesis_scoring import memory_score
from memreason.eval.experience_transfer.run import level_episodes
from memreason.lm import LMChoice, ScriptedEngine
from memreason.lm.bounded_json import BoundedJSONAdapter
from memreason.programs import HDRGrounded, Reasoner, build_program
from memreason.signatures import EXPERIENCE_TRANSFER_TASK, Episode

from custom_table import CUSTOM
from scripted_answers import Script, approve_all, given, scene_of

# Four labelled episodes a code check can read: red -> anomaly, the rest normal.
EPISODES = [
    Episode(observation="a red square", label="anomaly", attributes={"shape": "square", "color": "red"}),
    Episode(observation="a red circle", label="anomaly", attributes={"shape": "circle", "color": "red"}),
    Episode(observation="a green square", label="normal", attributes={"shape": "square", "color": "green"}),
    Episode(observation="a blue circle", label="normal", attributes={"shape": "circle", "color": "blue"}),
]


def rule(label, sentence="-", **conditions):
    return {"sentence": sentence, "conditions": {"shape": [], "color": [], **conditions}, "label": label}


def one_rule_per_record(call):
    """A generator that writes one exact rule for every episode it is asked to explain."""
    return {"rules": [rule(r["label"], **{k: [v] for k, v in r.items() if k != "label"}) for r in given(call, "to_explain")]}


def consolidate(script, episodes=EPISODES, **knobs):
    engine = ScriptedEngine(script)
    program = HDRGrounded(**{"K": 1, "N": 3, **knobs})
    with dspy.context(lm=engine.lm()):
        record = program.memorize(episodes)
    return program, record, engine


def test_a_rule_with_a_counterexample_is_rejected_and_the_episode_goes_back_to_the_generator():
    script = Script(
        factors={"factors": ["colour", "shape"]},
        rules=[
            {
                "rules": [
                    rule("anomaly", color=["red"]),  # right
                    rule("anomaly", shape=["square"]),  # the green square contradicts it
                    rule("normal", shape=["circle"], color=["green"]),
                ]
            },  # matches no episode: implies nothing
            {"rules": [rule("normal", color=["green", "blue"]), rule("anomaly", shape=["square"])]},  # a rejected rule again
        ],
    )
    program, record, engine = consolidate(script)
    assert program.hypotheses == [
        "Objects with color red are labelled anomaly.",
        "Objects with color blue or green are labelled normal.",
    ]
    first, second = record["rounds"]
    verdicts = {(p["label"], json.dumps(p["conditions"])): p for p in first["proposed"]}
    square = verdicts[("anomaly", json.dumps({"shape": ["square"]}))]
    assert not square["accepted"] and square["counterexamples"] == [2] and square["coverage"] == [0, 2]
    nothing = verdicts[("normal", json.dumps({"color": ["green"], "shape": ["circle"]}))]
    assert not nothing["accepted"] and nothing["coverage"] == [] and "matches no episode" in nothing["reason"]
    assert first["unexplained"] == [2, 3] and second["unexplained"] == [] and record["explained_all"]
    assert second["repeated"] == ["Objects with shape square are labelled anomaly."] and len(second["proposed"]) == 1
    # the second prompt carries the counterexample, the verified rule and the unexplained episodes
    generator_calls = script.calls_to(engine, "rules")
    assert len(generator_calls) == 2  # every episode explained after round 2: round 3 never runs
    rejected = given(generator_calls[1], "rejected")
    assert {"shape": "square", "color": "green", "label": "normal"} in rejected[0]["counterexamples"]
    assert given(generator_calls[1], "verified") == ["Objects with color red are labelled anomaly."]
    assert given(generator_calls[1], "to_explain") == [
        {"shape": "square", "color": "green", "label": "normal"},
        {"shape": "circle", "color": "blue", "label": "normal"},
    ]
    kept = {r["statement"]: r for r in record["rules"]}
    assert kept["Objects with color red are labelled anomaly."]["coverage"] == [0, 1]


def test_episodes_left_unexplained_are_named_and_a_rule_that_matches_everything_is_checked_too():
    script = Script(
        factors={"factors": ["colour"]}, rules={"rules": [rule("anomaly", color=["red"]), rule("normal")]}
    )  # "all objects are normal": wrong
    program, record, _ = consolidate(script, N=2)
    assert program.hypotheses == ["Objects with color red are labelled anomaly."]
    assert record["unexplained"] == [2, 3] and not record["explained_all"] and len(record["rounds"]) == 2
    assert record["rounds"][0]["proposed"][1]["counterexamples"] == [0, 1]


def test_the_generator_may_only_name_what_the_episodes_show():
    engine = ScriptedEngine(Script(factors={"factors": []}, rules={"rules": [rule("anomaly", color=["red"])]}))
    with dspy.context(lm=engine.lm(), adapter=BoundedJSONAdapter()):
        HDRGrounded(K=1, N=1).memorize(EPISODES)
    schema = json.dumps(engine.calls[-1].response_format)
    assert '"enum": ["anomaly", "normal"]' in schema and '"enum": ["red", "green", "blue"]' in schema
    assert '"enum": ["square", "circle"]' in schema and "yellow" not in schema


def test_image_episodes_are_perceived_once_each_and_async_builds_the_same_memory():
    def perceive(call):
        return {"attribute_values": {"shape": "square", "color": "red", "background": "white"}}

    images = [Episode(observation=dspy.Image("data:image/png;base64,iVBORw0KGgo="), label="anomaly") for _ in range(3)]
    script = Script(factors={"factors": []}, attribute_values=perceive, rules={"rules": [rule("anomaly", color=["red"])]})
    engine = ScriptedEngine(script)
    program = HDRGrounded(K=0, N=2, task_description=EXPERIENCE_TRANSFER_TASK)  # which names what to perceive
    with dspy.context(lm=engine.lm()):
        record = asyncio.run(program.amemorize(images))
    assert script.asked.count("attribute_values") == 3 and record["explained_all"]
    assert record["attributes"][0] == {"shape": "square", "color": "red", "background": "white", "label": "anomaly"}


def test_structured_rules_are_scored_exactly_and_the_sentence_wording_does_not_matter():
    data = make_level(1)
    truth = RuleTable.paper()
    rules = [
        {"conditions": {"shape": [s], "color": [c], "background": [b]}, "label": truth.rows[(s, c, b)]}
        for (s, c, b) in data.visible
    ]
    perfect = memory_score({"hypotheses": ["gibberish"] * len(rules), "rules": rules}, data)
    assert (perfect.precision, perfect.recall, perfect.f1) == (1.0, 1.0, 1.0)
    wrong = [{**r, "label": "normal"} for r in rules]
    assert memory_score({"hypotheses": [], "rules": wrong}, data).f1 < 1.0


# -- per-object reasoning ------------------------------------------------------------------


def labeller(table=None, lie=0):
    """Labels each object of the prompt's scene by the table (the first ``lie`` objects get the other label)."""
    table = table or RuleTable.paper()

    def respond(call):
        background, objects = scene_of(call.user_text)
        labelled = []
        for i, (color, shape) in enumerate(objects):
            label = table.rows[(shape, color, background)]
            if i < lie:
                label = next(x for x in table.labels if x != label)
            labelled.append({"object_and_background": f"{color} {shape} on {background}", "evidence": "-", "label": label})
        return {"reasoning": "-", "objects": labelled, "count": 99}  # a count the model writes is never read

    return respond


def test_per_object_counts_are_computed_in_code_from_the_labels():
    data = make_level(2)
    program = build_program("semantic_oracle_cot", per_object=True)
    program.memorize(level_episodes(data.episodes, "text"), data.oracle_hypotheses)
    for lie in (0, 1):
        engine = ScriptedEngine(labeller(lie=lie))
        with dspy.context(lm=engine.lm()):
            for scene in data.test[:6]:
                out = program(query=data.query, scene=scene.text())
                labels = [o["label"] for o in out.objects]
                assert out.count == labels.count("anomaly") != 99
                assert (out.count == scene.target) == (lie == 0 or labels == scene.labels)
    assert "[[ ## labels ## ]]" in engine.calls[0].user_text and "[[ ## count ## ]]" not in engine.calls[0].user_text


def test_per_object_labels_are_bounded_and_the_counted_label_is_the_one_the_query_names():
    engine = ScriptedEngine(
        lambda call: {
            "objects": [
                {"object_and_background": "a", "evidence": "-", "label": "ripe"},
                {"object_and_background": "b", "evidence": "-", "label": "unripe"},
            ]
        }
    )
    reasoner = Reasoner(episodic=True, semantic=False, per_object=True)
    episodes = [Episode(observation="a yellow banana", label="ripe"), Episode(observation="a green banana", label="unripe")]
    with dspy.context(lm=engine.lm(), adapter=BoundedJSONAdapter()):
        assert reasoner(episodes=episodes, query="How many unripe bananas?", scene="two bananas").count == 1
        assert reasoner(episodes=episodes, query="Count the ripe ones", scene="two bananas").count == 1
        with pytest.raises(ValueError, match="must name exactly one of the labels"):
            reasoner(episodes=episodes, query="How many bananas?", scene="two bananas")
    assert '"enum": ["ripe", "unripe"]' in json.dumps(engine.calls[0].response_format)
    with pytest.raises(ValueError, match="takes no signature"):
        Reasoner(per_object=True, signature="question -> answer")


def test_a_custom_rule_table_end_to_end_through_the_cli(tmp_path, monkeypatch):
    """hdr_grounded --per-object on a table that is not the paper's: rules from the episodes, counts from labels."""
    table_path = tmp_path / "toy.json"
    table_path.write_text(json.dumps(CUSTOM))
    table = RuleTable.from_json(table_path)

    engines = {
        "memory": ScriptedEngine(Script(factors={"factors": ["shape"]}, rules=one_rule_per_record)),
        "task": ScriptedEngine(labeller(table)),
    }
    monkeypatch.setattr(
        "memreason.eval.harness.lms.resolve_lm", lambda spec, **kw: LMChoice(spec, engines[spec].lm(), local=False)
    )
    out = tmp_path / "run"
    argv = [
        "hdr_grounded",
        "--level",
        "2",
        "--rules",
        str(table_path),
        "--per-object",
        "--limit",
        "6",
        "--lm",
        "task",
        "--memory-lm",
        "memory",
        "--out",
        str(out),
        "--no-progress",
    ]
    assert cli.main(argv) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["accuracy"]["mean"] == 1.0
    assert results["hypothesis_f1"]["mode"] == "rules" and results["hypothesis_f1"]["mean"] == 1.0
    first = json.loads((out / "examples.jsonl").read_text().splitlines()[0])
    assert [o["label"] for o in first["object_labels"]] == first["true_labels"]
    assert json.loads((out / "config.json").read_text())["knobs"] == {"per_object": True}
    assert "toxic" in engines["task"].calls[0].user_text and "anomaly" not in engines["task"].calls[0].user_text
    answered = len(engines["task"].calls)
    assert cli.main(["--resume", str(out), "--no-progress"]) == 0  # the saved config, --per-object included
    assert len(engines["task"].calls) == answered


def test_table_commands_take_per_object_and_a_rule_table_and_table5_scores_the_rules(tmp_path, monkeypatch):
    import memreason.eval.experience_transfer.tables as tables

    table_path = tmp_path / "toy.json"
    table_path.write_text(json.dumps(CUSTOM))
    table = RuleTable.from_json(table_path)

    engine = ScriptedEngine(
        Script(
            factors={"factors": []},
            rules=one_rule_per_record,
            objects=labeller(table),
            hypotheses={"hypotheses": ["Triangles are toxic."]},
            verdicts=approve_all,
        )
    )
    resolve = lambda spec, **kw: LMChoice("embedded", engine.lm(), local=False)  # noqa: E731
    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", resolve)
    monkeypatch.setattr(tables, "resolve_lm", resolve)
    out = tmp_path / "tables"
    common = ["--levels", "2", "--rules", str(table_path), "--limit", "3", "--out", str(out), "--no-progress"]
    assert eval_main(["table3", "--rows", "hdr_grounded", "--per-object", *common]) == 0
    cell = out / "cells" / "hdr_grounded-L2-embedded-rules-toy-per-object-limit3"
    assert json.loads((cell / "results.json").read_text())["accuracy"]["mean"] == 1.0
    assert "per-object reasoning" in (out / "table3.md").read_text()
    assert eval_main(["table5", "--rows", "hdr,hdr_grounded", *common]) == 0
    row = next(r for r in json.loads((out / "table5.json").read_text())["rows"] if r["program"] == "hdr_grounded")
    assert row["marks"] == [True, True] and row["cells"][0]["value"] == 1.0


def test_a_narrowed_rule_pickles_as_itself_so_optimizers_can_hash_demos_holding_it():
    import pickle

    from memreason.programs.hdr.grounded_consolidator import _rule_model

    rule_type = _rule_model((("shape", ("square", "circle")), ("color", ("red", "blue"))), ("normal", "anomaly"))
    rule = rule_type(conditions={"shape": ["square"], "color": ["red"]}, label="anomaly", sentence="Red squares are anomalies.")
    assert pickle.loads(pickle.dumps(rule)) == rule
    assert rule_type.__name__ == "GroundedRule" and rule_type.model_json_schema()["title"] == "GroundedRule"  # prompts unchanged
