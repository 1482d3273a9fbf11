"""Programs for a memory written before concepts kept them: each concept gets its sources' verified solutions,
as a build records them now, and nothing else changes; the shipped 1D-ARC memories hold exactly those."""

import json
from pathlib import Path

import pytest

from memreason.datasets.arc import ARC1D_SOLUTIONS, MEMORIES, MEMORY_FAMILIES, load_split
from memreason.eval.arc.solutions import given_solutions
from memreason.eval.arc.stored_programs import attach_programs, attach_to_file
from memreason.programs import ConceptMemory, load_memory, save_memory
from memreason.signatures import PSConcept
from tests.helpers.arc_helpers import FLIP, IDENTITY, PS_CONCEPT, flip_task, recolor_task, sandbox, write_tasks  # noqa: F401


def variant(n: int) -> str:
    return f"{FLIP}# variant {n}\n"


def test_each_concept_gets_the_verified_programs_of_its_sources_and_a_wrong_one_is_refused(tmp_path, sandbox):  # noqa: F811
    split = write_tasks(tmp_path / "split", recolor_task("b_recolor"), *(flip_task(f"f{n}") for n in range(4)))
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    (solutions / "b_recolor.py").write_text(IDENTITY)  # gets every pair wrong
    for n in range(4):
        (solutions / f"f{n}.py").write_text(variant(n))
    memory = ConceptMemory("ps")
    memory.add([PSConcept(**{**PS_CONCEPT, "title": "recolour"})], source="b_recolor")
    for n in range(4):  # revised by each flip in turn
        memory.add([PSConcept(**PS_CONCEPT)], source=f"f{n}")
    memory.add([PSConcept(**PS_CONCEPT)], source="ghost")  # no task in the split
    memory.add([PSConcept(**{**PS_CONCEPT, "title": "both"})], source="f0")
    memory.add([PSConcept(**{**PS_CONCEPT, "title": "both"})], source="b_recolor")
    memory.use(["both"])
    save_memory(memory, tmp_path / "old.json")
    before = json.loads((tmp_path / "old.json").read_text())

    report = attach_to_file(tmp_path / "old.json", solutions, split=str(split), sandbox=sandbox, out=tmp_path / "new.json")
    assert report.verified == ["f0", "f1", "f2", "f3"] and report.refused == ["b_recolor"] and report.missing == ["ghost"]
    assert report.concepts == 2
    after = load_memory(tmp_path / "new.json")
    assert after.stored_programs() == [
        ("recolour", []),
        ("flip rows", [variant(1), variant(2), variant(3)]),  # the newest three, in the order of the writes
        ("both", [variant(0)]),
    ]
    saved = json.loads((tmp_path / "new.json").read_text())
    assert [c["programs"] for c in before["concepts"]] == [[], [], []]
    assert [{k: v for k, v in c.items() if k != "programs"} for c in saved["concepts"]] == [
        {k: v for k, v in c.items() if k != "programs"} for c in before["concepts"]
    ]
    assert json.loads((tmp_path / "old.json").read_text()) == before  # written to out only

    attach_to_file(tmp_path / "new.json", solutions, split=str(split), sandbox=sandbox)  # again: the same
    assert json.loads((tmp_path / "new.json").read_text()) == saved


@pytest.mark.parametrize("name", ["arc1d_ps", "arc1d_ps_apart", "arc1d_oe"])
def test_the_shipped_1d_arc_memories_keep_the_programs_a_build_records(name, sandbox):  # noqa: F811
    pytest.importorskip("reasoning_gym")  # the gym extra
    shipped = load_memory(MEMORIES / f"{name}.json")
    again = ConceptMemory.from_json(shipped.to_json())
    tasks, given = given_solutions(str(ARC1D_SOLUTIONS), load_split("arc1d-seeds"), split="arc1d-seeds")
    report = attach_programs(again, tasks, given, sandbox)
    assert len(report.verified) == len(MEMORY_FAMILIES) and not report.refused and not report.missing
    assert again.stored_programs() == shipped.stored_programs() and report.concepts == len(shipped)


def test_the_shipped_solution_folders_and_rule_tables_are_found_by_name_from_anywhere(tmp_path, monkeypatch):
    from memreason.datasets.arc import SEED_SOLUTIONS
    from memreason.datasets.experience_transfer import RuleTable, load_rules
    from memreason.eval.arc.solutions import SHIPPED_SOLUTIONS

    monkeypatch.chdir(tmp_path)  # no datasets/ folder here: only the names find them
    tasks = load_split("barc_seeds")
    by_name = given_solutions("seed_solutions", tasks, split="barc_seeds")
    by_path = given_solutions(str(SEED_SOLUTIONS), tasks, split="barc_seeds")
    assert [t.id for t in by_name[0]] == [t.id for t in by_path[0]] and by_name[1] == by_path[1] and by_name[1]
    assert SHIPPED_SOLUTIONS == {"seed_solutions": SEED_SOLUTIONS, "arc1d_solutions": ARC1D_SOLUTIONS}
    for name in ("example_table", "example_table.json", "table1"):
        shipped = Path(__file__).resolve().parents[3] / "datasets" / "experience_transfer" / f"{name.removesuffix('.json')}.json"
        assert load_rules(name).to_dict() == RuleTable.from_json(shipped).to_dict()
    assert load_rules("table1").to_dict() == RuleTable.paper().to_dict()
