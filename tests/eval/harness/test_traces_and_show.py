"""Traces of every LM call in a run directory, and ``python -m eval show`` reading them back (scripted engines)."""

import gzip
import json

import pytest

import memreason.eval.arc.sandbox as arc_sandbox
import memreason.eval.cli as cli
from memreason.eval.cli import main as eval_main
from memreason.eval.harness.runs import comparable
from memreason.eval.harness.traces import TraceStore, example_unit, memory_unit
from memreason.lm import LMChoice, ScriptedEngine
from memreason.programs import ConceptMemory, save_memory
from memreason.signatures import PSConcept
from tests.helpers.arc_helpers import FLIP, IDENTITY, PS_CONCEPT, RECOLOR, flip_task, recolor_task, small_sandbox, write_tasks
from tests.helpers.scripted_answers import Script, first_entry_labeller, oracle_counter, perceiver, scene_of


def off_by_one_on_four_objects():
    """Right, except one too many on scenes of four objects; says so in its reasoning."""
    right = oracle_counter()

    def respond(call):
        answer = right(call)
        _, objects = scene_of(call.user_text)
        if len(objects) == 4:
            return {"reasoning": "four objects: I counted one twice", "count": answer["count"] + 1}
        return answer

    return respond


@pytest.fixture
def scripted(monkeypatch):
    engine = ScriptedEngine(off_by_one_on_four_objects())
    monkeypatch.setattr(
        "memreason.eval.harness.lms.resolve_lm", lambda spec, **kw: LMChoice(spec or "embedded", engine.lm(), local=False)
    )
    return engine


def run(out, *extra):
    return cli.main(["episodic_cot", "--level", "1", "--limit", "8", "--out", str(out), "--no-progress", "--no-report", *extra])


def test_every_call_is_traced_beside_the_example_it_served(tmp_path, scripted):
    out = tmp_path / "run"
    assert run(out) == 0
    records = [json.loads(line) for line in (out / "examples.jsonl").read_text().splitlines()]
    store = TraceStore(out)
    assert sorted(store.units()) == sorted(example_unit(0, r["id"]) for r in records)
    for record, sent in zip(records, scripted.calls):
        (call,) = store.read(example_unit(0, record["id"]))
        assert call["step"] == "reasoner" and call["role"] == "task" and call["signature"]
        assert call["outputs"]["count"] == record["prediction"]  # the parsed fields, as the harness read them
        assert "reasoning" in call["outputs"] and isinstance(call["completion"], str)
        user = call["messages"][-1]["content"]
        assert scene_of(user) and call["prompt_tokens"] > 0 and call["completion_tokens"] > 0
        assert call["cache_hit"] is False and call["latency_s"] >= 0
    assert all(
        scene_of(store.read(example_unit(0, r["id"]))[0]["messages"][-1]["content"]) == scene_of(c.user_text)
        for r, c in zip(records, scripted.calls)
    )
    assert (store.path(example_unit(0, records[0]["id"])).read_bytes()[:2]) == b"\x1f\x8b"  # gzipped


def test_a_resumed_run_replaces_the_trace_of_an_example_done_again_and_counts_it_once(tmp_path, scripted):
    out = tmp_path / "run"
    assert run(out) == 0
    whole = json.loads((out / "results.json").read_text())
    lines = (out / "examples.jsonl").read_text().splitlines()
    (out / "examples.jsonl").write_text("\n".join(lines[:-1]) + "\n")  # the last example was lost in a crash
    (out / "results.json").unlink()
    before = len(scripted.calls)
    assert run(out) == 0
    assert len(scripted.calls) == before + 1  # only the lost example is answered again
    resumed = json.loads((out / "results.json").read_text())
    assert comparable(resumed) == comparable(whole)
    assert len(TraceStore(out).units()) == len(lines)
    redone = TraceStore(out).read(example_unit(0, json.loads(lines[-1])["id"]))
    assert len(redone) == 1 and redone[0]["outputs"]["count"] == json.loads(lines[-1])["prediction"]


def test_the_memory_build_is_traced_step_by_step(tmp_path, monkeypatch, capsys):
    script = Script(
        factors={"factors": ["shape", "color", "background"]},
        hypotheses={"hypotheses": ["Red circles are anomalies."]},
        verdicts=lambda call: {"verdicts": [{"hypothesis": "Red circles are anomalies.", "reason": "fits", "verdict": "valid"}]},
        count=lambda call: oracle_counter()(call),
    )
    engine = ScriptedEngine(script)
    cap = lambda kw: {"max_tokens": kw["max_tokens"]} if kw.get("max_tokens") else {}  # noqa: E731  the engine cuts there
    monkeypatch.setattr(
        "memreason.eval.harness.lms.resolve_lm",
        lambda spec, **kw: LMChoice(spec or "embedded", engine.lm(**cap(kw)), local=False),
    )
    out = tmp_path / "hdr"
    assert cli.main(["hdr", "--level", "1", "--limit", "2", "--out", str(out), "--no-progress", "--no-report"]) == 0
    calls = TraceStore(out).read(memory_unit(0))
    memory = json.loads((out / "memory-run0.json").read_text())
    assert len(calls) == memory["tokens"]["calls"]
    assert {"factor_extractor", "hypothesis_generator", "hypothesis_verifier"} <= {c["step"] for c in calls}
    assert all(c["role"] == "memory" for c in calls)
    capsys.readouterr()
    assert eval_main(["show", str(out), "--step", "hypothesis_generator", "--width", "200"]) == 0
    text = capsys.readouterr().out
    assert "memory build, run 0: step hypothesis_generator" in text and "Red circles are anomalies." in text
    assert "factor_extractor" not in text
    assert eval_main(["show", str(out), "--width", "200"]) == 0
    text = capsys.readouterr().out
    assert "semantic memory: 1 hypothesis" in text and "1. Red circles are anomalies." in text
    assert "token cap" not in text

    script.answers["hypotheses"] = {"hypotheses": ["Red circles are anomalies."] + [f"Rule {i}." for i in range(200)]}
    capped = tmp_path / "capped"
    assert (
        cli.main(
            ["hdr", "--level", "1", "--limit", "1", "--max-tokens", "300", "--out", str(capped), "--no-progress", "--no-report"]
        )
        == 0
    )
    capsys.readouterr()
    assert eval_main(["show", str(capped), "--width", "200"]) == 0
    text = capsys.readouterr().out
    assert "answers that stopped at the token cap (--max-tokens) instead of ending: hypothesis_generator 3" in text


def test_past_the_cap_messages_are_dropped_and_the_rest_kept(tmp_path):
    store = TraceStore(tmp_path, cap_bytes=10)
    call = {"step": "reasoner", "messages": [{"role": "user", "content": "x" * 1000}], "outputs": {"count": 2}}
    store.write("run0/a", [call])
    store.write("run0/b", [call])
    assert store.read("run0/a")[0]["messages"][0]["content"] == "x" * 1000
    (kept,) = store.read("run0/b")
    assert kept["messages"].startswith("dropped") and kept["outputs"] == {"count": 2}
    assert json.loads(gzip.decompress(store.path("run0/b").read_bytes()))["unit"] == "run0/b"


def test_show_gives_the_wrong_examples_with_their_reasoning(tmp_path, scripted, capsys):
    out = tmp_path / "run"
    assert run(out) == 0
    capsys.readouterr()
    records = [json.loads(line) for line in (out / "examples.jsonl").read_text().splitlines()]
    wrong = [r for r in records if not r["correct"]]
    right = [r for r in records if r["correct"]]
    assert wrong and right
    assert eval_main(["show", str(out), "--wrong", "--width", "200"]) == 0
    text = capsys.readouterr().out
    for r in wrong:
        assert f"{r['id']} (run 0): prediction {r['prediction']}, target {r['target']} ✗" in text
    assert all(f"{r['id']} (run 0)" not in text for r in right)
    assert "I counted one twice" in text and "memory used: 16 raw episodes" in text
    assert (out / "scenes" / f"{wrong[0]['id']}.png").is_file()  # the scene drawn for a look

    assert eval_main(["show", str(out), "--id", right[0]["id"], "--messages", "--width", "200"]) == 0
    text = capsys.readouterr().out
    assert f"{right[0]['id']} (run 0): prediction {right[0]['prediction']}, target {right[0]['target']} ✓" in text
    assert "applied the rules" in text and "[system]" in text and "[user]" in text

    assert eval_main(["show", str(out), "--width", "200"]) == 0  # the overview: one line per example, and what next
    text = capsys.readouterr().out
    assert all(r["id"] in text for r in records) and f"memreason-eval show {out} --wrong" in text


def test_show_refuses_what_is_not_a_run_in_one_line(tmp_path, scripted, capsys):
    assert eval_main(["show", str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    out = tmp_path / "run"
    assert run(out) == 0
    capsys.readouterr()
    assert eval_main(["show", str(out), "--id", "no-such-scene"]) == 2
    assert "no example no-such-scene" in capsys.readouterr().err


def test_show_an_arc_run_gives_each_attempt_its_failures_and_the_retry_feedback(tmp_path, monkeypatch, capsys):
    def program(call):
        if "input (1 rows x 2 columns):\n12" in call.user_text:
            return {"program": FLIP}
        return {"program": RECOLOR if "previous_program" in call.user_text else IDENTITY}

    engine = ScriptedEngine(Script(program=program, selected={"reasoning": "cues", "selected": ["flip rows"]}))
    monkeypatch.setattr(
        "memreason.eval.harness.lms.resolve_lm", lambda spec, **kw: LMChoice(spec or "embedded", engine.lm(), local=False)
    )
    monkeypatch.setattr(arc_sandbox, "make_sandbox", lambda workers, wall_seconds: small_sandbox())
    tiny = write_tasks(tmp_path / "tiny", flip_task("a_flip"), recolor_task("b_recolor"))
    memory = ConceptMemory("ps")
    memory.add([PSConcept(**PS_CONCEPT)], source="seed")
    save_memory(memory, tmp_path / "ps.json")
    out = tmp_path / "arc"
    assert (
        eval_main(
            [
                "arcmemo_ps",
                "--split",
                str(tiny),
                "--memory",
                str(tmp_path / "ps.json"),
                "--attempts",
                "1",
                "--retries",
                "1",
                "--out",
                str(out),
                "--no-progress",
                "--no-report",
            ]
        )
        == 0
    )
    calls = TraceStore(out).read(example_unit(0, "b_recolor"))
    assert [c["step"] for c in calls][-2:] == ["arc_solver.solve", "arc_solver.retry"]
    assert calls[0]["role"] == "memory"  # the concept selection, metered as the memory LM
    capsys.readouterr()
    assert eval_main(["show", str(out), "--id", "b_recolor", "--width", "200"]) == 0
    text = capsys.readouterr().out
    assert "attempt 0, first program: 0/2 train pairs right" in text and "attempt 0, retry 1: 2/2 train pairs right" in text
    assert "feedback given to the next retry:" in text and "return grid" in text
    assert "concepts selected: flip rows" in text and "memory in the solver's prompt:" in text and "mirror left-right" in text
    assert eval_main(["show", str(out), "--width", "200"]) == 0
    assert "memory: 1 concept as loaded, 1 concept at the end; 0 writes; 2 snapshots in memory/run0/" in capsys.readouterr().out
    base = tmp_path / "base"
    assert (
        eval_main(["baseline", "--split", str(tiny), "--attempts", "1", "--out", str(base), "--no-progress", "--no-report"]) == 0
    )
    capsys.readouterr()
    assert eval_main(["show", str(base), "--width", "200"]) == 0
    assert "no memory: this program reads none" in capsys.readouterr().out


def test_a_local_model_file_that_is_not_gguf_is_refused_before_any_work(tmp_path, capsys):
    fake = tmp_path / "model.gguf"
    fake.write_text("not a model")
    out = tmp_path / "run"
    assert cli.main(["hdr", "--level", "1", "--lm", f"local:{fake}", "--limit", "1", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {fake} is not a GGUF model file (it does not start with the GGUF magic bytes)\n"
    assert not out.exists()


def test_the_demo_runs_the_rows_side_by_side_writes_the_report_and_says_how_to_look_inside(tmp_path, monkeypatch, capsys):

    engine = ScriptedEngine(oracle_counter())
    resolve = lambda spec, **kw: LMChoice(spec or "embedded", engine.lm(), local=False)  # noqa: E731
    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", resolve)
    monkeypatch.setattr("memreason.eval.experience_transfer.table_cells.resolve_lm", resolve)
    out = tmp_path / "demo"
    assert (
        eval_main(
            [
                "demo",
                "--rows",
                "episodic_cot,semantic_oracle_cot",
                "--limit",
                "4",
                "--no-per-object",
                "--threads",
                "2",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    cells = sorted(p for p in (out / "cells").iterdir())
    assert [c.name for c in cells] == ["episodic_cot-L1-embedded-limit4", "semantic_oracle_cot-L1-embedded-limit4"]
    assert "Table 3" in text and text.count("100.0") >= 2
    assert (out / "report.md").is_file() and list(out.glob("*.png"))
    for cell in cells:
        assert f"memreason-eval show {cell} --wrong" in text
    assert "memreason-eval table3 --levels 1,2,3" in text
    calls = len(engine.calls)
    assert (
        eval_main(
            [
                "demo",
                "--rows",
                "episodic_cot,semantic_oracle_cot",
                "--limit",
                "4",
                "--no-per-object",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    assert len(engine.calls) == calls  # finished rows are read back


def test_the_demo_labels_each_object_against_its_nearest_memory_by_default(tmp_path, monkeypatch, capsys):

    engine = ScriptedEngine(Script(objects=perceiver, label=first_entry_labeller))
    resolve = lambda spec, **kw: LMChoice(spec or "embedded", engine.lm(), local=False)  # noqa: E731
    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", resolve)
    monkeypatch.setattr("memreason.eval.experience_transfer.table_cells.resolve_lm", resolve)
    out = tmp_path / "demo"
    assert eval_main(["demo", "--rows", "semantic_oracle_cot", "--limit", "3", "--out", str(out), "--no-progress"]) == 0
    [cell] = (out / "cells").iterdir()
    assert cell.name == "semantic_oracle_cot-L1-embedded-per-object-k3-limit3"
    assert json.loads((cell / "results.json").read_text())["accuracy"]["mean"] == 1.0
    assert "--per-object --retrieve-k 3" in capsys.readouterr().out


def test_show_gives_what_each_retry_read_from_memory(tmp_path, monkeypatch, capsys):
    def program(call):
        if "input (1 rows x 2 columns):\n12" in call.user_text:
            return {"program": FLIP}
        return {"program": RECOLOR if "previous_program" in call.user_text else IDENTITY}

    answers = Script(
        program=program, selected={"reasoning": "cues", "selected": ["flip rows"]}, chosen={"chosen": ["recolour cells"]}
    )
    engine = ScriptedEngine(answers)
    monkeypatch.setattr(
        "memreason.eval.harness.lms.resolve_lm", lambda spec, **kw: LMChoice(spec or "embedded", engine.lm(), local=False)
    )
    monkeypatch.setattr(arc_sandbox, "make_sandbox", lambda workers, wall_seconds: small_sandbox())
    tiny = write_tasks(tmp_path / "tiny", recolor_task("b_recolor"))
    memory = ConceptMemory("ps")
    memory.add([PSConcept(**PS_CONCEPT), PSConcept(**{**PS_CONCEPT, "title": "recolour cells"})], source="seed")
    save_memory(memory, tmp_path / "ps.json")
    base = [
        "arcmemo_ps",
        "--split",
        str(tiny),
        "--memory",
        str(tmp_path / "ps.json"),
        "--attempts",
        "1",
        "--retries",
        "1",
        "--retry-mode",
        "passes",
        "--no-progress",
        "--no-report",
    ]
    for extra, line in (
        ([], "concepts read again for this retry: flip rows"),
        (["--reselect"], "concepts re-selected for this retry (added to the first read's): recolour cells"),
    ):
        out = tmp_path / ("arc" + "".join(extra))
        assert eval_main([*base, *extra, "--out", str(out)]) == 0
        capsys.readouterr()
        assert eval_main(["show", str(out), "--id", "b_recolor", "--width", "200"]) == 0
        text = capsys.readouterr().out
        assert line in text and text.index("attempt 0, retry 1") < text.index(line)
        assert text.count("for this retry") == 1  # the first program's read is the task's, shown once above
        assert "arc_solver.retry (RetryArcPuzzle, task LM)" in text and ", retry pass 1" in text  # its call, tagged
        assert text.count(", retry pass 1") == len(
            [c for c in TraceStore(out).read(example_unit(0, "b_recolor")) if c.get("pass")]
        )
