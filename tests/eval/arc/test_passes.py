"""Retries as passes over the dataset, memory writes between passes, re-selection on retry (scripted engine).

The puzzles: a flip, solved at once, whose abstraction writes the concept "recolor ones to
twos"; and a recolour, which the scripted solver solves only when that concept is in its
prompt (otherwise it returns the identity). The recolour comes first, so only a later look
at memory can solve it: the mechanism behind the ArcMemo paper's Table 3.
"""

import re

import dspy
import pytest

from memreason.lm import ScriptedEngine
from memreason.programs import ConceptMemory, build_program
from memreason.programs.arcmemo.arc_program import RESELECTED
from memreason.signatures import PSConcept
from tests.helpers.arc_helpers import FLIP, IDENTITY, PS_CONCEPT, RECOLOR, flip_task, puzzle_of, recolor_task, sandbox  # noqa: F401
from tests.helpers.scripted_answers import Script, given

CONCEPT = "recolor ones to twos"


def titles(call) -> list[str]:
    """Every title in a selection call's compressed memory (the scripted selector picks them all)."""
    return re.findall(r"^- (.*?) \[", given(call, "memory"), re.M)


def solver(call) -> dict:
    """FLIP for a flip; RECOLOR for a recolour only with the concept in view; else the identity."""
    if "input (1 rows x 2 columns):\n12" in puzzle_of(call):
        return {"program": FLIP}
    return {"program": RECOLOR if CONCEPT in given(call, "concepts") else IDENTITY}


def script(**more) -> Script:
    return Script(
        program=solver,
        selected=lambda call: {"reasoning": "-", "selected": titles(call)},
        pseudocode={"pseudocode": "p"},
        concepts={"concepts": [{"title": CONCEPT, "kind": "routine"}]},
        **more,
    )


def run(program, tasks, answers: Script):
    engine = ScriptedEngine(answers)
    writes = []

    def on_write(i, records):
        writes.append((program.pass_index, i, [r["task"] for r in records]))

    with dspy.context(lm=engine.lm(), adapter=dspy.ChatAdapter()):
        results = program.solve_all(tasks, on_write=on_write)
    return results, writes, engine


def solved(prediction) -> bool:
    return any(a.final.passed_train for a in prediction.attempts)


def test_a_concept_written_in_one_pass_solves_another_task_in_the_next_and_inline_retries_cannot(sandbox):
    tasks = [recolor_task("b"), flip_task("a")]
    knobs = dict(attempts=1, retries=1, continual_every=1, sandbox=sandbox)

    passes = build_program("arcmemo_ps", retry_mode="passes", **knobs)
    results, writes, engine = run(passes, tasks, script())
    assert [solved(p) for p in results] == [True, True]
    b = results[0].attempts[0]
    assert [s.program for s in b.steps] == [IDENTITY, RECOLOR]  # pass 0 fails, pass 1 solves
    retry = [c for c in engine.calls if "[[ ## previous_program ## ]]" in c.user_text]
    assert len(retry) == 1 and CONCEPT in given(retry[0], "concepts")  # a's concept reached b's prompt
    assert b.steps[1].read["selected"] == [CONCEPT]  # the retry's read is recorded with the step
    assert writes == [(0, 1, []), (0, 2, ["a"]), (1, 1, ["b"])]

    inline = build_program("arcmemo_ps", retry_mode="inline", **knobs)
    results, writes, engine = run(inline, tasks, script())
    assert [solved(p) for p in results] == [False, True]  # b's retry came before a was solved
    assert [s.program for s in results[0].attempts[0].steps] == [IDENTITY, IDENTITY]

    frozen = build_program("arcmemo_ps", retry_mode="passes", attempts=1, retries=1, sandbox=sandbox)
    results, writes, _ = run(frozen, tasks, script())
    assert [solved(p) for p in results] == [False, True] and writes == []  # no write, nothing to learn


def test_retry_passes_visit_only_unfinished_attempts_and_reread_memory_once_per_task(sandbox):
    tasks = [recolor_task("b"), flip_task("a"), recolor_task("c")]
    program = build_program("arcmemo_ps", retry_mode="passes", attempts=2, retries=2, sandbox=sandbox)
    memory = ConceptMemory("ps")
    memory.add([PSConcept(**{**PS_CONCEPT, "title": "flip rows"})], source="seed")
    program.use_memory(memory)
    answers = Script(program=solver, selected={"reasoning": "-", "selected": ["flip rows"]})
    results, _, engine = run(program, tasks, answers)
    programs = answers.calls_to(engine, "program")
    flips = [c for c in programs if "input (1 rows x 2 columns):\n12" in puzzle_of(c)]
    assert len(flips) == 2  # the flip's two attempts, in pass 0 only: it was solved
    assert len(programs) == 2 + 2 * 3 * 2  # b and c: 2 attempts x 3 passes
    assert [len(a.steps) for p in results for a in p.attempts] == [3, 3, 1, 1, 3, 3]
    assert len(answers.calls_to(engine, "selected")) == 3 + 2 + 2  # one read per task and pass, not per attempt
    # pass by pass: every first program before any retry
    kinds = ["retry" if "[[ ## previous_program ## ]]" in c.user_text else "first" for c in programs]
    assert kinds == ["first"] * 6 + ["retry"] * 8


def test_the_trailing_partial_batch_is_written_between_passes_and_each_solution_once(sandbox):
    tasks = [flip_task("a"), recolor_task("b"), flip_task("c")]
    program = build_program("arcmemo_ps", retry_mode="passes", attempts=1, retries=2, continual_every=2, sandbox=sandbox)
    results, writes, _ = run(program, tasks, script())
    assert [solved(p) for p in results] == [True, True, True]
    # pass 0: after a, b (a verified); the trailing c, since a later pass reads it. Pass 1: b solved,
    # written at the end of the pass (pass 2 follows); pass 2 has nothing left to retry.
    assert writes == [(0, 2, ["a"]), (0, 3, ["c"]), (1, 1, ["b"])]
    assert program.memory.entries[0].sources == ["a", "c", "b"]


def test_a_retry_reselects_in_view_of_the_previous_program_and_its_feedback(sandbox):
    memory = ConceptMemory("ps")
    memory.add([PSConcept(**{**PS_CONCEPT, "title": t}) for t in ("flip rows", CONCEPT)], source="seed")
    for mode in ("inline", "passes"):
        program = build_program(
            "arcmemo_ps", retry_mode=mode, reselect=True, reselect_k=1, attempts=1, retries=1, sandbox=sandbox
        )
        program.use_memory(ConceptMemory.from_json(memory.to_json()))
        answers = Script(
            program=solver,
            selected={"reasoning": "-", "selected": ["flip rows"]},
            chosen={"chosen": ["flip rows", CONCEPT, "made up"]},
        )
        results, _, engine = run(program, [recolor_task("b")], answers)
        reselect = answers.calls_to(engine, "chosen")
        assert len(reselect) == 1, mode
        assert given(reselect[0], "previous_program").strip() == IDENTITY.strip()
        assert "got 0 of 2 examples right" in given(reselect[0], "feedback")
        step = results[0].attempts[0].steps[1]
        # the first read's "flip rows" stays; the re-selection adds only what is new, at most reselect_k
        assert step.read["reselected"] and step.read["selected"] == [CONCEPT] and step.read["hallucinated"] == ["made up"]
        retry_concepts = given(answers.calls_to(engine, "program")[1], "concepts")
        assert retry_concepts.index("## flip rows") < retry_concepts.index(RESELECTED) < retry_concepts.index(CONCEPT)
        assert step.program == RECOLOR and solved(results[0])


def test_an_oe_reselection_names_lessons_by_number(sandbox):
    from memreason.signatures import OEConcept

    memory = ConceptMemory("oe")
    memory.add(
        [
            OEConcept(situation="cells are mirrored", suggestion="flip rows"),
            OEConcept(situation="ones stand where twos should", suggestion=CONCEPT),
        ],
        source="seed",
    )
    program = build_program("arcmemo_oe", retry_mode="passes", reselect=True, attempts=1, retries=1, sandbox=sandbox)
    program.use_memory(memory)
    assert program.selector.reselect_with.signature.output_fields["chosen"].annotation == list[int]  # under a grammar: numbers
    answers = Script(
        program=solver,
        speculation={"observations": ["ones"], "speculation": ["recolour"]},
        chosen=lambda call: {"chosen": [2, 1] if "previous_program" in call.user_text else [1]},
    )
    results, _, engine = run(program, [recolor_task("b")], answers)
    step = results[0].attempts[0].steps[1]
    assert step.read["reselected"] and step.read["selected"] == ["2"] and step.read["hallucinated"] == []
    assert step.program == RECOLOR and solved(results[0])


def test_reselect_needs_a_program_that_selects_and_retry_mode_is_checked():
    for name in ("baseline", "cheatsheet", "arcmemo_ps_noselect"):
        with pytest.raises(ValueError, match="cannot re-select"):
            build_program(name, reselect=True)
    with pytest.raises(ValueError, match="retry_mode"):
        build_program("arcmemo_oe", retry_mode="sometimes")
    assert build_program("arcmemo_oe", reselect=True).selector.reselect_with is not None
    assert not hasattr(build_program("arcmemo_oe").selector, "reselect_with")  # default programs keep their predictors


# -- the harness: records per pass, scores by depth, resume at pass boundaries -------------------------

import json  # noqa: E402

from memreason.eval.cli import main as eval_main  # noqa: E402
from memreason.eval.harness.runs import comparable  # noqa: E402
from tests.eval.arc.test_resume import ARGV, Crash, lines, results, snapshots, split, use  # noqa: E402,F401
from tests.eval.arc.test_resume import script as resume_script  # noqa: E402

PASSES = [*ARGV, "--retry-mode", "passes"]


def first_programs(engine):
    return [c for c in engine.calls if "[[ ## puzzle ## ]]" in c.user_text and "previous_program" not in c.user_text]


def crash_on_retry(n: int):
    """The resume tests' script, raising :class:`Crash` at the n-th retry call instead of answering it."""
    answer, retries = resume_script(), []

    def crashing(call):
        if "previous_program" in call.user_text:
            retries.append(call)
            if len(retries) == n:
                raise Crash()
        return answer(call)

    return crashing


def test_a_passes_run_records_each_pass_and_scores_by_depth(tmp_path, split, monkeypatch):
    engine = ScriptedEngine(resume_script())
    use(monkeypatch, engine)
    out = tmp_path / "passes"
    assert eval_main([*PASSES, "--split", str(split), "--out", str(out)]) == 0
    by_pass = [(r["pass"], r["id"]) for r in lines(out)]
    assert sorted(by_pass) == [
        (0, "a_flip"),
        (0, "b_recolor"),
        (0, "c_flip"),
        (0, "d_recolor"),
        (1, "b_recolor"),
        (1, "d_recolor"),
    ]
    assert by_pass.index((1, "b_recolor")) > max(by_pass.index((0, t)) for t in ("a_flip", "b_recolor", "c_flip", "d_recolor"))
    r = results(out)
    assert r["score_by_retries"] == {"0": 0.5, "1": 1.0} and r["official_score"] == 1.0
    assert r["config"]["retry_mode"] == "passes"
    last = {x["id"]: x for x in lines(out)}["b_recolor"]
    assert set(last["usage"]["task"]) == {"arc_solver.solve", "arc_solver.retry"}  # both passes' spending
    assert json.loads((out / "passes" / "run0.json").read_text()) == {"finished": 1}
    assert {"pass-0.json", "pass-1.json", "final.json"} <= set(snapshots(out))


def test_a_crash_in_a_retry_pass_resumes_at_the_pass_boundary(tmp_path, split, monkeypatch):
    whole_engine = ScriptedEngine(resume_script())
    use(monkeypatch, whole_engine)
    whole = tmp_path / "whole"
    assert eval_main([*PASSES, "--split", str(split), "--out", str(whole)]) == 0

    out = tmp_path / "crashed"
    use(monkeypatch, ScriptedEngine(crash_on_retry(1)))  # the first retry of pass 1
    with pytest.raises(Crash):
        eval_main([*PASSES, "--split", str(split), "--out", str(out)])
    assert json.loads((out / "passes" / "run0.json").read_text()) == {"finished": 0}

    engine = ScriptedEngine(resume_script())
    use(monkeypatch, engine)
    assert eval_main([*PASSES, "--split", str(split), "--out", str(out)]) == 0
    assert first_programs(engine) == []  # pass 0 was not solved again
    assert comparable(results(out)) == comparable(results(whole))
    assert snapshots(out) == snapshots(whole)


def test_retry_failed_on_a_finished_passes_run_solves_the_failed_task_again(tmp_path, split, monkeypatch):
    from memreason.datasets.arc import puzzle_text
    from memreason.lm.faults import LMServerError
    from tests.helpers.arc_helpers import four_tasks
    from tests.helpers.scripted_answers import outputs

    whole_engine = ScriptedEngine(resume_script())
    use(monkeypatch, whole_engine)
    whole = tmp_path / "whole"
    assert eval_main([*PASSES, "--split", str(split), "--out", str(whole)]) == 0

    answer, recolor_b = resume_script(), puzzle_text(four_tasks()[1])

    def down_for_b(call):
        if recolor_b in call.user_text and outputs(call)[-1] == "program":
            raise LMServerError("down for this puzzle")
        return answer(call)

    out = tmp_path / "failed"
    argv = [*PASSES, "--split", str(split), "--out", str(out), "--lm-retries", "0"]
    use(monkeypatch, ScriptedEngine(down_for_b))
    assert eval_main(argv) == 0
    assert results(out)["failures"] == {"server_error": 1}
    assert json.loads((out / "passes" / "run0.json").read_text()) == {"finished": 1}

    use(monkeypatch, ScriptedEngine(resume_script()))  # the server is back
    assert eval_main([*argv, "--retry-failed"]) == 0
    assert results(out)["failures"] == {}
    assert results(out)["score_by_retries"] == results(whole)["score_by_retries"]
    assert snapshots(out) == snapshots(whole)


def test_a_retry_pass_done_again_after_a_crash_traces_each_call_once(tmp_path, split, monkeypatch):
    from memreason.eval.harness.traces import TraceStore, example_unit

    out = tmp_path / "crashed"
    use(monkeypatch, ScriptedEngine(crash_on_retry(2)))  # b_recolor's retry is traced; d_recolor's crashes the pass
    with pytest.raises(Crash):
        eval_main([*PASSES, "--split", str(split), "--out", str(out), "--threads", "1"])
    use(monkeypatch, ScriptedEngine(resume_script()))
    assert eval_main([*PASSES, "--split", str(split), "--out", str(out), "--threads", "1"]) == 0
    for task in ("b_recolor", "d_recolor"):
        steps = [c["step"] for c in TraceStore(out).read(example_unit(0, task)) if c["step"].startswith("arc_solver")]
        assert steps == ["arc_solver.solve", "arc_solver.retry"], task
