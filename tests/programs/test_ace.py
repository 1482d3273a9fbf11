"""``ace``: the playbook's four operations applied in code, near-duplicates, the budget, the guard, the ids the
generator cites reaching the reflector, the tags counted, snapshots."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import dspy
import pytest

from memreason.lm import ScriptedEngine
from memreason.programs import build_program
from memreason.programs.stream import Ace, Lesson, StreamSolver
from memreason.programs.stream.ace import DUPLICATE_SIMILARITY, SECTIONS, cited_ids
from memreason.programs.stream.entries import similarity
from tests.helpers.scripted_answers import given, outputs

PROBLEM = "Make 24 using 3, 4, 6, 8. You can only use each number once."
RULE = "In a 24 puzzle, use each of the four numbers exactly once and no other number."


class Script:
    """The generator cites ``cite`` (then, on a retry, ``retry_cite``); the reflector tags each bullet it is shown
    as ``tags`` says (neutral otherwise), plus ``extra_tags``; the curator emits ``operations``, the next list of
    them at each write."""

    def __init__(self):
        self.operations: list[list[dict]] = []
        self.tags: dict[str, str] = {}
        self.extra_tags: list[dict] = []
        self.cite: list[str] = []
        self.retry_cite: list[str] = []

    def __call__(self, call):
        wanted = outputs(call)
        if wanted[-1] == "operations":
            return {"operations": self.operations.pop(0) if self.operations else []}
        if wanted[-1] == "key_insight":
            used = re.findall(r"\[(e\d+)\]", str(given(call, "used_bullets")))
            tags = [{"id": i, "tag": self.tags.get(i, "neutral")} for i in used] + self.extra_tags
            return {"diagnosis": "as planned", "bullet_tags": tags, "key_insight": "pair to 3 * 8"}
        if "bullet_ids" in wanted and "[[ ## feedback ## ]]" in call.user_text:
            return {"reasoning": "fixed it", "bullet_ids": self.retry_cite, "answer": "3 * 8 * (6 - 4) / 2"}
        if "bullet_ids" in wanted:
            return {"reasoning": "used the playbook", "bullet_ids": self.cite, "answer": "1 + 1"}
        raise AssertionError(f"no scripted answer for {wanted}")


@pytest.fixture
def script():
    return Script()


def _write(program: Ace, script: Script, item: str, *operations: dict, reasoning: str = "") -> dict:
    """One write from item ``item`` whose curator emits ``operations``; the write's record."""
    script.operations = [list(operations)]
    with dspy.context(lm=ScriptedEngine(script).lm()):
        return program.learn(Lesson(item, PROBLEM, "3 * 8", True, "", "reference", reasoning))


def _add(content: str, section: str = "strategies") -> dict:
    return {"op": "ADD", "section": section, "content": content}


def _bullets(program: Ace) -> dict[str, tuple[str, str, list[str]]]:
    """{id: (section, text, sources)} of the playbook."""
    return {e.id: (e.extra["section"], e.text, e.sources) for e in program.playbook.entries}


def _seeded(script: Script) -> Ace:
    """A playbook of three bullets from items a, b, c: e1 and e3 strategies, e2 a pitfall."""
    program = Ace()
    _write(program, script, "a", _add("Pair the two largest numbers first."))
    _write(program, script, "b", _add("Never reuse a number.", "pitfalls"))
    _write(program, script, "c", _add("Try division last."))
    return program


# -- the four operations, applied in code -------------------------------------------------------------------


def test_add_puts_a_bullet_with_a_new_id_in_its_section(script):
    program = _seeded(script)
    record = _write(program, script, "d", _add("24 = 3 * 8 = 4 * 6 = 2 * 12.", "formulas and snippets"))
    assert record["operations"] == [
        {"op": "ADD", "ids": [], "unknown": [], "result": "added", "id": "e4", "section": "formulas and snippets"}
    ]
    assert _bullets(program)["e4"] == ("formulas and snippets", "24 = 3 * 8 = 4 * 6 = 2 * 12.", ["d"])
    assert program.playbook.entries[-1].extra["tags"] == {"helpful": 0, "harmful": 0, "neutral": 0}
    text = program.read(PROBLEM, "z").text
    assert text.split("\n\n") == [  # by section, in the sections' order, each bullet with its id
        "## strategies\n[e1] Pair the two largest numbers first.\n[e3] Try division last.",
        "## formulas and snippets\n[e4] 24 = 3 * 8 = 4 * 6 = 2 * 12.",
        "## pitfalls\n[e2] Never reuse a number.",
    ]


def test_update_rewrites_one_bullet_in_place(script):
    program = _seeded(script)
    record = _write(program, script, "d", {"op": "UPDATE", "ids": ["e3"], "content": "Try division only when stuck."})
    assert record["operations"][0]["result"] == "updated" and record["operations"][0]["id"] == "e3"
    assert _bullets(program)["e3"] == ("strategies", "Try division only when stuck.", ["c", "d"])
    assert list(_bullets(program)) == ["e1", "e2", "e3"]


def test_merge_keeps_one_bullet_with_its_parts_sources_and_counts(script):
    program = _seeded(script)
    program.playbook.find("e1").extra["tags"] = {"helpful": 2, "harmful": 0, "neutral": 1}
    program.playbook.find("e3").extra["tags"] = {"helpful": 1, "harmful": 1, "neutral": 0}
    merge = {"op": "MERGE", "ids": ["e1", "e3"], "content": "Pair the largest numbers first; divide last."}
    record = _write(program, script, "d", merge)
    assert record["operations"][0]["result"] == "merged" and record["operations"][0]["id"] == "e1"
    assert _bullets(program) == {
        "e1": ("strategies", "Pair the largest numbers first; divide last.", ["a", "c", "d"]),
        "e2": ("pitfalls", "Never reuse a number.", ["b"]),
    }
    assert program.playbook.find("e1").extra["tags"] == {"helpful": 3, "harmful": 1, "neutral": 1}


def test_delete_removes_a_bullet_and_its_id_is_never_given_again(script):
    program = _seeded(script)
    record = _write(program, script, "d", {"op": "DELETE", "ids": ["e3"]})
    assert record["operations"][0]["result"] == "deleted" and list(_bullets(program)) == ["e1", "e2"]
    assert "Try division last." not in program.read(PROBLEM, "z").text
    _write(program, script, "e", _add("Look for a factor pair of 24."))
    assert list(_bullets(program)) == ["e1", "e2", "e4"]  # e3 stays the deleted bullet's


def test_unknown_ids_are_ignored_and_recorded(script):
    program = _seeded(script)
    before = _bullets(program)
    record = _write(
        program,
        script,
        "d",
        {"op": "UPDATE", "ids": ["e9"], "content": "x"},
        {"op": "DELETE", "ids": ["e42"]},
        {"op": "MERGE", "ids": ["e7", "e8"], "content": "y"},
        {"op": "UPDATE", "ids": ["e1"], "content": ""},
        reasoning="thought\nBullets used: e1, e77",
    )
    assert [(o["result"], o["unknown"]) for o in record["operations"]] == [
        ("ignored", ["e9"]),
        ("ignored", ["e42"]),
        ("ignored", ["e7", "e8"]),
        ("ignored", []),  # no content
    ]
    assert _bullets(program) == before
    assert record["cited"] == ["e1", "e77"] and record["unknown_cited"] == ["e77"]
    # a MERGE naming one known id and one unknown merges what it knows
    merged = _write(program, script, "e", {"op": "MERGE", "ids": ["e2", "e99"], "content": "Never reuse any number."})
    assert merged["operations"][0]["unknown"] == ["e99"] and _bullets(program)["e2"][1] == "Never reuse any number."


# -- near-duplicates, the budget ------------------------------------------------------------------------------


def test_an_add_nearly_equal_to_a_bullet_of_its_section_updates_that_bullet(script):
    program = Ace()
    _write(program, script, "a", _add(RULE))
    near = "In a 24 puzzle, use each of the four numbers exactly once and no other numbers."
    assert DUPLICATE_SIMILARITY <= similarity(RULE, near) < 1
    record = _write(program, script, "b", _add(near))
    assert record["operations"][0]["result"] == "duplicate" and record["operations"][0]["id"] == "e1"
    assert _bullets(program) == {"e1": ("strategies", near, ["a", "b"])}
    # the same text again changes nothing (nothing of item c is in it); in another section it is a bullet of its own
    assert _write(program, script, "c", _add(near))["operations"][0]["result"] == "duplicate"
    assert _bullets(program)["e1"][2] == ["a", "b"]
    assert _write(program, script, "d", _add(near, "pitfalls"))["operations"][0]["result"] == "added"
    # below the threshold: a new bullet
    assert _write(program, script, "e", _add("Use each given number exactly once."))["operations"][0]["result"] == "added"
    assert program.memory_size() == 3


def test_over_the_budget_the_bullets_with_the_lowest_helpful_minus_harmful_go_first(script):
    program = Ace(max_tokens=20)  # 20 tokens: two bullets of 40 characters
    _write(program, script, "a", _add("a" * 40))
    _write(program, script, "b", _add("b" * 40))
    program.playbook.find("e1").extra["tags"] = {"helpful": 2, "harmful": 0, "neutral": 0}
    program.playbook.find("e2").extra["tags"] = {"helpful": 1, "harmful": 0, "neutral": 0}
    record = _write(program, script, "c", _add("c" * 40))  # e3 (0) is the lowest
    assert record["budget_deleted"] == ["e3"] and list(_bullets(program)) == ["e1", "e2"]
    program.playbook.find("e2").extra["tags"] = {"helpful": 1, "harmful": 3, "neutral": 0}
    record = _write(program, script, "d", _add("d" * 40))  # now e2 (-2) is below e4 (0)
    assert record["budget_deleted"] == ["e2"] and list(_bullets(program)) == ["e1", "e4"]
    assert program.playbook.tokens() <= 20
    ties = Ace(max_tokens=20)
    for item in "abc":
        _write(ties, script, item, _add(item * 40))
    assert list(_bullets(ties)) == ["e2", "e3"]  # equal counts: the oldest first
    with pytest.raises(ValueError, match="max_tokens"):
        Ace(max_tokens=-1)


# -- the guard, reads --------------------------------------------------------------------------------------


def test_a_bullet_is_never_shown_to_an_item_it_was_written_from_also_after_a_merge(script):
    program = _seeded(script)
    assert program.read(PROBLEM, "a").record["ids"] == ["e2", "e3"] and program.read(PROBLEM, "a").withheld == 1
    _write(program, script, "d", {"op": "MERGE", "ids": ["e1", "e3"], "content": "Pair first, divide last."})
    for item in ("a", "c", "d"):  # its parts' items, and the item whose write merged them
        read = program.read(PROBLEM, item)
        assert read.record["ids"] == ["e2"] and "Pair first" not in read.text and read.withheld == 1
    assert program.read(PROBLEM, "z").record["ids"] == ["e1", "e2"]
    _write(program, script, "e", {"op": "UPDATE", "ids": ["e2"], "content": "Never reuse any number."})
    assert program.read(PROBLEM, "e").record["ids"] == ["e1"]


def test_a_read_shows_at_most_k_bullets_the_most_like_the_problem(script):
    program = Ace(k=1)
    _write(program, script, "a", _add("Pair the two largest numbers first."))
    script.operations = [[_add("Count the letters of the word.")]]
    with dspy.context(lm=ScriptedEngine(script).lm()):
        program.learn(Lesson("b", "How many letters are in the word 'banana'?", "6", True, "", "reference"))
    assert program.read("How many letters are in the word 'apple'?", "z").record["ids"] == ["e2"]
    assert program.read(PROBLEM, "z").record["ids"] == ["e1"]
    with pytest.raises(ValueError, match="k must be"):
        Ace(k=0)


# -- the generator's ids reach the reflector; the tags ----------------------------------------------------------


@dataclass
class Verdict:
    ok: bool
    feedback: str = ""


def test_the_ids_the_generator_used_on_its_final_try_reach_the_reflector_and_its_tags_are_counted(script):
    program = _seeded(script)
    script.cite, script.retry_cite = ["e1"], ["[e2]", "3"]  # the retry names e2 and e3 (as "3")
    script.tags = {"e2": "helpful", "e3": "harmful"}
    engine = ScriptedEngine(script)
    read = program.read(PROBLEM, "x")
    assert "[e1] Pair the two largest" in read.text
    with dspy.context(lm=engine.lm()):
        out = program.solve(PROBLEM, read.text, check=lambda answer: Verdict(answer != "1 + 1", "it is worth 2"))
    assert len(out.attempts) == 2 and out.checked is True  # the retry loop still runs
    assert out.attempts[0]["reasoning"] == "used the playbook\nBullets used: e1"
    assert out.reasoning == "fixed it\nBullets used: e2, e3" and cited_ids(out.reasoning) == ["e2", "e3"]
    solve_prompt = engine.calls[0].user_text
    assert solve_prompt.index("[[ ## memory ## ]]") < solve_prompt.index("[[ ## problem ## ]]")
    script.operations = [[]]
    with dspy.context(lm=engine.lm()):
        record = program.learn(Lesson("x", PROBLEM, out.solution, True, "", "check", out.reasoning))
    reflector = next(c for c in engine.calls if "used_bullets" in c.user_text)
    used = given(reflector, "used_bullets")
    assert "[e2] (pitfalls) Never reuse a number." in used and "[e3] (strategies) Try division last." in used
    assert "[e1]" not in used  # only the final try's ids
    assert record["cited"] == ["e2", "e3"] and record["tags"] == {"e2": "helpful", "e3": "harmful"}
    counts = {e.id: e.extra["tags"] for e in program.playbook.entries}
    assert counts["e2"] == {"helpful": 1, "harmful": 0, "neutral": 0}
    assert counts["e3"] == {"helpful": 0, "harmful": 1, "neutral": 0}
    assert counts["e1"] == {"helpful": 0, "harmful": 0, "neutral": 0}
    curator = engine.calls[-1].user_text  # the curator reads the counts and the tags
    assert "[e3] (helpful 0, harmful 1) Try division last." in curator and "e2 helpful, e3 harmful" in curator


def test_a_tag_on_a_bullet_not_used_is_not_counted_and_no_citation_means_no_tags(script):
    program = _seeded(script)
    script.extra_tags = [{"id": "e1", "tag": "harmful"}, {"id": "e9", "tag": "helpful"}]
    record = _write(program, script, "x", reasoning="thought\nBullets used: e2")
    assert record["tags"] == {"e2": "neutral"}
    assert {e.id: e.extra["tags"]["harmful"] for e in program.playbook.entries} == {"e1": 0, "e2": 0, "e3": 0}
    assert program.playbook.find("e2").extra["tags"]["neutral"] == 1
    nothing = _write(program, script, "y", reasoning="")  # a write that reads no reasoning: nothing cited
    assert nothing["cited"] == [] and nothing["tags"] == {}


def test_the_other_solvers_ask_as_before():
    assert "bullet_ids" not in StreamSolver("text").solve.predict.signature.output_fields
    assert "bullet_ids" in Ace().solver.solve.predict.signature.output_fields
    assert "bullet_ids" in Ace(answer="function").solver.retry.predict.signature.output_fields
    assert "bullet_ids" not in build_program("fewshot").solver.retry.predict.signature.output_fields


# -- snapshots --------------------------------------------------------------------------------------------------


def test_memory_state_round_trips_through_json(script):
    program = _seeded(script)
    _write(program, script, "d", {"op": "DELETE", "ids": ["e3"]})
    program.playbook.find("e1").extra["tags"]["helpful"] = 2
    state = json.loads(json.dumps(program.memory_state()))
    assert state["format"] == "playbook" and state["issued"] == 3
    restored = build_program("ace")
    restored.load_memory(state)
    assert restored.memory_state() == program.memory_state() and restored.memory_size() == 2
    assert restored.read(PROBLEM, "b").text == program.read(PROBLEM, "b").text
    _write(restored, script, "e", _add("Look for a factor pair of 24."))
    assert list(_bullets(restored)) == ["e1", "e2", "e4"]  # the deleted e3 is not given again after a load
    assert set(SECTIONS) == {"strategies", "formulas and snippets", "pitfalls"}
