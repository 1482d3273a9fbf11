"""Per-object reasoning with retrieval (``retrieve_k``) on the scripted engine: each object sees its nearest memory only."""

import json

import dspy
import pytest

import memreason.eval.cli as cli
from memreason.datasets.experience_transfer import make_level
from memreason.eval.experience_transfer.run import level_episodes
from memreason.lm import LMChoice, ScriptedEngine
from memreason.programs import Reasoner, build_program
from memreason.programs.shared.per_object import nearest
from memreason.signatures import Episode
from tests.helpers.scripted_answers import Script, first_entry_labeller, given, perceiver

LABELS = ("normal", "anomaly")


def test_nearest_ranks_by_shared_words_weighted_by_rarity_and_keeps_unmatchable_entries():
    rules = make_level(2).oracle_hypotheses
    assert nearest(rules, "blue circle on a black background", 1) == ["On a black background, blue circles are labelled anomaly."]
    assert (
        nearest(rules, "red square on a white background", 2)[0]
        == "On a white background, red objects of any shape are labelled anomaly."
    )
    # "background" is in every entry and decides nothing; the rarer colour does
    assert nearest(["a red square, background", "a blue circle, background"], "blue thing, background", 1) == [
        "a blue circle, background"
    ]
    image = Episode(observation=dspy.Image(url="data:image/png;base64,AAAA"), label="normal")
    texts = [Episode(observation="a red square", label="anomaly"), Episode(observation="a green circle", label="normal")]
    assert nearest([*texts, image], "green circle", 1) == [image, texts[1]]
    with_attributes = Episode(
        observation=dspy.Image(url="data:image/png;base64,AAAA"),
        label="anomaly",
        attributes={"shape": "circle", "color": "green"},
    )
    assert nearest([texts[0], with_attributes], "green circle", 1) == [with_attributes]


@pytest.mark.parametrize("program, field", [("semantic_oracle_cot", "hypotheses"), ("episodic_cot", "episodes")])
def test_each_object_is_labelled_against_its_k_nearest_entries_and_counted_in_code(program, field):
    data = make_level(2)
    built = build_program(program, per_object=True, retrieve_k=3)
    built.memorize(level_episodes(data.episodes, "text"), data.oracle_hypotheses)
    script = Script(objects=perceiver, label=first_entry_labeller)
    engine = ScriptedEngine(script)
    scenes = data.test[:8]
    with dspy.context(lm=engine.lm()):
        outs = [built(query=data.query, scene=scene.text()) for scene in scenes]
    assert [o.count for o in outs] == [s.target for s in scenes]
    assert [[o["label"] for o in out.objects] for out in outs] == [s.labels for s in scenes]
    labelled = script.calls_to(engine, "label")
    assert len(labelled) == sum(len(s.objects) for s in scenes) and len(script.calls_to(engine, "objects")) == len(scenes)
    assert all(len(given(call, field)) == 3 for call in labelled)
    assert all("[[ ## scene ## ]]" not in call.user_text for call in labelled)
    assert (
        outs[0].objects[0]["object_and_background"]
        == f"{scenes[0].objects[0].color} {scenes[0].objects[0].shape} on a black background"
    )
    assert outs[0].objects[0]["evidence"].count(" | ") == 2  # the three entries the object was shown


def test_a_wrong_label_changes_the_count_the_model_never_writes_it():
    data = make_level(2)
    liar = lambda call: {"reasoning": "-", "label": "anomaly"}  # noqa: E731
    reasoner = Reasoner(episodic=False, semantic=True, per_object=True, retrieve_k=2, labels=list(LABELS))
    with dspy.context(lm=ScriptedEngine(Script(objects=perceiver, label=liar)).lm()):
        for scene in data.test[:5]:
            assert reasoner(hypotheses=data.oracle_hypotheses, query=data.query, scene=scene.text()).count == len(scene.objects)


def test_retrieve_k_needs_per_object_and_a_whole_number():
    for bad in ({"retrieve_k": 3}, {"per_object": True, "retrieve_k": 0}, {"per_object": True, "retrieve_k": True}):
        with pytest.raises(ValueError, match="retrieve_k"):
            Reasoner(**bad)


def test_the_cli_takes_retrieve_k_records_what_each_object_was_shown_and_refuses_it_without_per_object(
    tmp_path, monkeypatch, capsys
):
    engine = ScriptedEngine(Script(objects=perceiver, label=first_entry_labeller))
    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", lambda spec, **kw: LMChoice(spec, engine.lm(), local=False))
    out = tmp_path / "run"
    common = ["semantic_oracle_cot", "--level", "2", "--limit", "4", "--lm", "task", "--no-progress"]
    assert cli.main([*common, "--retrieve-k", "2", "--out", str(tmp_path / "refused")]) == 2
    assert "--per-object" in capsys.readouterr().err and not engine.calls
    assert cli.main([*common, "--per-object", "--retrieve-k", "2", "--out", str(out)]) == 0
    assert json.loads((out / "config.json").read_text())["knobs"] == {"per_object": True, "retrieve_k": 2}
    assert json.loads((out / "results.json").read_text())["accuracy"]["mean"] == 1.0
    first = json.loads((out / "examples.jsonl").read_text().splitlines()[0])
    assert all(o["evidence"].count(" | ") == 1 for o in first["object_labels"])


def test_a_state_saved_with_other_reader_knobs_is_refused_not_loaded_onto_the_wrong_fields(tmp_path):
    plain = build_program("hdr")
    plain.save(str(tmp_path / "plain.json"))
    for knobs, message in (
        ({"per_object": True}, "has the fields"),
        ({"per_object": True, "retrieve_k": 3}, "holds no reasoner.perceive"),
    ):
        program = build_program("hdr", **knobs)
        instructions = program.reasoner.answer.predict.signature.instructions
        with pytest.raises(ValueError, match=message):
            program.load(str(tmp_path / "plain.json"))
        assert program.reasoner.answer.predict.signature.instructions == instructions
        program.load_consolidation(str(tmp_path / "plain.json"))  # the consolidator alone fits any reader
    build_program("hdr").load(str(tmp_path / "plain.json"))


def test_a_consolidator_state_alone_loads_into_any_reader_and_a_state_with_neither_part_is_refused(tmp_path):
    from dspy.utils.saving import get_dependency_versions

    source = build_program("hdr")
    source.consolidator.generate.generate.signature = source.consolidator.generate.generate.signature.with_instructions("Rules.")
    state = {**source.consolidation_state(), "metadata": {"dependency_versions": get_dependency_versions()}}
    assert not [name for name in state if name.startswith("reasoner.")]
    (tmp_path / "consolidator.json").write_text(json.dumps(state))
    program = build_program("hdr", per_object=True, retrieve_k=3)
    reader = program.reasoner.answer.predict.signature.instructions
    program.load(str(tmp_path / "consolidator.json"))
    assert program.consolidator.generate.generate.signature.instructions == "Rules."
    assert program.reasoner.answer.predict.signature.instructions == reader
    (tmp_path / "neither.json").write_text(json.dumps({"metadata": state["metadata"]}))
    with pytest.raises(ValueError, match="holds no reasoner.perceive"):
        build_program("hdr", per_object=True, retrieve_k=3).load(str(tmp_path / "neither.json"))


def test_a_table_checks_a_program_state_against_the_reader_its_cells_will_build(tmp_path):
    import memreason.eval.experience_transfer.tables as tables

    build_program("hdr", per_object=True, retrieve_k=3).save(str(tmp_path / "reader.json"))
    spec = [f"hdr={tmp_path / 'reader.json'}"]
    assert tables._states(spec, ["hdr"], {"per_object": True, "retrieve_k": 3})["hdr"][0] == str(tmp_path / "reader.json")
    with pytest.raises(tables.TableError, match="does not fit hdr"):
        tables._states(spec, ["hdr"], {})  # the count reader's cells could not take it
