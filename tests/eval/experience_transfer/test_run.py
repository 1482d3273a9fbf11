"""The Experience-Transfer harness and its CLI, driven by scripted engines."""

import json

import dspy
import pytest

import memreason.eval.cli as cli
from memreason.datasets.experience_transfer import make_level
from memreason.eval.experience_transfer.run import ExperienceTransferConfig, evaluate_experience_transfer
from memreason.lm import LMChoice, ScriptedEngine
from tests.helpers.scripted_answers import oracle_counter


def choice(engine: ScriptedEngine) -> LMChoice:
    return LMChoice("scripted", engine.lm(), local=False)


def evaluate(tmp_path, engine, program="episodic", memory_engine=None, **config):
    config = ExperienceTransferConfig(program=program, **{"level": 1, "limit": 12, **config})
    task = choice(engine)
    memory = choice(memory_engine) if memory_engine else task
    return evaluate_experience_transfer(config, task=task, memory=memory, run_dir=tmp_path, progress=False)


def test_a_perfect_counter_scores_one(tmp_path):
    engine = ScriptedEngine(oracle_counter())
    results = evaluate(tmp_path, engine, program="episodic_cot", level=2)
    assert results["accuracy"]["mean"] == 1.0
    assert results["examples"] == 12 and len(engine.calls) == 12
    lines = [json.loads(l) for l in (tmp_path / "examples.jsonl").read_text().splitlines()]
    assert [l["id"] for l in lines] == [s.id for s in make_level(2).test[:12]]
    assert all(l["correct"] and l["tokens"]["prompt"] > 0 for l in lines)
    assert results["tokens"]["task"]["prompt"] == sum(l["tokens"]["prompt"] for l in lines)
    assert results["tokens"]["memory"]["total"] == 0


def test_accuracy_matches_the_targets(tmp_path):
    results = evaluate(tmp_path, ScriptedEngine(lambda call: {"count": 0}), limit=30)
    expected = sum(s.target == 0 for s in make_level(1).test[:30]) / 30
    assert results["accuracy"]["mean"] == pytest.approx(expected)
    by = results["accuracy_by_objects"]
    assert set(by) == {"2", "3", "4"} and min(by.values()) >= 0


@pytest.mark.parametrize("program, per_call", [("episodic", 17), ("semantic_oracle", 1), ("episodic_semantic_oracle_cot", 17)])
def test_image_modality_sends_images_and_text_sends_none(tmp_path, program, per_call):
    images = ScriptedEngine(lambda call: {"reasoning": "-", "count": 1})
    evaluate(tmp_path / "img", images, program=program, modality="image", limit=3)
    assert [c.images for c in images.calls] == [per_call] * 3  # 16 episodes + the scene, or the scene alone
    text = ScriptedEngine(lambda call: {"reasoning": "-", "count": 1})
    evaluate(tmp_path / "txt", text, program=program, modality="text", limit=3)
    assert [c.images for c in text.calls] == [0, 0, 0]
    assert "background with" in text.calls[0].user_text


def test_memory_comes_before_the_scene_so_prompts_share_a_prefix(tmp_path):
    engine = ScriptedEngine(lambda call: {"count": 1})
    evaluate(tmp_path, engine, program="episodic_semantic_oracle", limit=2)
    first, second = (c.user_text for c in engine.calls)
    scene_at = first.index("[[ ## scene ## ]]")
    assert first.index("[[ ## episodes ## ]]") < first.index("[[ ## hypotheses ## ]]") < scene_at
    assert first[:scene_at] == second[:scene_at] and first != second


def test_oracle_programs_see_the_oracle_hypotheses(tmp_path):
    engine = ScriptedEngine(lambda call: {"count": 1})
    evaluate(tmp_path, engine, program="semantic_oracle", limit=1, level=2)
    for hypothesis in make_level(2).oracle_hypotheses:
        assert hypothesis in engine.calls[0].user_text
    assert "[[ ## episodes ## ]]" not in engine.calls[0].user_text
    record = json.loads((tmp_path / "memory-run0.json").read_text())
    assert record["hypotheses"] == make_level(2).oracle_hypotheses


def test_runs_repeat_and_report_mean_and_std(tmp_path):
    perfect, served = oracle_counter(), []

    def respond(call):  # run 2 (calls 12-23) counts perfectly, runs 1 and 3 always say 1
        served.append(call)
        return perfect(call) if 12 <= len(served) - 1 < 24 else {"count": 1}

    results = evaluate(tmp_path, ScriptedEngine(respond), runs=3)
    a, b, c = results["accuracy"]["per_run"]
    assert a == c < b == 1.0
    assert results["accuracy"]["mean"] == pytest.approx((a + b + c) / 3)
    assert results["accuracy"]["std"] > 0
    assert sorted(p.name for p in tmp_path.glob("memory-run*.json")) == [
        "memory-run0.json",
        "memory-run1.json",
        "memory-run2.json",
    ]


def test_threads_give_the_same_answers(tmp_path):
    one = evaluate(tmp_path / "1", ScriptedEngine(oracle_counter()), threads=1, limit=20)
    four = evaluate(tmp_path / "4", ScriptedEngine(oracle_counter()), threads=4, limit=20)

    def answers(folder):
        lines = [json.loads(l) for l in (folder / "examples.jsonl").read_text().splitlines()]
        return {l["id"]: l["prediction"] for l in lines}

    assert answers(tmp_path / "1") == answers(tmp_path / "4") and len(answers(tmp_path / "4")) == 20
    assert one["accuracy"] == four["accuracy"]


def test_a_failing_answer_is_recorded_and_the_run_goes_on(tmp_path):
    def respond(call):  # unparseable for 4-object scenes, even after DSPy's JSON fallback
        return "no fields here at all" if "with 4 objects" in call.user_text else {"count": 1}

    results = evaluate(tmp_path, ScriptedEngine(respond), limit=9)
    lines = [json.loads(l) for l in (tmp_path / "examples.jsonl").read_text().splitlines()]
    assert len(lines) == 9
    failed = [l for l in lines if l["error"]]
    assert len(failed) == 3 and all(l["prediction"] is None and not l["correct"] for l in failed)
    assert all(l["objects"] == 4 for l in failed)
    assert sum(results["errors"].values()) == len(failed)


# -- the CLI -----------------------------------------------------------------------------


@pytest.fixture
def scripted_cli(monkeypatch):
    engine = ScriptedEngine(oracle_counter())
    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", lambda spec, **kw: choice(engine))
    return engine


def test_cli_writes_a_run_directory(tmp_path, scripted_cli, capsys):
    out = tmp_path / "run"
    assert cli.main(["episodic_cot", "--level", "1", "--limit", "6", "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "episodic_cot" in printed and "100.0" in printed
    results = json.loads((out / "results.json").read_text())
    config = json.loads((out / "config.json").read_text())
    assert results["accuracy"]["mean"] == 1.0 and config["limit"] == 6
    assert len((out / "examples.jsonl").read_text().splitlines()) == 6
    assert cli.main(["episodic_cot", "--level", "1", "--out", str(out), "--no-progress"]) == 2  # no silent overwrite


@pytest.mark.parametrize(
    "argv, message",
    [
        (["nope", "--level", "1"], "unknown program"),
        (["episodic", "--level", "4"], "--level must be 1, 2 or 3"),
        (["episodic", "--level", "1", "--limit", "-1"], "--limit must be at least 1"),
        (["episodic", "--level", "1", "--modality", "smell"], "--modality"),
        (["episodic", "--level", "1", "--rules", "missing.json"], "cannot read rules file"),
        (["episodic", "--level", "1", "--lm", "nonsense-model-xyz"], "unknown LM"),
        (["episodic", "--level", "1", "--lm", "anthropic/claude-x"], "ANTHROPIC_API_KEY"),
        (["hdr", "--level", "1", "--temperature", "-3"], "--temperature must be at least 0"),
        (["hdr", "--level", "1", "--temperature", "3"], "--temperature must be in [0, 2]"),
        (["hdr", "--level", "1", "--lm-retries", "x"], "--lm-retries must be a whole number"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, message, capsys, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_a_binary_rules_file_and_an_out_that_is_a_file_are_one_line(tmp_path, capsys):
    (tmp_path / "rules.bin").write_bytes(bytes(range(256)))
    assert cli.main(["hdr", "--level", "1", "--rules", str(tmp_path / "rules.bin")]) == 2
    assert capsys.readouterr().err.startswith(f"error: rules file {tmp_path / 'rules.bin'} is not text")
    (tmp_path / "taken").write_text("x")
    assert cli.main(["hdr", "--level", "1", "--limit", "1", "--out", str(tmp_path / "taken")]) == 2
    assert capsys.readouterr().err == f"error: --out {tmp_path / 'taken'} is a file, not a directory\n"


def test_inconsistent_rules_file_is_one_line(tmp_path, capsys):
    (tmp_path / "rules.json").write_text(
        json.dumps({"attributes": {"shape": ["square"]}, "labels": ["a", "b"], "count_label": "a", "rules": []})
    )
    assert cli.main(["episodic", "--level", "1", "--rules", str(tmp_path / "rules.json")]) == 2
    assert capsys.readouterr().err.startswith("error: ")


class _Summarise(dspy.Signature):
    labels: list[str] = dspy.InputField()
    rule: str = dspy.OutputField()


def test_memory_building_runs_on_the_memory_lm_once_per_run(tmp_path, monkeypatch):
    from memreason.programs import registry
    from memreason.programs.hdr.oracle_baselines import EpisodicSemanticOracle

    class Summarising(EpisodicSemanticOracle):
        def __init__(self, **knobs):
            super().__init__(**knobs)
            self.summarise = dspy.Predict(_Summarise)

        def consolidate(self, episodes, oracle_hypotheses):
            return [self.summarise(labels=[e.label for e in episodes]).rule]

    spec = registry.ProgramSpec("summarising", "experience_transfer", Summarising, "test only")
    monkeypatch.setitem(registry.PROGRAMS, "summarising", spec)
    memory = ScriptedEngine(lambda call: {"rule": "squares are odd"})
    task = ScriptedEngine(lambda call: {"count": 1})
    results = evaluate(tmp_path, task, program="summarising", memory_engine=memory, limit=5, runs=2)
    assert len(memory.calls) == 2  # once per run, never per scene
    assert len(task.calls) == 10 and all("squares are odd" in c.user_text for c in task.calls)
    assert results["tokens"]["memory"]["calls"] == 2 and results["tokens"]["memory"]["prompt"] > 0
    assert results["tokens"]["task"]["calls"] == 10


def test_an_hdr_memory_that_came_out_empty_scores_f1_zero_and_a_memoryless_program_none(tmp_path):
    from tests.helpers.scripted_answers import Script

    memory = ScriptedEngine(
        Script(factors={"factors": ["colour", "shape"]}, hypotheses={"hypotheses": []}, verdicts={"verdicts": []})
    )
    task = ScriptedEngine(lambda call: {"reasoning": "-", "count": 1})
    hdr = evaluate(tmp_path / "hdr", task, program="hdr", memory_engine=memory, limit=2, knobs={"K": 1, "N": 1})
    assert hdr["hypothesis_f1"]["mean"] == 0.0 and hdr["hypothesis_f1"]["per_run"][0]["f1"] == 0.0
    episodic = evaluate(tmp_path / "episodic", ScriptedEngine(lambda call: {"count": 1}), limit=2)
    assert episodic["hypothesis_f1"] is None
