"""HDR and its baselines as registered programs, through the Experience-Transfer harness, and as DSPy
programs of their own: prompts kept, async, save/load with memory, a memory that must be set, compilation."""

import asyncio
import hashlib
import json
import re
from typing import Any

import dspy
import pytest

from memreason.datasets.experience_transfer import RuleTable, make_level
from memreason.eval.experience_transfer.run import ExperienceTransferConfig, evaluate_experience_transfer
from memreason.lm import LMChoice, ScriptedEngine
from memreason.programs import HDR, PROGRAMS, build_program
from memreason.programs.registry import SCENES
from memreason.signatures import EXPERIENCE_TRANSFER_TASK, Episode, LabelObject, LabelObjects, ReasonWithMemory
from tests.helpers.custom_table import CUSTOM
from tests.helpers.scripted_answers import Script, approve_all, given, oracle_counter

NEW_PROGRAMS = ["hdr", "reflexion_individual", "reflexion_all", "direct_hypothesis", "two_stage"]
HYPOTHESES = ["Red objects are anomalies on a white background.", "Green objects are normal on a white background."]


def memory_script(hypotheses=HYPOTHESES) -> Script:
    return Script(
        factors={"factors": ["colour", "shape", "background"]},
        hypotheses={"hypotheses": hypotheses},
        verdicts=approve_all,
        reflection=reflect,
        attribute_values=perceive,  # hdr_grounded, for episodes given without attributes
        rules={"rules": [{"conditions": {"color": ["red"]}, "label": "anomaly", "sentence": "Red objects are anomalies."}]},
    )


def perceive(call):
    """hdr_grounded's perception: the attributes a text episode states ("A red square on a white background.")."""
    colour, shape, background = re.search(r"A (\w+) (\w+) on a (\w+) background", call.user_text).groups()
    return {"attribute_values": {"color": colour, "shape": shape, "background": background}}


def reflect(call):
    """One episode's reflection names its label (read from the prompt, which may hold an image); else a set's."""
    label = re.search(r'"label": "(\w+)"', call.user_text)[1] if "[[ ## episode ## ]]" in call.user_text else "set"
    return {"reflection": f"reflected on a {label}"}


def evaluate(tmp_path, program, memory: ScriptedEngine, task: ScriptedEngine, **config):
    config = ExperienceTransferConfig(program=program, **{"level": 1, "limit": 4, **config})
    return evaluate_experience_transfer(
        config,
        task=LMChoice("task", task.lm(), local=False),
        memory=LMChoice("memory", memory.lm(), local=False),
        run_dir=tmp_path,
        progress=False,
    )


@pytest.mark.parametrize("name", NEW_PROGRAMS)
def test_each_program_is_registered_builds_and_answers(tmp_path, name):
    assert PROGRAMS[name].kind == SCENES
    memory, task = ScriptedEngine(memory_script()), ScriptedEngine(oracle_counter())
    results = evaluate(tmp_path, name, memory, task)
    assert results["accuracy"]["mean"] == 1.0 and len(task.calls) == 4
    assert all("[[ ## reasoning ## ]]" in c.user_text for c in task.calls)  # CoT by default
    record = json.loads((tmp_path / "memory-run0.json").read_text())
    assert record["hypotheses"] and all(h in task.calls[0].user_text for h in record["hypotheses"])


def test_knobs_pass_through_the_registry():
    hdr = build_program("hdr", K=1, N=2, cot=False)
    assert (hdr.consolidator.K, hdr.consolidator.N, hdr.consolidator.resample) == (1, 2, False)
    assert build_program("hdr", resample=True).consolidator.resample is True
    assert isinstance(hdr.reasoner.answer, dspy.Predict) and not isinstance(hdr.reasoner.answer, dspy.ChainOfThought)
    assert build_program("two_stage", K=4).extract_factors.K == 4
    assert isinstance(build_program("reflexion_all").reasoner.answer, dspy.ChainOfThought)


def test_hdr_consolidates_once_per_run_not_per_scene(tmp_path):
    script = memory_script()
    memory, task = ScriptedEngine(script), ScriptedEngine(oracle_counter())
    results = evaluate(tmp_path, "hdr", memory, task, limit=5, runs=2)
    per_run = ["factors", "factors"] + ["hypotheses", "verdicts"] * 3  # K=2 (second pass repeats), N=3
    assert script.asked == per_run * 2
    assert results["tokens"]["memory"]["calls"] == len(per_run) * 2
    assert len(task.calls) == 10 and results["tokens"]["task"]["calls"] == 10
    assert all(h in c.user_text for c in task.calls for h in HYPOTHESES)


def test_hdr_saves_its_memory_record(tmp_path):
    memory = ScriptedEngine(memory_script())
    evaluate(tmp_path, "hdr", memory, ScriptedEngine(oracle_counter()), knobs={"N": 2})
    record = json.loads((tmp_path / "memory-run0.json").read_text())
    assert record["hypotheses"] == HYPOTHESES and record["factors"] == ["colour", "shape", "background"]
    assert [h["born"] for h in record["hypothesis_history"]] == [1, 1]
    assert all([v["verdict"] for v in h["verdicts"]] == ["valid", "valid"] for h in record["hypothesis_history"])
    assert [r["round"] for r in record["rounds"]] == [1, 2] and record["N"] == 2
    assert record["tokens"]["calls"] == 2 + 2 * 2


def test_hdr_prompt_puts_memory_before_the_scene(tmp_path):
    task = ScriptedEngine(oracle_counter())
    evaluate(tmp_path, "hdr", ScriptedEngine(memory_script()), task, limit=2)
    first, second = (c.user_text for c in task.calls)
    scene_at = first.index("[[ ## scene ## ]]")
    assert first.index("[[ ## episodes ## ]]") < first.index("[[ ## hypotheses ## ]]") < scene_at
    assert first[:scene_at] == second[:scene_at]


def test_hdr_runs_a_custom_rule_table_end_to_end(tmp_path):
    (tmp_path / "toy.json").write_text(json.dumps(CUSTOM))
    table = RuleTable.from_json(tmp_path / "toy.json")
    level = make_level(3, rules=table)
    script = memory_script(hypotheses=level.oracle_hypotheses)
    memory, task = ScriptedEngine(script), ScriptedEngine(oracle_counter(table))
    results = evaluate(tmp_path / "run", "hdr", memory, task, level=3, limit=6, rules=str(tmp_path / "toy.json"))
    assert results["accuracy"]["mean"] == 1.0
    episodes = given(script.calls_to(memory, "factors")[0], "episodes")
    assert len(episodes) == len(level.episodes) and {e["label"] for e in episodes} == {"safe", "toxic"}
    assert "triangle" in episodes[0]["observation"] or "circle" in episodes[0]["observation"]
    record = json.loads((tmp_path / "run" / "memory-run0.json").read_text())
    assert record["hypotheses"] == level.oracle_hypotheses


def test_reflexion_individual_reflects_once_per_episode(tmp_path):
    script = memory_script()
    memory, task = ScriptedEngine(script), ScriptedEngine(oracle_counter())
    evaluate(tmp_path, "reflexion_individual", memory, task, modality="image", limit=1)
    level = make_level(1)
    assert script.asked == ["reflection"] * len(level.episodes)
    assert [c.images for c in memory.calls] == [1] * len(level.episodes)  # one episode image per call
    record = json.loads((tmp_path / "memory-run0.json").read_text())
    assert [r["label"] for r in record["reflections"]] == [e.label for e in level.episodes]
    assert record["reflections"][0]["reflection"] == f"reflected on a {level.episodes[0].label}"


def test_reflexion_all_reflects_once(tmp_path):
    script = memory_script()
    evaluate(tmp_path, "reflexion_all", ScriptedEngine(script), ScriptedEngine(oracle_counter()))
    assert script.asked == ["reflection"]
    assert json.loads((tmp_path / "memory-run0.json").read_text())["hypotheses"] == ["reflected on a set"]


def test_direct_hypothesis_generates_once_without_factors_or_verification(tmp_path):
    script = memory_script()
    memory = ScriptedEngine(script)
    evaluate(tmp_path, "direct_hypothesis", memory, ScriptedEngine(oracle_counter()))
    assert script.asked == ["hypotheses"]
    assert given(memory.calls[0], "factors") == [] and given(memory.calls[0], "previous_hypotheses") == []


def test_two_stage_extracts_factors_then_generates_once_unverified(tmp_path):
    script = memory_script()
    memory = ScriptedEngine(script)
    evaluate(tmp_path, "two_stage", memory, ScriptedEngine(oracle_counter()))
    assert script.asked == ["factors", "factors", "hypotheses"]
    assert given(memory.calls[-1], "factors") == ["colour", "shape", "background"]
    record = json.loads((tmp_path / "memory-run0.json").read_text())
    assert record["factors"] == ["colour", "shape", "background"] and record["hypotheses"] == HYPOTHESES


# -- the programs as DSPy programs -------------------------------------------------------------

MEMORY_PROGRAMS = [name for name, spec in PROGRAMS.items() if spec.kind == SCENES]

# What every registered program sends (memory build, then one scene; text and image; Chat and JSON adapters):
# the response cache of saved runs depends on these prompts, so a change must be deliberate. The memory
# writers' digests (hdr, direct_hypothesis, two_stage) changed once, when their instructions stopped naming
# the task's factors. (hdr_grounded has its own test.)
PROMPTS = {
    "episodic": "7c411ccfefd989d3",
    "episodic_cot": "56fa031714b94251",
    "semantic_oracle": "4769f2852abf9b71",
    "semantic_oracle_cot": "01e1dea4bd726d6a",
    "episodic_semantic_oracle": "045c020107bf90be",
    "episodic_semantic_oracle_cot": "46ad432ff23198d2",
    "hdr": "99ae69a959f5061c",
    "reflexion_individual": "a9573dc3cf12def0",
    "reflexion_all": "62ba3d98ed360c2e",
    "direct_hypothesis": "5c8cb868542d13da",
    "two_stage": "b5457e06a24f5923",
}


def observe(item, modality: str):
    return item.text() if modality == "text" else dspy.Image(item.image)


def prompts_of(
    name: str, modality: str, adapter: dspy.Adapter, *, answers: dict | None = None, attributes: bool = False, **knobs: Any
) -> str:
    data = make_level(2, seed=0)
    episodes = [
        Episode(
            observation=observe(e, modality),
            label=e.label,
            attributes=e.attributes() if attributes and modality == "text" else None,
        )
        for e in data.episodes[:6]
    ]
    memory = ScriptedEngine(
        Script(
            **(
                answers
                or dict(
                    factors={"factors": ["colour", "shape"]},
                    hypotheses={"hypotheses": ["Red is odd.", "Blue is fine."]},
                    verdicts=approve_all,
                    reflection={"reflection": "a lesson"},
                )
            )
        )
    )
    task = ScriptedEngine(lambda call: {"reasoning": "r", "count": 1})
    program = build_program(name, **knobs)
    with dspy.context(lm=memory.lm(), adapter=adapter):
        program.memorize(episodes, data.oracle_hypotheses)
    with dspy.context(lm=task.lm(), adapter=adapter):
        program(query=data.query, scene=observe(data.test[0], modality))
    return "\n\x00".join(
        f"{c.system}\n{c.user_text}\n{c.images}\n{json.dumps(c.response_format, sort_keys=True)}"
        for c in memory.calls + task.calls
    )


@pytest.mark.parametrize("name", list(PROMPTS))
def test_every_programs_prompts_are_byte_for_byte_what_they_were(name):
    digest = hashlib.sha256()
    for modality in ("text", "image"):
        for adapter in (dspy.ChatAdapter, dspy.JSONAdapter):
            digest.update(prompts_of(name, modality, adapter()).encode())
    assert digest.hexdigest()[:16] == PROMPTS[name]


EPISODES = [
    Episode(observation="A red square on a white background.", label="anomaly"),
    Episode(observation="A green circle on a white background.", label="normal"),
]
ATTRIBUTES = [
    {"shape": "square", "color": "red", "background": "white"},
    {"shape": "circle", "color": "green", "background": "white"},
]


def episodes_for(name: str) -> list[Episode]:
    """The episodes, with their attributes for a program that reads them and perceives none (rule_learner)."""
    if not PROGRAMS[name].needs_attributes:
        return EPISODES
    return [e.model_copy(update={"attributes": a}) for e, a in zip(EPISODES, ATTRIBUTES)]


def memorized(name: str, **knobs):
    program = build_program(name, **knobs)
    with dspy.context(lm=ScriptedEngine(memory_script()).lm(), adapter=dspy.ChatAdapter()):
        program.memorize(episodes_for(name), ["oracle rule"])
    return program


def answer(program, engine: ScriptedEngine, *, via_acall: bool = False):
    with dspy.context(lm=engine.lm(), adapter=dspy.ChatAdapter()):
        if via_acall:
            return asyncio.run(program.acall(query="How many anomalies?", scene="A white background with 2 objects: x."))
        return program(query="How many anomalies?", scene="A white background with 2 objects: x.")


@pytest.mark.parametrize("name", MEMORY_PROGRAMS)
def test_every_program_memorizes_and_answers_the_same_through_acall(name):
    sync_memory, async_memory = ScriptedEngine(memory_script()), ScriptedEngine(memory_script())
    program, twin = build_program(name), build_program(name)
    with dspy.context(lm=sync_memory.lm(), adapter=dspy.ChatAdapter()):
        record = program.memorize(episodes_for(name), ["oracle rule"])
    with dspy.context(lm=async_memory.lm(), adapter=dspy.ChatAdapter()):
        assert asyncio.run(twin.amemorize(episodes_for(name), ["oracle rule"])) == record
    assert [c.text for c in async_memory.calls] == [c.text for c in sync_memory.calls]
    sync_task, async_task = (
        ScriptedEngine(lambda call: {"reasoning": "r", "count": 2}),
        ScriptedEngine(lambda call: {"reasoning": "r", "count": 2}),
    )
    assert answer(program, sync_task).count == answer(twin, async_task, via_acall=True).count == 2
    assert [c.text for c in async_task.calls] == [c.text for c in sync_task.calls]


@pytest.mark.parametrize("name", MEMORY_PROGRAMS)
def test_every_program_saves_and_loads_its_memory(name, tmp_path):
    program = memorized(name)
    record = program.memory_record()
    program.save(str(tmp_path / "program.json"))
    fresh = build_program(name)
    fresh.load(str(tmp_path / "program.json"))
    assert fresh.episodes == episodes_for(name) and fresh.hypotheses == program.hypotheses and fresh.memory_record() == record
    before, after = (
        ScriptedEngine(lambda call: {"reasoning": "r", "count": 1}),
        ScriptedEngine(lambda call: {"reasoning": "r", "count": 1}),
    )
    answer(program, before), answer(fresh, after)
    assert [c.text for c in after.calls] == [c.text for c in before.calls]  # the same prompt: the same memory


def test_episodes_with_images_survive_save_and_load(tmp_path):
    level = make_level(1)
    episodes = [Episode(observation=dspy.Image(e.image), label=e.label) for e in level.episodes[:3]]
    program = build_program("episodic")
    program.memorize(episodes)
    program.save(str(tmp_path / "program.json"))
    fresh = build_program("episodic")
    fresh.load(str(tmp_path / "program.json"))
    assert fresh.episodes == episodes and all(isinstance(e.observation, dspy.Image) for e in fresh.episodes)


def test_hdr_keeps_its_consolidation_record_through_restore_and_save(tmp_path):
    hdr = build_program("hdr", N=2)
    with dspy.context(lm=ScriptedEngine(memory_script()).lm(), adapter=dspy.ChatAdapter()):
        record = hdr.memorize(EPISODES)
    restored = build_program("hdr", N=2)
    restored.restore(EPISODES, json.loads(json.dumps(record)))
    restored.save(str(tmp_path / "hdr.json"))
    loaded = build_program("hdr", N=2)
    loaded.load(str(tmp_path / "hdr.json"))
    assert loaded.memory_record() == record and [r["round"] for r in loaded.memory_record()["rounds"]] == [1, 2]


@pytest.mark.parametrize("name", MEMORY_PROGRAMS)
def test_a_program_whose_memory_was_never_set_refuses_to_answer(name, tmp_path):
    program = build_program(name)
    with pytest.raises(ValueError, match="has no memory: call memorize"):
        answer(program, ScriptedEngine(lambda call: {"count": 0}))
    with pytest.raises(ValueError, match="has no memory"):
        answer(program, ScriptedEngine(lambda call: {"count": 0}), via_acall=True)
    program.save(str(tmp_path / "empty.json"))  # saved without memory: loading it sets none
    program.load(str(tmp_path / "empty.json"))
    with pytest.raises(ValueError, match="has no memory"):
        answer(program, ScriptedEngine(lambda call: {"count": 0}))


def test_a_state_saved_before_programs_saved_memory_still_loads(tmp_path):
    hdr = memorized("hdr")
    state = hdr.dump_state()
    del state["memory"]
    state["metadata"] = {"dependency_versions": {}}
    (tmp_path / "old.json").write_text(json.dumps(state))
    hdr.load(str(tmp_path / "old.json"))  # the memory it has stays
    assert hdr.hypotheses == HYPOTHESES
    fresh = build_program("hdr")
    fresh.load(str(tmp_path / "old.json"))
    assert fresh.hypotheses is None


def test_hdr_takes_any_task_and_plain_string_episodes():
    hdr = HDR(K=1, N=1, cot=False, signature="fruit: str -> ripe: bool")
    with dspy.context(lm=ScriptedEngine(memory_script(["Spotted bananas are ripe."])).lm(), adapter=dspy.ChatAdapter()):
        hdr.memorize(["a spotted banana: ripe", "a green banana: unripe"])
    task = ScriptedEngine(lambda call: {"ripe": "spotted" in call.user_text.rsplit("[[ ## fruit ## ]]", 1)[1]})
    with dspy.context(lm=task.lm(), adapter=dspy.ChatAdapter()):
        assert hdr(fruit="a spotted banana").ripe is True and hdr(fruit="a green banana").ripe is False
    assert "Spotted bananas are ripe." in task.calls[0].user_text and "whole number" not in task.calls[0].system


# -- compiling: demos go to the per-query predictor only ----------------------------------------


def count_right(example, prediction, trace=None) -> bool:
    return int(prediction.count) == int(example.count)


def scene_trainset(n: int = 6) -> list:
    level = make_level(1, seed=1000)
    return [dspy.Example(query=level.query, scene=s.text(), count=s.target).with_inputs("query", "scene") for s in level.test[:n]]


@pytest.mark.parametrize("name", ["hdr", "two_stage", "reflexion_individual", "episodic"])
def test_compiling_a_memory_program_with_bootstrap_few_shot_gives_demos_to_the_reasoner_only(name, tmp_path):
    program = memorized(name, cot=False)
    with dspy.context(lm=ScriptedEngine(oracle_counter()).lm(), adapter=dspy.ChatAdapter()):
        compiled = dspy.BootstrapFewShot(metric=count_right).compile(program, trainset=scene_trainset())  # DSPy's defaults
    reasoner_demos = compiled.reasoner.answer.demos
    assert reasoner_demos and all({"query", "scene", "count"} <= set(d) for d in reasoner_demos)
    memory_side = [p for _, p in compiled.consolidation_predictors()]  # frozen writers: no optimizer reached them
    assert (name == "episodic") == (not memory_side) and all(p.demos == [] for p in memory_side)
    assert [n for n, _ in compiled.named_predictors()] == ["reasoner.answer"]
    assert compiled.hypotheses == program.hypotheses  # compiling kept the memory
    compiled.save(str(tmp_path / "compiled.json"))
    loaded = build_program(name, cot=False)
    loaded.load(str(tmp_path / "compiled.json"))
    assert len(loaded.reasoner.answer.demos) == len(reasoner_demos) and loaded.hypotheses == program.hypotheses
    state = json.loads((tmp_path / "compiled.json").read_text())
    assert {n for n, _ in compiled.consolidation_predictors()} <= set(state)  # still saved, with no demos


def test_set_lm_reaches_the_consolidation_too():
    hdr = build_program("hdr")
    lm = ScriptedEngine(memory_script()).lm()
    hdr.set_lm(lm)
    assert hdr.consolidation_predictors() and all(p.lm is lm for _, p in hdr.consolidation_predictors())
    assert all(p.lm is lm for _, p in hdr.named_predictors())


# -- the registry's programs speak of Experience-Transfer, naming no factor of its rule tables ------------

# The factor extractor's and the generator's instructions as the registry's hdr shows them in the prompt.
# They name the paper's own example of factors ("colour and position") and no rule structure.
SENT_BEFORE = {
    "factors": (
        "List the factors that may explain which label each episode carries.\n        \n"
        "        A factor is an attribute of the observations, or a combination of attributes,\n"
        "        whose values could decide an object's label: for example colour and position.\n"
        "        Revise the current factors against the episodes: keep those that could matter,\n"
        "        drop those that cannot, add any that are missing, and return the whole revised\n"
        "        list, one short noun phrase per factor."
    ),
    "hypotheses": (
        "Propose hypotheses that explain which label each episode carries.\n        \n"
        "        A hypothesis is an explicit rule in natural language stating which objects carry\n"
        "        which label, in terms of the factors' values, definite enough to be checked\n"
        "        against every episode. One hypothesis may cover many objects. The previous\n"
        "        hypotheses passed verification: keep them, refine them (more general where the\n"
        "        episodes allow it, more precise where they demand it), and add new hypotheses\n"
        "        for the episodes they do not yet explain. With no previous hypotheses, start afresh; with no\n"
        "        factors, find the relevant attributes yourself."
    ),
}
EPISODES_BEFORE = "1. `episodes` (list[Episode]): episodic memory: labelled observations, one object each\n"


@pytest.mark.parametrize("name", ["hdr", "two_stage", "direct_hypothesis"])
def test_the_registrys_programs_send_the_experience_transfer_instructions(name):
    script = memory_script()
    engine = ScriptedEngine(script)
    with dspy.context(lm=engine.lm(), adapter=dspy.ChatAdapter()):
        build_program(name).memorize(EPISODES)
    for call, asked in zip(engine.calls, script.asked):
        assert call.system.startswith("Your input fields are:\n" + EPISODES_BEFORE)
        if asked in SENT_BEFORE:
            assert call.system.split("your objective is: \n        ", 1)[1] == SENT_BEFORE[asked]
    assert set(script.asked) & set(SENT_BEFORE) == ({"hypotheses"} if name == "direct_hypothesis" else set(SENT_BEFORE))
    neutral = ScriptedEngine(memory_script())  # the same program built by hand speaks of any task
    with dspy.context(lm=neutral.lm(), adapter=dspy.ChatAdapter()):
        type(build_program(name))().memorize(EPISODES)
    assert not [c for c in neutral.calls if "one object each" in c.system or "colour, shape" in c.system]


GROUNDED_ANSWERS = dict(
    factors={"factors": ["colour", "shape"]},
    attribute_values={"attribute_values": {"shape": "square", "color": "red", "background": "white"}},
    rules={"rules": [{"conditions": {"color": ["red"]}, "label": "anomaly", "sentence": "Red objects are anomalies."}]},
)


def grounded_digest(**knobs: Any) -> str:
    digest = hashlib.sha256()
    for modality in ("text", "image"):
        for adapter in (dspy.ChatAdapter, dspy.JSONAdapter):
            prompts = prompts_of("hdr_grounded", modality, adapter(), answers=GROUNDED_ANSWERS, attributes=True, **knobs)
            digest.update(prompts.encode())
    return digest.hexdigest()[:16]


def test_hdr_grounded_prompts_are_byte_for_byte_what_they_were():
    """The prompts' digest (perception included). It changed when the instructions stopped naming the task's factors,
    and again when a round that proposes nothing new ended the rounds (here the third call, a repeat, is no longer
    made). The grouped ``to_explain`` (``group_unexplained``) is off by default, so the input is as before; so are
    ``generalise`` and ``apply_rules``."""
    assert grounded_digest() == "e9357778795bd81d"


def test_generalising_asks_the_generator_for_general_rules_first():
    """``generalise=True`` (off by default) changes the generator's instructions, so the prompts' digest."""
    assert grounded_digest(generalise=True) == "f90b4355e3ae6d23"
    plain = build_program("hdr_grounded").consolidator.generate.signature.instructions
    general = build_program("hdr_grounded", generalise=True).consolidator.generate.signature.instructions
    assert "general rules first" in general and "general rules first" not in plain
    assert "add one condition" in general and "add one condition" not in plain
    assert general == EXPERIENCE_TRANSFER_TASK.general_first_grounded_generation
    assert plain == EXPERIENCE_TRANSFER_TASK.grounded_generation


# -- the consolidation kept out of optimizers' reach ---------------------------------------------------


@pytest.mark.parametrize("name", ["hdr", "hdr_grounded"])
def test_the_consolidator_is_frozen_as_dspy_freezes_a_compiled_module_and_still_saved_and_loaded(name, tmp_path):
    program = memorized(name, cot=False)
    assert program.consolidator._compiled and program.freeze_memory_writers
    assert [n for n, _ in program.named_predictors()] == ["reasoner.answer"]
    assert not [n for n, _ in dspy.Module.named_parameters(program) if n.startswith("consolidator.")]  # DSPy's own listing
    writers = dict(program.consolidation_predictors())
    assert writers and all(n.startswith("consolidator.") for n in writers)
    opened = build_program(name, cot=False, freeze_memory_writers=False)
    assert set(writers) < {n for n, _ in opened.named_predictors()} and not opened.consolidator._compiled

    generator = "consolidator.generate.generate" if name == "hdr" else "consolidator.generate"
    writers[generator].demos = [dspy.Example(episodes=[], factors=[], hypotheses=["a demo"])]
    program.save(str(tmp_path / "program.json"))
    for freeze in (True, False):
        fresh = build_program(name, cot=False, freeze_memory_writers=freeze)
        fresh.load(str(tmp_path / "program.json"))
        assert fresh.memory_record() == program.memory_record() and fresh.hypotheses == program.hypotheses
        assert len(dict(fresh.consolidation_predictors())[generator].demos) == 1
    answered = ScriptedEngine(lambda call: {"count": 1})
    assert answer(fresh, answered).count == 1  # the loaded program answers from its memory


# -- no prompt of the paper's programs names a factor or rule structure of the task ---------------------

# Attributes and rule structures of the Experience-Transfer tables; "colour and position" is the paper's own
# example of factors and may stay.
LEAKS = ("shape", "size", "background", "relate the labels", "opposite", "flip", "the other label")


def instructions_of(program) -> dict[str, str]:
    """Each predictor's instructions with its fields' descriptions (what the program, not the data, says)."""
    out = {}
    predictors = [("", program)] if isinstance(program, dspy.Predict) else program.named_predictors()
    for name, predictor in predictors:
        signature = predictor.signature
        descs = [f.json_schema_extra.get("desc", "") for f in signature.fields.values()]
        out[name] = "\n".join([signature.instructions, *descs])
    return out


@pytest.mark.parametrize("name", ["hdr", "hdr_grounded", "two_stage", "direct_hypothesis"])
def test_the_consolidators_instructions_name_no_factor_of_the_task(name):
    program = build_program(name)
    writers = {k: v for k, v in vars(program).items() if isinstance(v, dspy.Module) and k != "reasoner"}
    consolidating = {f"{k}.{n}": t for k, writer in writers.items() for n, t in instructions_of(writer).items()}
    assert consolidating, "the program has no memory writers to check"
    for predictor, text in consolidating.items():
        found = [word for word in LEAKS if word in text.lower()]
        assert not found, f"{name}.{predictor} names {found}"


def test_the_readers_label_prompts_name_no_attribute_to_match_on():
    for signature in (LabelObject, ReasonWithMemory):
        assert not [word for word in ("colour", "shape", "background", "size") if word in signature.instructions.lower()]
    assert "same colour" not in LabelObjects.instructions
