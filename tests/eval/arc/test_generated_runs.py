"""Generated ARC splits through the ARC programs on the scripted engine: no family name or task id
reaches a prompt; the knobs are run identity; bad knobs are one line and exit 2."""

import json
import re

import pytest

import memreason.eval.arc.sandbox as arc_sandbox
from memreason.datasets.arc import ARC1D_SOLUTIONS, MEMORY_FAMILIES, arc1d_families, concept_of, load_split
from memreason.eval.cli import main as eval_main
from memreason.lm import ScriptedEngine
from tests.helpers.arc_helpers import FLIP, PS_CONCEPT, choice, small_sandbox
from tests.helpers.scripted_answers import Script, outputs

pytest.importorskip("reasoning_gym")  # the gym extra


EXAMPLE = re.compile(r"input \(1 rows x \d+ columns\):\n(\d+)\noutput \(1 rows x \d+ columns\):\n(\d+)")


def oracle(call):
    """The written solution that fits the puzzle's examples (found by running them all), else a wrong program."""
    examples = [([[int(c) for c in a]], [[int(c) for c in b]]) for a, b in EXAMPLE.findall(call.user_text)]
    for path in sorted(ARC1D_SOLUTIONS.glob("*.py")):
        namespace: dict = {}
        exec(path.read_text(), namespace)
        try:
            if examples and all(namespace["transform"](a) == b for a, b in examples):
                return {"program": path.read_text()}
        except (ValueError, IndexError):  # another family's solution on these grids
            continue
    return {"program": FLIP}


@pytest.fixture
def scripted(monkeypatch):
    engine = ScriptedEngine(
        Script(
            program=oracle,
            selected={"reasoning": "cues", "selected": [PS_CONCEPT["title"]]},
            pseudocode={"pseudocode": "1. do it"},
            concepts={"concepts": [{"title": "slide a block", "kind": "routine"}]},
        )
    )
    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", lambda spec, **kw: choice(engine, spec or "embedded"))
    monkeypatch.setattr(arc_sandbox, "make_sandbox", lambda workers, wall_seconds: small_sandbox())
    return engine


def _assert_no_label_in(calls):
    assert calls
    families = arc1d_families()
    for call in calls:
        assert "@s" not in call.text
        leaked = [family for family in families if family in call.text]
        assert not leaked, f"a prompt names {leaked}"


def test_no_family_name_or_task_id_reaches_a_prompt(tmp_path, scripted):
    """baseline and arcmemo_ps (memory read, and written every task) on generated tasks, memory credited to generated ids."""
    from memreason.programs import ConceptMemory, save_memory
    from memreason.signatures import PSConcept

    seeds = load_split("arc1d-seeds", limit=2)
    memory = ConceptMemory("ps")
    for task in seeds:  # sources name the tasks (records, not prompts)
        memory.add([PSConcept(**PS_CONCEPT)], source=task.id)
    save_memory(memory, tmp_path / "ps.json")
    runs = {
        "baseline": ["--split", "arc1d-recombination"],
        "arcmemo_ps": ["--split", "arc1d-transfer", "--memory", str(tmp_path / "ps.json"), "--continual-every", "1"],
    }
    for program, argv in runs.items():
        assert (
            eval_main([program, *argv, "--limit", "2", "--retries", "1", "--out", str(tmp_path / program), "--no-progress"]) == 0
        )
    assert {"program", "selected", "concepts"} <= {outputs(call)[-1] for call in scripted.calls}  # solve, read, write
    _assert_no_label_in(scripted.calls)
    lines = [json.loads(line) for line in (tmp_path / "arcmemo_ps" / "examples.jsonl").read_text().splitlines()]
    assert [line["id"] for line in lines] == [t.id for t in load_split("arc1d-transfer", limit=2)]
    written = json.loads((tmp_path / "arcmemo_ps" / "memory" / "run0" / "final.json").read_text())
    assert {concept_of(s) for c in written["concepts"] for s in c["sources"]} >= {concept_of(line["id"]) for line in lines}


def test_build_memory_from_the_written_solutions_verifies_every_one(tmp_path, scripted):
    """Each family's file serves its instances (matched by concept), passes every pair in the sandbox, and
    is abstracted without its family's name reaching the abstractor."""
    out = tmp_path / "ps.json"
    argv = ["build_memory", "--format", "ps", "--split", "arc1d-seeds", "--solutions", str(ARC1D_SOLUTIONS), "--out", str(out)]
    assert eval_main([*argv, "--run-dir", str(tmp_path / "build"), "--no-progress"]) == 0
    results = json.loads((tmp_path / "build" / "results.json").read_text())
    assert results["verified"] == results["written"] == len(MEMORY_FAMILIES)
    _assert_no_label_in(scripted.calls)
    [concept] = json.loads(out.read_text())["concepts"]  # every write revised the one title
    written = [(ARC1D_SOLUTIONS / f"{concept_of(s)}.py").read_text() for s in concept["sources"]]
    assert len(written) == len(MEMORY_FAMILIES) and concept["programs"] == written[-3:]  # the newest three


def test_a_build_kept_apart_gives_each_concept_one_source_and_the_oracle_and_execution_read_the_tasks_own(tmp_path, scripted):
    out = tmp_path / "ps.json"
    families = "move_1pix_solid_left,gravity_right"
    argv = ["build_memory", "--format", "ps", "--split", "arc1d-seeds", "--families", families, "--out", str(out)]
    assert (
        eval_main([*argv, "--solutions", str(ARC1D_SOLUTIONS), "--apart", "--run-dir", str(tmp_path / "b"), "--no-progress"]) == 0
    )
    assert json.loads((tmp_path / "b" / "config.json").read_text())["apart"] is True
    memory = json.loads(out.read_text())["concepts"]
    assert all(len(c["sources"]) == 1 for c in memory) and len({c["title"] for c in memory}) == len(memory)
    assert all(c["programs"] == [(ARC1D_SOLUTIONS / f"{concept_of(c['sources'][0])}.py").read_text()] for c in memory)
    run = tmp_path / "oracle"
    argv = ["arcmemo_ps_oracle", "--split", "arc1d-transfer", "--families", families, "--memory", str(out), "--out", str(run)]
    assert eval_main([*argv, "--no-progress"]) == 0
    for line in (run / "examples.jsonl").read_text().splitlines():
        record = json.loads(line)
        sources = [s for names in record["read"]["selected_sources"].values() for s in names]
        assert sources and {concept_of(s) for s in sources} == {concept_of(record["id"])}
    _assert_no_label_in(scripted.calls)
    run = tmp_path / "exec"  # ranked by running the concepts' programs: each task's own family's come first
    argv = ["arcmemo_ps_exec", "--split", "arc1d-transfer", "--families", families, "--memory", str(out), "--out", str(run)]
    assert eval_main([*argv, "--no-progress"]) == 0
    for line in (run / "examples.jsonl").read_text().splitlines():
        record = json.loads(line)
        best = record["read"]["selected"][0]
        assert record["read"]["scores"][best] == 1.0
        assert [concept_of(s) for s in record["read"]["selected_sources"][best]] == [concept_of(record["id"])]
    assert json.loads((run / "results.json").read_text())["memory_measures"]["hit_at_k"] == 1.0
    _assert_no_label_in(scripted.calls)


def test_the_knobs_decide_the_run(tmp_path, scripted):
    out = tmp_path / "run"
    argv = ["baseline", "--split", "arc1d-transfer", "--families", "gravity_right", "--out", str(out), "--no-progress"]
    assert eval_main(argv) == 0
    config = json.loads((out / "config.json").read_text())
    assert (config["seed"], config["size"], config["families"], config["difficulty"]) == (0, 1, ["gravity_right"], None)
    assert config["task_ids"] == ["gravity_right@s0i0"]
    calls = len(scripted.calls)
    assert eval_main([*argv, "--seed", "0", "--size", "1"]) == 0  # the defaults, asked for: the same run, continued
    assert len(scripted.calls) == calls
    assert eval_main([*argv, "--seed", "1"]) == 2  # another seed is another run


@pytest.mark.parametrize(
    "argv, message",
    [
        (["baseline", "--split", "arc1d", "--families", "move_9pix"], "unknown 1D-ARC family 'move_9pix'"),
        (["baseline", "--split", "val100", "--families", "gravity_right"], "--families: only for the generated splits"),
        (["baseline", "--split", "val100", "--seed", "3"], "--seed: only for the generated splits"),
        (["build_memory", "--format", "ps", "--out", "m.json", "--size", "3"], "--size: only for the generated splits"),
        (["baseline", "--split", "arc1d", "--difficulty", "0.1"], "re-ARC splits"),
        (["baseline", "--split", "rearc", "--difficulty", "0.3,0.1"], "--difficulty takes LOW,HIGH"),
        (["baseline", "--split", "rearc", "--size", "0"], "--size must be at least 1"),
        (["baseline", "--split", "arc1d", "--families", ","], "--families needs comma-separated family names"),
    ],
)
def test_bad_knobs_are_one_line_and_exit_2(argv, message, capsys):
    assert eval_main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1 and "Traceback" not in err
