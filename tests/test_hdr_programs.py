"""HDR and its baselines as registered programs, through the Experience-Transfer harness."""

import json
import re

import dspy
import pytest

from memreason.datasets.experience_transfer import RuleTable, make_level
from memreason.eval.experience_transfer import ExperienceTransferConfig, evaluate_experience_transfer
from memreason.lm import LMChoice, ScriptedEngine
from memreason.programs import PROGRAMS, build_program

from scripted_answers import oracle_counter
from custom_table import CUSTOM
from scripted_answers import Script, approve_all, given

NEW_PROGRAMS = ["hdr", "reflexion_individual", "reflexion_all", "direct_hypothesis", "two_stage"]
HYPOTHESES = ["Red objects are anomalies on a white background.", "Green objects are normal on a white background."]


def memory_script(hypotheses=HYPOTHESES) -> Script:
    return Script(
        factors={"factors": ["colour", "shape", "background"]},
        hypotheses={"hypotheses": hypotheses},
        verdicts=approve_all,
        reflection=reflect,
    )


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
    assert PROGRAMS[name].task == "experience_transfer"
    memory, task = ScriptedEngine(memory_script()), ScriptedEngine(oracle_counter())
    results = evaluate(tmp_path, name, memory, task)
    assert results["accuracy"]["mean"] == 1.0 and len(task.calls) == 4
    assert all("[[ ## reasoning ## ]]" in c.user_text for c in task.calls)  # CoT by default
    record = json.loads((tmp_path / "memory-run0.json").read_text())
    assert record["hypotheses"] and all(h in task.calls[0].user_text for h in record["hypotheses"])


def test_knobs_pass_through_the_registry():
    hdr = build_program("hdr", K=1, N=2, cot=False)
    assert (hdr.consolidator.K, hdr.consolidator.N) == (1, 2)
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
