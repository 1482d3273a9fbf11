"""``hdr_grounded`` and per-object reasoning on the scripted engine: rules checked by code, counts computed in code."""

import asyncio
import json

import dspy
import pytest

import memreason.eval.cli as cli
from memreason.datasets.experience_transfer import RuleTable, make_level
from memreason.datasets.experience_transfer.random_tables import random_tables
from memreason.eval.cli import main as eval_main
from memreason.eval.experience_transfer.hypothesis_scoring import memory_score
from memreason.eval.experience_transfer.run import level_episodes
from memreason.lm import LMChoice, ScriptedEngine
from memreason.lm.bounded_json import BoundedJSONAdapter
from memreason.programs import HDRGrounded, Reasoner, build_program
from memreason.programs.hdr.grounded_consolidator import group_episodes
from memreason.programs.hdr.rule_check import LabelledEpisode, check
from memreason.signatures import EXPERIENCE_TRANSFER_TASK, Episode
from tests.helpers.custom_table import CUSTOM
from tests.helpers.scripted_answers import Script, approve_all, given, scene_of

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
    records = [
        {**episode, "label": item["label"]} for item in given(call, "to_explain") for episode in item.get("episodes", [item])
    ]  # a flat record, or a group of episodes (group_unexplained)
    return {"rules": [rule(r["label"], **{k: [v] for k, v in r.items() if k != "label"}) for r in records]}


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
        # "squares are anomalies" narrowed by its counterexample (a green square): green dropped from the colours
        "Objects with color blue or red and shape square are labelled anomaly.",
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
    assert given(generator_calls[1], "verified") == program.hypotheses[:2]
    assert given(generator_calls[1], "to_explain") == [  # the two normal episodes still unexplained
        {"shape": "square", "color": "green", "label": "normal"},
        {"shape": "circle", "color": "blue", "label": "normal"},
    ]
    kept = {r["statement"]: r for r in record["rules"]}
    assert kept["Objects with color red are labelled anomaly."]["coverage"] == [0, 1]
    assert first["counts"] == {"proposed": 3, "repeats": 0, "new": 3, "verified": 1, "refuted": 2, "narrowed": 1}
    assert second["counts"] == {"proposed": 2, "repeats": 1, "new": 1, "verified": 1, "refuted": 0, "narrowed": 0}
    assert (first["stopped"], second["stopped"], record["stopped"]) == (None, "all_explained", "all_explained")


def test_episodes_left_unexplained_are_named_and_the_rounds_stop_when_nothing_new_comes():
    script = Script(  # the same two rules every round; the second matches no episode, so it cannot be narrowed
        factors={"factors": ["colour"]},
        rules={"rules": [rule("anomaly", color=["red"]), rule("normal", shape=["circle"], color=["green"])]},
    )
    program, record, engine = consolidate(script, N=3)
    assert program.hypotheses == ["Objects with color red are labelled anomaly."]
    assert record["unexplained"] == [2, 3] and not record["explained_all"]
    assert len(script.calls_to(engine, "rules")) == 2 and len(record["rounds"]) == 2  # round 3 never runs
    first, second = record["rounds"]
    assert first["counts"]["new"] == 2 and first["stopped"] is None
    assert second["counts"] == {"proposed": 2, "repeats": 2, "new": 0, "verified": 0, "refuted": 0, "narrowed": 0}
    assert second["proposed"] == [] and second["narrowed"] == []
    assert second["stopped"] == record["stopped"] == "nothing_new"
    assert consolidate(Script(factors={"factors": []}, rules=one_rule_per_record), N=1)[1]["stopped"] == "all_explained"
    _, ran_out, _ = consolidate(
        Script(
            factors={"factors": []},
            rules=[{"rules": [rule("anomaly", color=["red"])]}, {"rules": [rule("normal", color=["green"])]}],
        ),
        N=2,
    )  # something new in each round, and episodes left after the last
    assert ran_out["stopped"] == "max_rounds" and [r["stopped"] for r in ran_out["rounds"]] == [None, "max_rounds"]


def test_without_refinement_a_refuted_rule_stays_refuted_and_the_rounds_run_on():
    script = Script(factors={"factors": []}, rules={"rules": [rule("normal", "Everything is normal.")]})
    program, record, engine = consolidate(script, N=3, refine=False)
    assert program.hypotheses == [] and record["rules"] == [] and record["refine"] is False
    assert [r["counts"]["narrowed"] for r in record["rounds"]] == [0, 0, 0]  # refuted, never narrowed
    assert [r["counts"]["new"] for r in record["rounds"]] == [1, 0, 0]  # a repeat is still dropped unchecked
    assert len(script.calls_to(engine, "rules")) == 3 and record["stopped"] == "max_rounds"  # no stop on nothing new
    assert "refine" not in consolidate(script, N=1)[1]  # the default's record is as it was
    assert build_program("hdr_grounded", refine=False).consolidator.refine is False  # a knob (--config)


def test_a_refuted_rule_is_narrowed_by_its_counterexamples_and_kept_as_narrowed_from_it():
    script = Script(factors={"factors": []}, rules={"rules": [rule("normal", "Everything is normal.")]})
    program, record, _ = consolidate(script, N=1)
    # the red episodes contradict it: dropping red (one value, both counterexamples) loses none of its support
    assert program.hypotheses == ["Objects with color blue or green are labelled normal."]
    (narrowed,) = record["rounds"][0]["narrowed"]
    assert narrowed["narrowed_from"] == {"statement": "All objects are labelled normal.", "conditions": {}, "label": "normal"}
    assert narrowed["accepted"] and narrowed["coverage"] == [2, 3] and narrowed["counterexamples"] == []
    assert record["rules"] == [narrowed] and record["rounds"][0]["proposed"][0]["counterexamples"] == [0, 1]
    assert record["rounds"][0]["counts"] == {"proposed": 1, "repeats": 0, "new": 1, "verified": 0, "refuted": 1, "narrowed": 1}
    assert len(memory_score(record, make_level(1)).correct) == 1  # scored from the rules, the narrowed one included


def test_a_repeated_refuted_rule_is_dropped_before_the_check(monkeypatch):
    import memreason.programs.hdr.grounded_consolidator as grounded

    checked = []
    monkeypatch.setattr(grounded, "check", lambda rule, labelled: checked.append(rule.key()) or check(rule, labelled))
    square = rule("anomaly", shape=["square"])  # refuted by the green square, narrowed to red or blue squares
    same_square = {**square, "conditions": {"color": [], "shape": ["square", "square"]}}  # the same rule, written otherwise
    script = Script(
        factors={"factors": []},
        rules=[
            {"rules": [square]},
            {"rules": [same_square, rule("anomaly", color=["red"])]},
            {"rules": [square, rule("anomaly", color=["red"])]},
        ],
    )
    _, record, engine = consolidate(script, N=3)
    assert len(checked) == len(set(checked)) == 3  # the square once, its narrowed rule once, red once
    assert [r["counts"]["repeats"] for r in record["rounds"]] == [0, 1, 2]
    assert record["rounds"][1]["repeated"] == ["Objects with shape square are labelled anomaly."]
    assert record["stopped"] == "nothing_new" and len(script.calls_to(engine, "rules")) == 3


def test_broad_rules_on_a_pair_flip_table_are_narrowed_into_memory_and_their_repeats_end_the_rounds():
    """What a small model did on a hard table: broad rules (2-3 values of every attribute), all refuted, then the
    same rules again. The memory was empty; narrowed, each refuted rule leaves a verified one."""
    table = next(t for t in random_tables("train", 4, hard=True) if "(pair_flip)" in t.name)
    shapes, colors, backgrounds = (list(table.attributes[a]) for a in ("shape", "color", "background"))
    other, counted = table.labels
    broad = [
        {"sentence": "-", "conditions": {"shape": s, "color": c, "background": b}, "label": label}
        for s, c, b, label in [
            (shapes[:2], colors[:2], backgrounds, counted),
            (shapes[1:], colors[1:], backgrounds, other),
            (shapes, colors[:2], backgrounds[:1], counted),
            (shapes[:2], colors, backgrounds[1:], other),
        ]
    ]
    data = make_level(2, rules=table)
    script = Script(factors={"factors": []}, rules={"rules": broad})
    program, record, engine = consolidate(script, episodes=level_episodes(data.episodes, "text"), N=3)
    first, second = record["rounds"]
    assert first["counts"] == {"proposed": 4, "repeats": 0, "new": 4, "verified": 0, "refuted": 4, "narrowed": 4}
    assert second["counts"] == {"proposed": 4, "repeats": 4, "new": 0, "verified": 0, "refuted": 0, "narrowed": 0}
    assert record["stopped"] == "nothing_new" and len(script.calls_to(engine, "rules")) == 2
    assert len(program.hypotheses) == 4 and all("narrowed_from" in r for r in record["rules"])
    assert memory_score(record, data).precision == 1.0  # every narrowed rule is true of the table, not just the episodes


def test_the_generator_is_given_the_unexplained_episodes_grouped_by_label_and_shared_values():
    observations = [
        LabelledEpisode(i, dict(zip(("shape", "color", "background"), combo)), label)
        for i, (combo, label) in enumerate(
            [
                (("square", "red", "white"), "anomaly"),
                (("circle", "red", "white"), "anomaly"),
                (("circle", "red", "white"), "anomaly"),  # a repeated combination counts once
                (("square", "green", "black"), "normal"),
                (("circle", "blue", "white"), "anomaly"),
                (("square", "blue", "black"), "anomaly"),
                (("circle", "green", "white"), "normal"),
            ]
        )
    ]
    groups = [g.model_dump() for g in group_episodes(observations)]
    assert groups == [
        {  # white is the value most anomalies share (3 of 4)
            "label": "anomaly",
            "shared": {"background": "white"},
            "episodes": [
                {"shape": "square", "color": "red", "background": "white"},
                {"shape": "circle", "color": "red", "background": "white"},
                {"shape": "circle", "color": "blue", "background": "white"},
            ],
        },
        {  # the one left shares nothing with another: a group of its own
            "label": "anomaly",
            "shared": {"shape": "square", "color": "blue", "background": "black"},
            "episodes": [{"shape": "square", "color": "blue", "background": "black"}],
        },
        {  # the normal ones share only green
            "label": "normal",
            "shared": {"color": "green"},
            "episodes": [
                {"shape": "square", "color": "green", "background": "black"},
                {"shape": "circle", "color": "green", "background": "white"},
            ],
        },
    ]
    tied = [  # square, red and black are each shared by two: the attribute the episodes name first decides
        LabelledEpisode(i, dict(zip(("shape", "color", "background"), combo)), "anomaly")
        for i, combo in enumerate([("square", "red", "white"), ("square", "blue", "black"), ("circle", "red", "black")])
    ]
    assert [(g.shared, len(g.episodes)) for g in group_episodes(tied)] == [
        ({"shape": "square"}, 2),
        ({"shape": "circle", "color": "red", "background": "black"}, 1),
    ]


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


def test_a_custom_rule_table_end_to_end_through_the_cli(tmp_path, monkeypatch, capsys):
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
    capsys.readouterr()
    assert cli.main(["show", str(out), "--width", "200"]) == 0
    shown = capsys.readouterr().out
    assert "round 1: " in shown and "rounds stopped: every episode is explained" in shown


def test_table_commands_take_per_object_and_a_rule_table_and_table5_scores_the_rules(tmp_path, monkeypatch):

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
    monkeypatch.setattr("memreason.eval.experience_transfer.table_cells.resolve_lm", resolve)
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
