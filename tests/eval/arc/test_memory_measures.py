"""What memory did: hit@k, precision, part measures and reuse of an ArcMemo run's reads, by hand and end to end."""

import json

import pytest

import memreason.eval.arc.sandbox as arc_sandbox
from memreason.eval.arc.memory_measures import memory_measures, read_measure, selected_names
from memreason.eval.arc.tables import markdown_table
from memreason.eval.cli import main as eval_main
from memreason.lm import ScriptedEngine
from tests.helpers.arc_helpers import FLIP, IDENTITY, PS_CONCEPT, RECOLOR, choice, small_sandbox, tiny  # noqa: F401
from tests.helpers.scripted_answers import Script, outputs


def record(task_id, selected, sources=None, *, score=0.0, run=0, **read):
    """A task record whose first read selected ``selected`` (with ``sources`` by concept, when given)."""
    read = {"selected": selected, **read}
    if sources is not None:
        read["selected_sources"] = sources
    return {"run": run, "id": task_id, "read": read, "attempts": [], "scores": {"official_score": score}}


def test_hit_and_precision_by_hand():
    # three concepts selected for a move_1pix_solid_right task: one from its own family, one from another, one unsourced
    r = record(
        "move_1pix_solid_right@s0i3",
        ["a", "b", "c"],
        {"a": ["move_1pix_solid_right@s1i0"], "b": ["gravity_left@s0i0"], "c": []},
    )
    m = read_measure(r)
    assert (m.k, m.hit) == (3, True) and m.precision == pytest.approx(1 / 3)
    # a plain ARC id is its own concept (a memory seeded from barc_seeds has such sources)
    assert read_measure(record("017c7c7b", ["x"], {"x": ["017c7c7b", "007bbfb7"]})).precision == 1.0
    miss = read_measure(record("017c7c7b", ["x", "y"], {"x": ["007bbfb7"], "y": ["017c7c7b@s0i0"]}))
    assert miss.hit and miss.precision == 0.5  # a re-ARC instance of the same task counts: same concept label
    none = read_measure(record("017c7c7b", [], {}))
    assert (none.k, none.hit, none.precision) == (0, False, None)


def test_a_read_whose_memory_held_no_concept_of_its_label_is_left_out_of_hit_and_precision():
    # a val100 task read from a seed memory: no concept could come from its own task, so no hit was possible
    held = record("017c7c7b", ["x"], {"x": ["017c7c7b"]}, label_held=True)
    unheld = record("0a1d4ef5", ["x", "y"], {"x": ["017c7c7b"], "y": []}, label_held=False)
    old = record("0b148d64", ["y"], {"y": []})  # written before reads said: counted, as before
    block = memory_measures([[held, unheld, old]])
    assert block["tasks"] == 3 and block["label_held"] == 2
    assert block["hit_at_k"] == 0.5 and block["precision"] == 0.5
    nothing = memory_measures([[unheld]])
    assert nothing["tasks"] == 1 and nothing["label_held"] == 0 and nothing["hit_at_k"] is None and nothing["precision"] is None
    from memreason.eval.arc.show import measures_line as _measures_line

    assert "hit@k -, precision - over 1 reads" in _measures_line(nothing) and "1 of them from a memory holding no" in (
        _measures_line(nothing)
    )


def test_part_hit_and_coverage_for_a_recombination_family():
    # the task's blocks: move, 1pix, solid, right; the sources hold move, solid, right between them, not 1pix
    r = record(
        "move_1pix_solid_right@s0i0",
        ["p", "q"],
        {"p": ["move_3pix_solid_left@s0i1"], "q": ["move_2pix_colorful_right@s0i2"]},
    )
    m = read_measure(r)
    assert not m.hit and m.precision == 0.0
    assert m.part_hit is True and m.part_coverage == pytest.approx(3 / 4)
    far = read_measure(record("block_touch_dot@s0i0", ["p"], {"p": ["gravity_left@s0i0"]}))
    assert far.part_hit is False and far.part_coverage == 0.0
    assert read_measure(record("017c7c7b", ["p"], {"p": ["017c7c7b"]})).part_hit is None  # not a 1D-ARC family


def test_the_blind_references_by_hand():
    from memreason.datasets.arc import concept_of
    from memreason.programs.arcmemo.arcmemo import blind_reference

    sources = [["fam_x@s0i0", "fam_x@s0i1", "fam_y@s0i0"], ["fam_z@s0i0"], ["fam_y@s0i1", "fam_y@s0i2"], []]
    counts = [len(s) for s in sources]

    def blind(label, k):
        return blind_reference([any(concept_of(x) == label for x in s) for s in sources], counts, k)

    # fam_y: 2 of 4 concepts hold one; the most-sourced (3 sources, then 2) are both of them
    assert blind("fam_y", 1) == {"chance": 0.5, "most_sourced": True}
    assert blind("fam_y", 2) == {"chance": pytest.approx(1 - 1 / 6), "most_sourced": True}
    # fam_z: 1 of 4, and the concept with one source is never among the two most-sourced
    assert blind("fam_z", 1) == {"chance": 0.25, "most_sourced": False}
    assert blind("fam_z", 2) == {"chance": 0.5, "most_sourced": False}
    assert blind("fam_z", 9) == {"chance": 1.0, "most_sourced": True}  # k past the memory: all of it
    assert blind("fam_z", 0) == {"chance": 0.0, "most_sourced": False}
    assert blind_reference([], [], 3) == {"chance": 0.0, "most_sourced": False}


def test_the_blind_references_are_averaged_over_the_reads_hit_at_k_measures():
    a = record("fam_y@s9i0", ["p"], {"p": ["fam_y@s0i0"]}, blind={"chance": 0.5, "most_sourced": True})
    b = record("fam_z@s9i0", ["p"], {"p": ["fam_y@s0i0"]}, blind={"chance": 0.25, "most_sourced": False})
    unheld = record("fam_w@s9i0", ["p"], {"p": ["fam_y@s0i0"]}, label_held=False, blind={"chance": 0.0, "most_sourced": False})
    old = record("fam_y@s9i1", ["p"], {"p": ["fam_y@s0i0"]})  # written before reads recorded the references
    block = memory_measures([[a, b, unheld, old]])
    assert block["hit_at_k"] == pytest.approx(2 / 3)  # a and old hit, b misses; unheld is left out
    assert block["chance_hit_at_k"] == pytest.approx(0.375) and block["most_sourced_hit_at_k"] == 0.5
    assert memory_measures([[old]])["chance_hit_at_k"] is None
    from memreason.eval.arc.show import measures_line as _measures_line

    assert "hit@k blind to the puzzle: 37.5% by chance, 50.0% naming the most-sourced" in _measures_line(block)
    assert "blind to the puzzle" not in _measures_line(memory_measures([[old]]))


@pytest.mark.parametrize(
    "rec",
    [
        record("t", ["a"]),  # written before reads kept their sources
        record("t", "all", {}),  # the whole memory (arcmemo_ps_noselect)
        record("t", [], {}, failed="could not parse"),
        {"run": 0, "id": "t", "read": {}, "attempts": [], "scores": {}},  # the baseline reads nothing
    ],
)
def test_what_is_not_measured(rec):
    assert read_measure(rec) is None


def test_the_run_block_by_hand():
    run0 = [
        record("a@s0i0", ["c1", "c2"], {"c1": ["a@s1i0"], "c2": ["b@s1i0"]}, score=1.0),  # hit, precision 1/2
        record("b@s0i0", ["c1"], {"c1": ["a@s1i0"]}, score=0.0),  # miss, precision 0
        record("c@s0i0", [], {}),  # empty: a miss, no precision
    ]
    run1 = [
        record("a@s0i0", ["c2"], {"c2": ["b@s1i0"]}, score=0.5, run=1),  # miss, precision 0
        record("b@s0i0", ["c2"], {"c2": ["b@s1i0"]}, score=1.0, run=1),  # hit, precision 1
        record("c@s0i0", [], {}, run=1, failed="unparseable"),  # failed: not measured
    ]
    block = memory_measures([run0, run1])
    assert block["tasks"] == 5 and block["empty"] == 1 and block["failed"] == 1
    assert block["hit_at_k"] == pytest.approx(2 / 5)
    assert block["precision"] == pytest.approx((1 / 2 + 0 + 0 + 1) / 4)
    assert block["selected_mean"] == pytest.approx((2 + 1 + 0 + 1 + 1) / 5)
    assert [p["tasks"] for p in block["per_run"]] == [3, 2]
    assert block["per_run"][0]["hit_at_k"] == pytest.approx(1 / 3) and block["per_run"][1]["precision"] == pytest.approx(1 / 2)
    # reuse: c2 chosen by 3 task records, 3 of them solved (scores 1.0, 0.5, 1.0); c1 by 2, 1 solved
    assert block["reuse"] == [{"concept": "c2", "selected": 3, "solved": 3}, {"concept": "c1", "selected": 2, "solved": 1}]
    assert block["part_tasks"] == 0 and block["part_hit"] is None
    assert memory_measures([[{"run": 0, "id": "t", "read": {}, "attempts": [], "scores": {}}]]) is None


def test_reuse_counts_the_reads_of_retry_steps_once_per_task():
    rec = record("t", ["a"], {"a": []}, score=1.0)
    rec["attempts"] = [
        {"steps": [{"read": None}, {"read": {"selected": ["b", "a"], "reselected": True}}]},
        {"steps": [{"read": {"selected": ["b"]}}]},
    ]
    assert selected_names(rec) == ["a", "b"]
    assert memory_measures([[rec]])["reuse"] == [
        {"concept": "a", "selected": 1, "solved": 1},
        {"concept": "b", "selected": 1, "solved": 1},
    ]


def test_older_records_keep_reuse_and_leave_out_the_columns():
    old = [record("a", ["c1"], score=1.0), record("b", ["c1"])]
    block = memory_measures([old])
    assert (
        block["tasks"] == 0 and block["hit_at_k"] is None and block["reuse"][0] == {"concept": "c1", "selected": 2, "solved": 1}
    )
    results = {
        "program": "arcmemo_ps",
        "retries": 0,
        "runs": 1,
        "examples": 2,
        "wall_seconds": 1.0,
        "tokens": {"memory": {"total": 0}, "task": {"total": 0}},
        "by_retries": {"0": {"oracle_at_k": {"1": 0.5, "2": 0.5, "3": None}, "oracle_at_k_std": {}, "strict_score": 0.5}},
        "memory_measures": block,
    }
    assert "hit@k" not in markdown_table([results])
    measured = {**results, "memory_measures": {**block, "tasks": 2, "hit_at_k": 0.5, "precision": 0.25}}
    table = markdown_table([measured, results]).splitlines()
    assert table[0].endswith("| hit@k | precision |")
    assert table[2].endswith("| 50.00 | 25.00 |") and table[3].endswith("| - | - |")


def test_a_reselection_records_its_sources():
    import dspy

    from memreason.programs import ArcMemoPS, ConceptMemory
    from memreason.programs.arcmemo.arc_solver import Attempt, Step
    from memreason.signatures import PSConcept
    from tests.helpers.arc_helpers import flip_task

    program = ArcMemoPS(reselect=True)
    memory = ConceptMemory("ps")
    memory.add([PSConcept(**PS_CONCEPT)], source="a_flip")
    memory.add([PSConcept(**{**PS_CONCEPT, "title": "recolour"})], source="b_recolor")
    program.memory = memory
    program.selector.reselect = lambda *a, **kw: dspy.Prediction(
        concepts="recolour", names=["recolour"], record={"selected": ["recolour"], "hallucinated": []}
    )
    _, read = program.reread(flip_task(), {"selected": ["flip rows"]}, Attempt(0, [Step(0, FLIP)]))
    assert read["selected_sources"] == {"recolour": ["b_recolor"]}


@pytest.fixture
def scripted(monkeypatch):
    script = Script(
        program={"program": FLIP},
        selected={"reasoning": "cues", "selected": ["flip rows"]},
    )
    engine = ScriptedEngine(script)
    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", lambda spec, **kw: choice(engine, spec or "embedded"))
    monkeypatch.setattr(arc_sandbox, "make_sandbox", lambda workers, wall_seconds: small_sandbox())
    return engine


def test_a_run_says_what_memory_did(tmp_path, tiny, scripted, capsys):  # noqa: F811
    from memreason.programs import ConceptMemory, save_memory
    from memreason.signatures import PSConcept

    memory = ConceptMemory("ps")
    memory.add([PSConcept(**PS_CONCEPT)], source="a_flip")  # the flip concept came from the flip task
    memory.add([PSConcept(**{**PS_CONCEPT, "title": "recolour"})], source="b_recolor")  # never selected: a miss possible
    save_memory(memory, tmp_path / "ps.json")
    out = tmp_path / "run"
    argv = ["arcmemo_ps", "--split", str(tiny), "--memory", str(tmp_path / "ps.json"), "--attempts", "1"]
    assert eval_main([*argv, "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    lines = [json.loads(line) for line in (out / "examples.jsonl").read_text().splitlines()]
    assert [line["read"]["selected_sources"] for line in lines] == [{"flip rows": ["a_flip"]}] * 2
    block = json.loads((out / "results.json").read_text())["memory_measures"]
    # both tasks read the flip concept: a hit for a_flip, a miss for b_recolor; the flip solves a_flip only
    assert (block["tasks"], block["hit_at_k"], block["precision"], block["label_held"]) == (2, 0.5, 0.5, 2)
    assert [line["read"]["label_held"] for line in lines] == [True, True]
    # blind, one of two concepts at k = 1: a coin; naming the most-sourced (a tie, so memory order) names flip rows
    assert [line["read"]["blind"] for line in lines] == [
        {"chance": 0.5, "most_sourced": True},
        {"chance": 0.5, "most_sourced": False},
    ]
    assert (block["chance_hit_at_k"], block["most_sourced_hit_at_k"]) == (0.5, 0.5)
    assert block["reuse"] == [{"concept": "flip rows", "selected": 2, "solved": 1}]
    assert "| hit@k | hit@k by chance | hit@k most-sourced | precision |" in printed
    assert "| 50.00 | 50.00 | 50.00 | 50.00 |" in printed
    programs = json.loads((out / "results.json").read_text())["programs"]
    # the flip ran on both tasks' train inputs: right on every pair of a_flip, on none of b_recolor's
    assert (programs["written"], programs["ran"], programs["some_right"], programs["all_right"]) == (2, 2, 1, 1)
    report = (out / "report.md").read_text()
    assert (
        "### How the programs fared on the train inputs" in report and "| 2 | 0 | 0 | 0 | 0 | 0 | 0 | 2 | 1 | 1 | — |" in report
    )
    assert "### What memory did" in report and "| flip rows | 2 | 1 |" in report
    assert "| hit@k % | hit@k by chance % | hit@k most-sourced % | precision % |" in report
    assert eval_main(["show", str(out), "--width", "200"]) == 0
    shown = capsys.readouterr().out
    assert "memory reads: hit@k 50.0%, precision 50.0% over 2 reads" in shown and "1, hit" in shown and "1, miss" in shown
    assert (
        "programs: 2 written; 0 did not parse" in shown
        and "2 ran on every train input (1 with some pair right, 1 with all)" in shown
    )
    assert eval_main(["show", str(out), "--id", "b_recolor", "--width", "200"]) == 0
    shown = capsys.readouterr().out
    assert "concepts selected: flip rows (from a_flip)" in shown and "a miss at k = 1" in shown
    assert "blind to the puzzle: a hit with chance 0.50, a miss naming the 1 most-sourced" in shown
    # had memory held no concept of b_recolor's (a task that is no seed's), its read is neither a hit nor a miss
    lines[1]["read"]["label_held"] = False
    (out / "examples.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert eval_main(["show", str(out), "--width", "200"]) == 0
    shown = capsys.readouterr().out
    assert "1, hit" in shown and "1, no source" in shown and "1, miss" not in shown
    assert eval_main(["show", str(out), "--id", "b_recolor", "--width", "200"]) == 0
    shown = capsys.readouterr().out
    assert "hit and precision are not measured" in shown and "a miss at k" not in shown


def test_an_execution_ranked_run_is_measured_like_the_others(tmp_path, tiny, scripted, capsys):  # noqa: F811
    from memreason.programs import ConceptMemory, save_memory
    from memreason.signatures import PSConcept

    memory = ConceptMemory("ps")
    memory.add([PSConcept(**PS_CONCEPT)], source="a_flip", program=FLIP)
    memory.add([PSConcept(**{**PS_CONCEPT, "title": "recolour"})], source="b_recolor", program=RECOLOR)
    memory.add([PSConcept(**{**PS_CONCEPT, "title": "unverified"})], source="a_flip")  # no program: never selected
    save_memory(memory, tmp_path / "ps.json")
    out = tmp_path / "run"
    argv = ["arcmemo_ps_exec", "--split", str(tiny), "--memory", str(tmp_path / "ps.json"), "--attempts", "1"]
    assert eval_main([*argv, "--out", str(out), "--no-progress"]) == 0
    assert [outputs(call)[-1] for call in scripted.calls] == ["program", "program"]  # the solver's calls alone
    lines = [json.loads(line) for line in (out / "examples.jsonl").read_text().splitlines()]
    assert [line["read"]["selected"] for line in lines] == [["flip rows", "recolour"], ["recolour"]]
    assert lines[0]["read"]["scores"] == {"flip rows": 1.0, "recolour": 0.4167}
    results = json.loads((out / "results.json").read_text())
    block = results["memory_measures"]
    # a_flip: its own concept first and one from another task; b_recolor: its own concept alone
    assert (block["tasks"], block["hit_at_k"], block["precision"], block["selected_mean"]) == (2, 1.0, 0.75, 1.5)
    final = json.loads((out / "memory" / "run0" / "final.json").read_text())["concepts"]
    assert [c["uses"] for c in final] == [1, 2, 0] and [c["programs"] for c in final] == [[FLIP], [RECOLOR], []]
    capsys.readouterr()
    assert eval_main(["show", str(out), "--id", "a_flip", "--width", "200"]) == 0
    shown = capsys.readouterr().out
    assert "concepts selected: flip rows (from a_flip), recolour (from b_recolor)" in shown and "a hit at k = 2" in shown
