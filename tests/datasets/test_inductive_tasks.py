"""The inductive tasks: what reasoning_gym gives, parsed right, seeded, scored by its scorer; and a toy task."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import reasoning_gym

from memreason.datasets.inductive import ACRE, Example, ListFunctions, Problem, Query, TaskError, parse_question
from memreason.datasets.inductive.acre import true_blickets


def test_acre_episodes_and_query_are_reasoning_gyms_experiments():
    problem = ACRE().problems(seed=0, limit=2)[0]
    dataset = reasoning_gym.create_dataset("acre", seed=0, size=200)
    structured = dataset.questions[0]
    assert [e.input for e in problem.episodes] == [tuple(" ".join(o) for o in e["input"]) for e in structured["examples"]]
    assert [e.label for e in problem.episodes] == [e["output"] for e in structured["examples"]]
    assert problem.episodes[0].text == "brown rubber cube" and problem.episodes[0].label == "off"
    query = problem.queries[0]
    assert query.input == ("brown rubber cube",) and query.answer == dataset[0]["answer"] == "off"
    for episode in problem.episodes:  # the prompt reasoning_gym writes shows the same experiments
        assert f"{episode.text} → {episode.label}" in dataset[0]["question"]


def test_the_true_blickets_are_what_the_experiments_settle():
    truth = true_blickets(
        [
            (("red cube",), "on"),  # alone: a blicket
            (("blue ball",), "off"),
            (("blue ball", "green cone"), "on"),  # the only one left: a blicket
            (("gray cone", "pink ring"), "on"),  # one of the two, no known blicket among them
            (("gray cone", "pink ring", "tan box"), "on"),  # a larger set of the same kind is not kept
            (("red cube", "tan box"), "on"),  # holds a blicket: says nothing of the tan box
        ]
    )
    assert truth.blickets == ("green cone", "red cube") and truth.non_blickets == ("blue ball",)
    assert truth.undetermined == ("gray cone", "pink ring", "tan box") and truth.one_of == (("gray cone", "pink ring"),)
    assert truth.statements()[1:] == [
        "Blickets: green cone, red cube.",
        "Not blickets: blue ball.",
        "Not known whether they are blickets: gray cone, pink ring, tan box.",
        "At least one of gray cone, pink ring is a blicket.",
    ]
    with pytest.raises(ValueError, match="lit experiment holds only objects"):
        true_blickets([(("red cube",), "on"), (("blue ball", "red cube"), "off")])


def _light(oracle: dict, objects: tuple[str, ...]) -> str:
    """ACRE's label of ``objects`` from a problem's true rule: on with a blicket or a whole one-of set, off with
    non-blickets only, else undetermined."""
    present = set(objects)
    if present & set(oracle["blickets"]) or any(set(group) <= present for group in oracle["one_of"]):
        return "on"
    return "off" if present <= set(oracle["non_blickets"]) else "undetermined"


@pytest.mark.parametrize("seed", [0, 1])
def test_acres_oracle_gives_reasoning_gyms_answer_to_every_query(seed):
    problems = ACRE().problems(seed=seed)
    assert len(problems) == 200
    for problem in problems:
        assert _light(problem.oracle, problem.queries[0].input) == problem.queries[0].answer, problem.id
        assert problem.oracle["hypotheses"] == true_blickets([(e.input, e.output) for e in problem.episodes]).statements()
    answers = {p.queries[0].answer for p in problems}
    assert answers == {"on", "off", "undetermined"}  # every branch of the rule is exercised


def test_list_functions_gives_no_oracle():
    assert ListFunctions().problems(seed=0, limit=1)[0].oracle is None


def test_acre_scorer_and_answer_types():
    task = ACRE()
    query = task.problems(seed=0, limit=1)[0].queries[0]
    assert task.answer_type == ("on", "off", "undetermined")
    assert task.score(query, task.answer_text(" OFF ")) == 1.0 and task.score(query, "on") == 0.0


def test_list_functions_pairs_and_query_are_parsed_from_the_question():
    task = ListFunctions()
    problem = task.problems(seed=0, limit=2)[1]
    entry = reasoning_gym.create_dataset("list_functions", seed=0, size=200)[1]
    pairs, query = parse_question(entry["question"])
    assert [(e.input, e.output) for e in problem.episodes] == pairs and len(pairs) >= 1
    assert problem.queries[0].input == query and problem.queries[0].answer == entry["answer"]
    for i, (xs, ys) in enumerate(pairs, start=1):
        assert f"Input {i}: {xs}\nOutput {i}: {ys}" in entry["question"]
    right = [int(v) for v in entry["answer"].strip("[]").split(",") if v.strip()]
    assert task.score(problem.queries[0], task.answer_text(right)) == 1.0
    assert task.score(problem.queries[0], task.answer_text([*right, 1])) < 1.0


def test_every_list_functions_question_of_two_seeds_parses():
    task = ListFunctions()
    for seed in (0, 1):
        assert all(p.episodes and p.queries for p in task.problems(seed=seed))


def test_problems_are_seeded_and_the_limit_takes_a_prefix():
    for task in (ACRE(), ListFunctions()):
        assert task.problems(seed=3, limit=5) == task.problems(seed=3, limit=5) == task.problems(seed=3)[:5]
        assert task.problems(seed=3, limit=5) != task.problems(seed=4, limit=5)
        with pytest.raises(TaskError, match="at least 1"):
            task.problems(seed=0, limit=0)


@dataclass
class Parity:
    """A toy task on the interface: a number's parity, learned from three examples."""

    name: str = "parity"
    answer_type: tuple[str, ...] = ("even", "odd")

    def problems(self, seed: int = 0, limit: int | None = None) -> list[Problem]:
        made = []
        for i in range(limit or 3):
            shown = [seed + i + k for k in range(3)]
            episodes = tuple(Example(n, ("even", "odd")[n % 2], str(n), ("even", "odd")[n % 2]) for n in shown)
            asked = seed + i + 7
            made.append(Problem(str(i), episodes, (Query(f"{i}-0", asked, str(asked), ("even", "odd")[asked % 2]),)))
        return made

    def answer_text(self, answer) -> str:
        return str(answer)

    def score(self, query: Query, answer: str) -> float:
        return float(answer == query.answer)


def test_a_toy_task_uses_the_interface():
    task = Parity()
    problems = task.problems(seed=1, limit=2)
    assert [e.label for e in problems[0].episodes] == ["odd", "even", "odd"]
    assert task.score(problems[0].queries[0], task.answer_text("even")) == 1.0
