"""The checked programs on inductive tasks: hypotheses checked in code, refuted by named observations, applied in code."""

from __future__ import annotations

import dspy
import pytest

from memreason.datasets.inductive import ACRE
from memreason.eval.inductive.run import problem_episodes
from memreason.eval.tasks import get_task
from memreason.lm import ScriptedEngine
from memreason.programs import build_program
from memreason.programs.hdr.blicket_check import BlicketHypothesis, Experiment, answer, check, entailed
from memreason.programs.hdr.checked_blickets import experiments_of
from memreason.programs.shared.list_runner import ListRunner

EXPERIMENTS = [
    Experiment(1, ("red cube",), "on"),
    Experiment(2, ("blue ball",), "off"),
    Experiment(3, ("red cube", "blue ball"), "on"),
    Experiment(4, ("green cone", "gray cone"), "on"),
]


def test_a_wrong_blicket_hypothesis_is_refuted_by_a_named_experiment():
    wrong = BlicketHypothesis.of(blickets=["blue ball"], non_blickets=["red cube"], rule="any")
    result = check(wrong, EXPERIMENTS)
    assert not result.accepted
    numbers = [n for n, _ in result.refutations]
    assert 1 in numbers and 2 in numbers
    assert any(
        "experiment 2 (blue ball -> off): the light was off, the hypothesis says on" in why for _, why in result.refutations
    )


def test_the_hypothesis_the_experiments_settle_passes_and_answers_three_ways():
    right = entailed(EXPERIMENTS)
    assert check(right, EXPERIMENTS).accepted and right.blickets == {"red cube"}
    assert answer(right, EXPERIMENTS, ("red cube", "gray cone")) == "on"
    assert answer(right, EXPERIMENTS, ("blue ball",)) == "off"
    assert answer(right, EXPERIMENTS, ("green cone",)) == "undetermined"
    assert answer(right, EXPERIMENTS, ("green cone", "gray cone")) == "on"  # one of them lit experiment 4
    claims_too_much = BlicketHypothesis.of(["red cube", "green cone"], ["blue ball"], "any")
    assert any(n is None and "green cone" in why for n, why in check(claims_too_much, EXPERIMENTS).refutations)


def test_on_acres_problems_the_entailed_hypothesis_passes_and_gives_reasoning_gyms_answers():
    for problem in ACRE().problems(seed=0, limit=60):
        experiments = experiments_of(problem_episodes(problem))
        hypothesis = entailed(experiments)
        assert check(hypothesis, experiments).accepted
        assert answer(hypothesis, experiments, problem.queries[0].input) == problem.queries[0].answer


def _proposals(*hypotheses):
    """A responder: each proposal call gets the next hypotheses; the reasoner answers ``off``."""
    left = list(hypotheses)

    def respond(call):
        if "hypotheses" in call.user_text.split("Respond with")[-1] or "`hypotheses`" in call.system.split("output fields")[-1]:
            return {"hypotheses": [left.pop(0)]}
        return {"reasoning": "from memory", "answer": "off"}

    return respond


def test_checked_blickets_feeds_counterexamples_back_and_keeps_the_first_that_passes():
    problem = ACRE().problems(seed=0, limit=1)[0]
    episodes = problem_episodes(problem)
    right = entailed(experiments_of(episodes)).as_dict()
    wrong = {"blickets": ["brown rubber cube"], "rule": "any"}
    engine = ScriptedEngine(_proposals(wrong, right))
    program = build_program("hdr_checked", task=get_task("acre"), N=3)
    with dspy.context(lm=engine.lm()):
        record = program.memorize(episodes)
        out = program(objects=list(problem.queries[0].input))
    assert [r["verified"] for r in record["rounds"]] == [False, True] and record["stopped"] == "verified"
    assert "experiment 1 (brown rubber cube -> off)" in engine.calls[1].user_text  # the refutation went back
    assert out.answer == problem.queries[0].answer and out.source == "hypothesis"
    assert len(engine.calls) == 2  # no reasoner call: the kept hypothesis answered in code


def test_checked_blickets_falls_back_to_the_reasoner_and_says_so():
    problem = ACRE().problems(seed=0, limit=1)[0]
    wrong = {"blickets": ["brown rubber cube"], "rule": "any"}
    engine = ScriptedEngine(_proposals(wrong))
    program = build_program("hdr_checked", task=get_task("acre"), N=1)
    with dspy.context(lm=engine.lm()):
        record = program.memorize(problem_episodes(problem))
        out = program(objects=["brown rubber cube"])
    assert record["kept"] is None and record["stopped"] == "max_rounds"
    assert out.source == "reasoner" and out.answer == "off" and "no hypothesis passed the check" in out.note


def test_the_proposer_is_shown_the_objects_and_the_experiments_without_numbers_to_mistake_for_objects():
    problem = ACRE().problems(seed=0, limit=1)[0]
    engine = ScriptedEngine(_proposals({"blickets": ["gray rubber cube"], "rule": "any"}))
    with dspy.context(lm=engine.lm()):
        build_program("hdr_checked", task=get_task("acre"), N=1).memorize(problem_episodes(problem))
    prompt = engine.calls[0].user_text
    objects = prompt.split("[[ ## objects ## ]]")[1].split("[[ ##")[0]
    assert all(f'"{o}"' in objects for e in problem.episodes for o in e.input)
    assert "experiment 1" not in prompt.split("[[ ## refuted ## ]]")[0]


def test_the_non_blickets_follow_from_the_rule_and_the_unlit_experiments():
    from memreason.programs.hdr.checked_blickets import completed

    assert completed(("red cube",), "any", EXPERIMENTS).non_blickets == {"blue ball"}
    assert completed(("red cube",), "all", EXPERIMENTS).non_blickets == frozenset()


def test_a_refuted_hypothesis_is_narrowed_by_its_counterexamples_and_recorded_as_narrowed():
    from memreason.programs.hdr.checked_blickets import completed, narrow

    too_many = completed(("red cube", "blue ball", "green cone"), "any", EXPERIMENTS)
    assert not check(too_many, EXPERIMENTS).accepted
    narrowed, dropped = narrow(too_many, EXPERIMENTS)
    assert dropped == ["blue ball", "green cone"]  # unlit in experiment 2; shown by no lit experiment
    assert narrowed.blickets == {"red cube"} and check(narrowed, EXPERIMENTS).accepted
    # narrowing only drops the model's claims: a blicket it did not name is never added
    assert narrow(completed((), "any", EXPERIMENTS), EXPERIMENTS) is None
    assert narrow(completed(("blue ball",), "all", EXPERIMENTS), EXPERIMENTS) is None

    problem = ACRE().problems(seed=0, limit=1)[0]
    episodes = problem_episodes(problem)
    lit = sorted({o for e in problem.episodes if e.output == "on" for o in e.input})
    engine = ScriptedEngine(_proposals({"blickets": lit, "rule": "any"}))
    program = build_program("hdr_checked", task=get_task("acre"), N=3)
    with dspy.context(lm=engine.lm()):
        record = program.memorize(episodes)
        out = program(objects=list(problem.queries[0].input))
    checks = record["rounds"][0]["checked"]
    assert [c["accepted"] for c in checks] == [False, True] and checks[0]["narrowed"] is None
    assert record["narrowed"] == checks[1]["narrowed"] and "brown rubber cube" in record["narrowed"]
    assert record["kept"]["blickets"] == sorted(entailed(experiments_of(episodes)).blickets)
    assert out.answer == problem.queries[0].answer and out.source == "hypothesis"


def test_the_rounds_stop_when_nothing_new_is_proposed():
    problem = ACRE().problems(seed=0, limit=1)[0]
    wrong = {"blickets": ["gray rubber cube"], "rule": "all"}
    engine = ScriptedEngine(_proposals(wrong, wrong, wrong))
    program = build_program("hdr_checked", task=get_task("acre"), N=3)
    with dspy.context(lm=engine.lm()):
        record = program.memorize(problem_episodes(problem))
    assert record["stopped"] == "nothing_new" and [len(r["checked"]) for r in record["rounds"]] == [1, 0]
    assert len(engine.calls) == 2 and record["narrowed"] is None


EPISODES = [{"observation": "[1, 2]", "label": "[2, 3]"}, {"observation": "[5]", "label": "[6]"}]


def _functions(*sources):
    left = list(sources)

    def respond(call):
        if "`function`" in call.system.split("output fields")[-1]:
            return {"function": left.pop(0)}
        return {"reasoning": "from memory", "answer": [0]}

    return respond


@pytest.fixture(scope="module")
def runner():
    from memreason.sandbox import Sandbox

    with Sandbox(workers=1) as sandbox:
        yield ListRunner(sandbox, wall_seconds=1.0)


def _checked(runner, *sources, N, query=None):
    """The List Functions checked program memorizing EPISODES from the scripted ``sources``: its record, its answer
    to ``query`` (None: not asked) and the engine."""
    engine = ScriptedEngine(_functions(*sources))
    program = build_program("hdr_checked", task=get_task("list_functions"), N=N, runner=runner)
    with dspy.context(lm=engine.lm()):
        record = program.memorize(EPISODES)
        out = program(input_list=query) if query is not None else None
    return record, out, engine


def test_a_function_that_loops_or_raises_is_contained_and_reported(runner):
    loops = "def f(xs):\n    while True:\n        pass\n"
    raises = "def f(xs):\n    return xs[10]\n"
    record, out, engine = _checked(runner, loops, raises, N=2, query=[7])
    first, second = (r["checked"][0] for r in record["rounds"])
    assert "TIMEOUT" in first["why"][0] and "expected [2, 3]" in first["why"][0]
    assert "EXCEPTION" in second["why"][0] and "IndexError" in second["why"][0]
    assert "f([1, 2]) failed (TIMEOUT" in engine.calls[1].user_text  # the failing input went back
    assert record["kept"] is None and out.source == "reasoner" and out.answer == [0]


def test_the_checked_list_function_applies_the_kept_function_in_the_sandbox(runner):
    wrong = "def f(xs):\n    return xs\n"
    right = "```python\ndef f(xs):\n    return [x + 1 for x in xs]\n```"
    engine = ScriptedEngine(_functions(wrong, right))
    program = build_program("hdr_checked", task=get_task("list_functions"), N=3, runner=runner)
    with dspy.context(lm=engine.lm()):
        record = program.memorize(EPISODES)
        out = program(input_list=[7, -1])
    assert record["rounds"][0]["checked"][0]["why"] == ["f([1, 2]) gave [1, 2]; expected [2, 3]", "f([5]) gave [5]; expected [6]"]
    assert record["kept"] == "def f(xs):\n    return [x + 1 for x in xs]\n"
    assert out.answer == [8, 0] and out.source == "hypothesis" and len(engine.calls) == 2
    again = build_program("hdr_checked", task=get_task("list_functions"), runner=runner)
    again.restore(EPISODES, record)  # a resumed run answers from the saved memory, no LM call
    assert again(input_list=[1]).answer == [2]


def test_samples_draw_several_functions_from_one_request_and_check_each(runner, predict_configs):
    seen = predict_configs
    identity = "def f(xs):\n    return xs\n"
    right = "def f(xs):\n    return [x + 1 for x in xs]\n"
    engine = ScriptedEngine(_functions(identity, identity, right))  # one request, answered three times
    program = build_program("hdr_checked", task=get_task("list_functions"), N=3, samples=3, sample_temperature=0.7, runner=runner)
    with dspy.context(lm=engine.lm()):
        record = program.memorize(EPISODES)
    assert [(c["n"], c["temperature"]) for c in seen] == [(3, 0.7)]
    checks = record["rounds"][0]["checked"]
    assert [c["accepted"] for c in checks] == [False, True]  # the repeat of the identity is not run again
    assert record["kept"] == right and record["stopped"] == "verified"
    with pytest.raises(ValueError, match="samples"):
        build_program("hdr_checked", task=get_task("list_functions"), samples=0, runner=runner)
    with pytest.raises(ValueError, match="sample_temperature"):
        build_program("hdr_checked", task=get_task("acre"), samples=2, sample_temperature=float("nan"))


def test_sampled_rounds_use_the_lms_own_temperature_unless_given_one_and_say_so_once(runner, predict_configs, caplog):
    identity = "def f(xs):\n    return xs\n"
    right = "def f(xs):\n    return [x + 1 for x in xs]\n"
    for temperature, said in (
        (None, "at the LM's temperature 0 are nearly one"),
        (0.9, "the program's temperature 0.9, not the LM's 0"),
    ):
        predict_configs.clear()
        caplog.clear()
        engine = ScriptedEngine(_functions(identity, identity, identity, identity, right, right))
        program = build_program(
            "hdr_checked", task=get_task("list_functions"), N=3, samples=2, sample_temperature=temperature, runner=runner
        )
        with caplog.at_level("INFO", logger="memreason.programs"), dspy.context(lm=engine.lm(temperature=0.0)):
            program.memorize(EPISODES)
        assert len(predict_configs) >= 2 and all(c.get("temperature") == temperature for c in predict_configs)
        told = [r.getMessage() for r in caplog.records if r.name.endswith("checked_program")]
        assert len(told) == 1 and said in told[0]  # once, for every round


def test_a_lambda_or_a_function_of_another_name_is_taken_as_f(runner):
    named = "def plus_one(xs):\n    return [x + 1 for x in xs]\n"
    record, out, _ = _checked(runner, "lambda xs: xs", named, N=2, query=[7])
    first, second = (r["checked"][0] for r in record["rounds"])
    assert first["statement"] == "f = lambda xs: xs\n" and first["why"][0] == "f([1, 2]) gave [1, 2]; expected [2, 3]"
    assert second["accepted"] and record["kept"] == named + "f = plus_one\n"
    assert out.answer == [8] and out.source == "hypothesis"


def test_a_refuted_function_written_again_differently_is_a_repeat_and_not_run(runner):
    identity = "def f(xs): return xs\n"
    again = "def f(xs):\n    # the same function, laid out anew\n    return xs\n"
    record, _, engine = _checked(runner, identity, again, N=3)
    assert [len(r["checked"]) for r in record["rounds"]] == [1, 0]  # the repeat is dropped before any check
    assert record["stopped"] == "nothing_new" and len(engine.calls) == 2
