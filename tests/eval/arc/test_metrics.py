"""oracle@k (ArcMemo Appendix B), the official ARC score and strict scoring, against hand-computed values."""

import itertools
import random

import pytest

from memreason.eval.metrics import official_score, oracle_at_k, strict_at_k, strict_score


def brute_oracle(verify, k):
    """The appendix formula literally: mean over k-subsets C of (fraction of tests some c in C passes)."""
    subsets = list(itertools.combinations(verify, k))
    tests = len(verify[0])
    return sum(sum(any(c[t] for c in C) for t in range(tests)) / tests for C in subsets) / len(subsets)


def test_hand_computed_three_attempts_two_tests():
    # attempt 0 passes test 0; attempt 1 passes nothing; attempt 2 passes both
    verify = [[True, False], [False, False], [True, True]]
    # k=1: per attempt 1/2, 0, 1 -> mean 1/2
    assert oracle_at_k(verify, 1) == pytest.approx(0.5)
    # k=2: {0,1}: 1/2, {0,2}: 1, {1,2}: 1 -> 5/6
    assert oracle_at_k(verify, 2) == pytest.approx(5 / 6)
    assert oracle_at_k(verify, 3) == pytest.approx(1.0)
    assert official_score(verify) == pytest.approx(0.5)  # the first two attempts only
    # strict: only attempt 2 passes every test
    assert strict_at_k(verify, 1) == pytest.approx(1 / 3)
    assert strict_at_k(verify, 2) == pytest.approx(2 / 3)
    assert strict_score(verify) == 0.0


def test_hand_computed_four_attempts_three_tests():
    verify = [
        [True, False, False],
        [False, True, False],
        [False, False, False],
        [True, False, True],
    ]
    # per test, passing attempts p = 2, 1, 1 of n = 4
    # k=1: (2/4 + 1/4 + 1/4) / 3 = 1/3
    assert oracle_at_k(verify, 1) == pytest.approx(1 / 3)
    # k=2: 1 - C(n-p,2)/C(4,2): (1 - 1/6) + (1 - 3/6) + (1 - 3/6) = 11/6, / 3 = 11/18
    assert oracle_at_k(verify, 2) == pytest.approx(11 / 18)
    # k=3: (1 - 0) + (1 - 1/4) + (1 - 1/4) = 5/2, / 3 = 5/6
    assert oracle_at_k(verify, 3) == pytest.approx(5 / 6)
    # official: attempts 0 and 1 get tests 0 and 1 of 3; strict needs one attempt passing all: none
    assert official_score(verify) == pytest.approx(2 / 3)
    assert strict_score(verify) == 0.0 and strict_at_k(verify, 4) == 0.0


def test_official_score_is_oracle_at_2_with_two_attempts_and_ensembles_across_attempts():
    verify = [[True, False], [False, True]]
    assert official_score(verify) == oracle_at_k(verify, 2) == 1.0
    assert strict_score(verify) == 0.0  # no single program passes both
    assert official_score([[True, False]]) == 0.5  # one attempt only


def test_closed_form_equals_the_subset_average():
    rng = random.Random(0)
    for _ in range(200):
        n, tests = rng.randint(1, 6), rng.randint(1, 4)
        verify = [[rng.random() < 0.4 for _ in range(tests)] for _ in range(n)]
        for k in range(1, n + 1):
            assert oracle_at_k(verify, k) == pytest.approx(brute_oracle(verify, k))
            strict = sum(any(all(c) for c in C) for C in itertools.combinations(verify, k)) / len(
                list(itertools.combinations(verify, k))
            )
            assert strict_at_k(verify, k) == pytest.approx(strict)


def test_monotone_in_k():
    verify = [[True, False], [False, False], [False, True], [False, False]]
    values = [oracle_at_k(verify, k) for k in range(1, 5)]
    assert values == sorted(values) and values[-1] == 1.0


@pytest.mark.parametrize("verify, k", [([], 1), ([[True]], 2), ([[True]], 0), ([[True], [True, False]], 1), ([[]], 1)])
def test_invalid_inputs_raise(verify, k):
    with pytest.raises(ValueError):
        oracle_at_k(verify, k)


def test_pooled_oracle_counts_a_run_that_failed_before_any_attempt():
    """attempts=1, runs=2: run 0 solved the task, run 1 failed before its attempt (no verify rows)."""
    from memreason.eval.arc import pooled_oracle_at_k

    per_run = [[[True]], []]
    assert pooled_oracle_at_k(per_run, attempts=1, tests=1, k=1) == pytest.approx(0.5)  # one of two attempts solved it
    assert pooled_oracle_at_k(per_run, attempts=1, tests=1, k=2) == pytest.approx(1.0)  # the only pair holds it
    # two test pairs, two attempts per run: run 1 stopped after one attempt that got test 1 only
    per_run = [[[True, False], [False, False]], [[False, True]]]
    assert pooled_oracle_at_k(per_run, attempts=2, tests=2, k=1) == pytest.approx(
        brute_oracle([[True, False], [False, False], [False, True], [False, False]], 1)
    )


def test_pooled_oracle_in_a_run_summary(tmp_path):
    from memreason.datasets.arc import ArcTask
    from memreason.eval.arc import ArcConfig, summarise
    from memreason.lm import LMChoice

    task = ArcTask.from_json("t", {"train": [{"input": [[1]], "output": [[2]]}], "test": [{"input": [[1]], "output": [[2]]}]})
    solved = {"verify": [[True]], "attempts": [], "error": None, "read": {}, "passed_train": True, "scores": {"by_retries": {}}}
    failed = {
        "verify": [],
        "attempts": [],
        "error": "timeout: gave up",
        "read": {},
        "passed_train": False,
        "failure": {"kind": "timeout", "reason": "gave up"},
    }
    from memreason.eval.arc.scoring import task_scores

    for record in (solved, failed):
        record["scores"] = {**task_scores(record["verify"]), "by_retries": {"0": task_scores(record["verify"])}}
    lm = LMChoice("scripted", None, local=False)
    results = summarise(ArcConfig(program="baseline", attempts=1, runs=2), [task], [[solved], [failed]], [[], []], lm, lm)
    assert results["oracle_at_k_pooled"]["1"] == pytest.approx(0.5)
    assert results["oracle_at_k_pooled"]["2"] == pytest.approx(1.0)
    assert results["oracle_at_k"]["1"] == pytest.approx(0.5)  # run mean: 1.0 and 0.0


@pytest.mark.parametrize(
    "program, stub",
    [
        ("def transform(grid):\n    pass\n", True),
        ("def transform(grid):\n    # Implement the transformation logic here\n    return grid\n", True),
        ('def transform(grid):\n    """Flip it."""\n    ...\n', True),
        ("def transform(g):\n    return None\n", True),
        ("def transform(grid):\n    return [row[::-1] for row in grid]\n", False),
        ("def transform(grid):\n    return grid[::-1]\n", False),
        ("def helper():\n    pass\n", False),
        ("def transform(grid) pass", False),
    ],
)
def test_a_stub_is_a_transform_that_does_nothing(program, stub):
    from memreason.eval.arc.summary import is_stub

    assert is_stub(program) is stub


def test_each_program_is_tallied_once_by_what_stopped_it_first():
    from memreason.eval.arc.summary import ProgramTally

    def check(failure=None, detail=None, correct=False):
        return {"output": None if failure else [[1]], "failure": failure, "detail": detail, "correct": correct}

    undefined = "NameError: name 'slide_cells' is not defined (line 3: return slide_cells(grid))"
    tally = ProgramTally()
    tally.add("def transform(grid):\n    return slide_cells(grid)", [check("EXCEPTION", undefined)] * 2)
    tally.add("def transform(grid):\n    return slide_cells(grid, 1)", [check(), check("EXCEPTION", undefined)])
    tally.add("def transform(grid):\n    return grid[9]", [check("EXCEPTION", "IndexError: list index out of range")])
    tally.add("def transform(grid)", [check("SYNTAX_ERROR", "expected ':'")] * 2)
    tally.add("x = 1", [check("NO_TRANSFORM")])
    tally.add("def transform(grid):\n    while True: pass", [check("EXCEPTION", "ZeroDivisionError"), check("TIMEOUT")])
    tally.add("def transform(grid):\n    return 3", [check("BAD_OUTPUT")])
    tally.add("def transform(grid):\n    return grid", [check(), check()])  # a stub that ran
    tally.add("def transform(grid):\n    return [[1]]", [check(correct=True), check()])
    tally.add("def transform(grid):\n    return [[1]]", [check(correct=True), check(correct=True)])
    assert tally.results() == {
        "written": 10,
        "stubs": 1,
        "did_not_parse": 1,
        "no_transform": 1,
        "timed_out": 0,  # the looping one raised first: counted there
        "bad_output": 1,
        "ran": 3,
        "some_right": 2,
        "all_right": 1,
        "raised": {"NameError": 2, "IndexError": 1, "ZeroDivisionError": 1},
        "undefined_names": [["slide_cells", 2]],
    }
