"""The ARC solver: attempts and retries, execution feedback in retry prompts, records, sampling."""

import dspy
import pytest

from memreason.lm import ScriptedEngine
from memreason.programs import ArcSolver
from memreason.programs.arcmemo.arc_solver import clean_program
from tests.helpers.arc_helpers import CRASH, FLIP, IDENTITY, flip_task, recolor_task, sandbox  # noqa: F401
from tests.helpers.scripted_answers import given, outputs


def run(engine, task, sandbox, **knobs):
    solver = ArcSolver(sandbox=sandbox, with_concepts=False, **knobs)
    with dspy.context(lm=engine.lm(), adapter=dspy.ChatAdapter()):
        return solver(task=task).attempts


def test_attempt_and_retry_counts_are_exact_when_nothing_passes(sandbox):
    engine = ScriptedEngine(lambda call: {"program": IDENTITY})
    attempts = run(engine, flip_task(), sandbox, attempts=3, retries=2)
    assert len(attempts) == 3 and all(len(a.steps) == 3 for a in attempts)
    assert [s.retry for s in attempts[0].steps] == [0, 1, 2]
    assert len(engine.calls) == 3 * 3
    retries = [c for c in engine.calls if "previous_program" in c.user_text]
    assert len(retries) == 3 * 2


def test_an_attempt_stops_retrying_once_it_passes_every_train_pair(sandbox):
    def respond(call):  # wrong first, right on the first retry
        return {"program": FLIP if "previous_program" in call.user_text else IDENTITY}

    engine = ScriptedEngine(respond)
    attempts = run(engine, flip_task(), sandbox, attempts=2, retries=3)
    assert [len(a.steps) for a in attempts] == [2, 2] and len(engine.calls) == 4
    final = attempts[0].final
    assert final.passed_train and final.test_outputs == [[[6, 5]], [[9, 8, 7]]]
    assert attempts[0].after(0).program == IDENTITY and attempts[0].after(5).program == FLIP


def test_a_retry_prompt_carries_the_wrong_examples_with_expected_and_produced_grids(sandbox):
    engine = ScriptedEngine(lambda call: {"program": IDENTITY})
    run(engine, flip_task(), sandbox, attempts=1, retries=1)
    retry = engine.calls[1]
    assert given(retry, "previous_program").strip() == IDENTITY.strip()
    feedback = given(retry, "feedback")
    assert "got 0 of 2 examples right" in feedback
    assert "Example 1: wrong output.\nexpected (1x2):\n21\nproduced (1x2):\n12" in feedback
    assert "Example 2: wrong output.\nexpected (1x3):\n003\nproduced (1x3):\n300" in feedback
    assert "65" not in retry.user_text  # a test output never reaches a prompt


def test_a_retry_prompt_carries_the_error(sandbox):
    engine = ScriptedEngine(lambda call: {"program": CRASH})
    attempts = run(engine, recolor_task(), sandbox, attempts=1, retries=1)
    feedback = given(engine.calls[1], "feedback")
    assert "Example 1: it failed with EXCEPTION: ZeroDivisionError: division by zero" in feedback
    assert "Test 1: it failed with EXCEPTION" in feedback
    step = attempts[0].steps[0]
    assert step.train[0].failure == "EXCEPTION" and step.test_outputs == [None]


def test_a_syntax_error_is_reported_once(sandbox):
    engine = ScriptedEngine(lambda call: {"program": "def transform(grid)\n    return grid"})
    run(engine, flip_task(), sandbox, attempts=1, retries=1)
    feedback = given(engine.calls[1], "feedback")
    assert feedback.startswith("The program could not run: SYNTAX_ERROR") and feedback.count("SYNTAX_ERROR") == 1


def test_every_step_is_recorded_with_program_outputs_failures_and_tokens(sandbox):
    engine = ScriptedEngine(lambda call: {"program": IDENTITY})
    step = run(engine, flip_task(), sandbox, attempts=1, retries=0)[0].steps[0]
    record = step.to_json()
    assert record["program"] == IDENTITY and record["retry"] == 0 and record["passed_train"] is False
    assert [c["output"] for c in record["train"]] == [[[1, 2]], [[3, 0, 0]]]
    assert [c["correct"] for c in record["train"]] == [False, False]
    assert [c["correct"] for c in record["test"]] == [None, None]  # the solver never sees test labels
    assert record["tokens"]["calls"] == 1 and record["tokens"]["prompt"] > 0 and record["error"] is None


def test_an_unreadable_answer_is_a_failed_step_and_the_attempt_goes_on(sandbox):
    answers = iter(["no fields at all", "still nothing", {"program": FLIP}])
    engine = ScriptedEngine(lambda call: next(answers))
    attempts = run(engine, flip_task(), sandbox, attempts=1, retries=1, answer="fields")
    first, second = attempts[0].steps
    assert first.error and first.program == "" and first.train[0].failure == "NO_PROGRAM"
    assert "could not be read" in first.feedback
    assert second.passed_train


def test_a_code_answer_without_code_is_run_and_its_error_goes_to_the_retry(sandbox):
    answers = iter(["I would reverse each row.", f"```python\n{FLIP}```"])
    engine = ScriptedEngine(lambda call: next(answers))
    attempts = run(engine, flip_task(), sandbox, attempts=1, retries=1)
    first, second = attempts[0].steps
    assert first.error is None and first.train[0].failure == "SYNTAX_ERROR"
    assert "could not run: SYNTAX_ERROR" in first.feedback and "I would reverse each row." in engine.calls[1].user_text
    assert second.program == FLIP and second.passed_train


def test_attempts_are_sampled_with_distinct_rollouts_and_seeds(sandbox, predict_configs):
    seen = predict_configs
    engine = ScriptedEngine(lambda call: {"program": IDENTITY})
    run(engine, flip_task(), sandbox, attempts=2, retries=1, temperature=0.9, seed=3)
    rollouts = [c["rollout_id"] for c in seen]
    assert len(set(rollouts)) == 4 and all(c["temperature"] == 0.9 and c["seed"] == c["rollout_id"] for c in seen)


def test_memory_comes_before_the_puzzle_and_is_left_out_without_memory(sandbox):
    engine = ScriptedEngine(lambda call: {"program": FLIP})
    solver = ArcSolver(sandbox=sandbox, attempts=1)
    with dspy.context(lm=engine.lm(), adapter=dspy.ChatAdapter()):
        solver(task=flip_task(), concepts="## flip rows")
    text = engine.calls[0].user_text
    assert text.index("[[ ## concepts ## ]]") < text.index("[[ ## puzzle ## ]]")
    bare = ScriptedEngine(lambda call: {"program": FLIP})
    run(bare, flip_task(), sandbox, attempts=1)
    assert "concepts" not in outputs(bare.calls[0]) and "[[ ## concepts ## ]]" not in bare.calls[0].user_text


def test_markdown_fences_are_removed():
    assert clean_program("Here:\n```python\ndef transform(g):\n    return g\n```\nDone") == "def transform(g):\n    return g\n"
    assert clean_program("```\nx = 1\n```\n```py\ndef transform(g):\n    return g\n```") == "def transform(g):\n    return g\n"
    assert clean_program(FLIP) == FLIP


def test_knobs_are_checked():
    with pytest.raises(ValueError):
        ArcSolver(attempts=0)
    with pytest.raises(ValueError):
        ArcSolver(retries=-1)


def test_parallel_attempts_run_in_their_own_threads_and_record_the_same_attempts(sandbox):
    """With ``parallel``, a task's attempts reach the LM from threads of their own; the record does not change."""
    import threading

    threads = set()

    def respond(call):  # wrong first, right on the retry
        threads.add(threading.get_ident())
        return {"program": FLIP if "previous_program" in call.user_text else IDENTITY}

    serial = run(ScriptedEngine(respond), flip_task(), sandbox, attempts=3, retries=1)
    assert len(threads) == 1
    threads.clear()
    parallel = run(ScriptedEngine(respond), flip_task(), sandbox, attempts=3, retries=1, parallel=True)
    assert len(threads) >= 2 and threading.get_ident() not in threads
    assert [a.index for a in parallel] == [0, 1, 2]
    assert [[(s.retry, s.program, s.passed_train) for s in a.steps] for a in parallel] == [
        [(s.retry, s.program, s.passed_train) for s in a.steps] for a in serial
    ]


def test_one_prefill_draws_the_first_programs_from_one_call_with_n(sandbox, predict_configs):
    """``one_prefill``: one call with n = attempts gives every attempt its first program (the scripted
    engine answers n times); retries stay one call each; the tokens of the shared call are shared out."""
    seen = predict_configs
    answers = iter([IDENTITY, FLIP, IDENTITY])  # three first programs, one per attempt

    def respond(call):
        return {"program": FLIP if "previous_program" in call.user_text else next(answers)}

    attempts = run(ScriptedEngine(respond), flip_task(), sandbox, attempts=3, retries=1, one_prefill=True)
    assert [c.get("n") for c in seen] == [3, None, None]  # one shared call, then the two unsolved attempts retry
    assert [a.steps[0].program.strip() for a in attempts] == [IDENTITY.strip(), FLIP.strip(), IDENTITY.strip()]
    assert [len(a.steps) for a in attempts] == [2, 1, 2]
    firsts = [a.steps[0].tokens for a in attempts]
    assert sum(t["calls"] for t in firsts) == 1 and len({t["prompt"] for t in firsts}) <= 2
    assert all(t["completion"] > 0 for t in firsts)


def test_one_prefill_marks_attempts_the_call_left_without_a_program(sandbox):
    engine = ScriptedEngine(lambda call: "no fields here at all")  # unreadable in the fields format
    attempts = run(engine, flip_task(), sandbox, attempts=2, one_prefill=True, answer="fields")
    assert all(a.steps[0].error and not a.steps[0].program.strip() for a in attempts)
