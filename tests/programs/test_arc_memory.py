"""Concept memory: merge/revise without loss or duplicates, programs kept, rendering, atomic files, corrupt files."""

import copy
import json
import pickle

import pytest

import memreason.programs.arcmemo.memory_file as memory_file
from memreason.programs import CheatsheetMemory, ConceptMemory, MemoryFileError, build_program, load_memory, save_memory
from memreason.signatures import OEConcept, Parameter, PSConcept
from tests.helpers.arc_helpers import PS_CONCEPT

SORT = PSConcept(
    title="sort objects",
    kind="routine",
    description="order objects by a key",
    parameters=[
        Parameter(name="objects", type="list[Object]", description="what to order"),
        Parameter(name="key", type="Callable[[Object], int]", description=""),
    ],
    output_typing="list[Object]",
    relevance_cues=["objects ranked by size"],
    implementation_notes=["sorted(objects, key=key)"],
)


def test_revising_by_title_keeps_every_field_and_merges_lists_without_duplicates():
    memory = ConceptMemory("ps")
    assert memory.add([SORT], source="t1") == {"added": ["sort objects"], "revised": []}
    revision = PSConcept(
        title="Sort Objects.",  # same title up to case and punctuation
        parameters=[
            Parameter(name="KEY", type="", description="a routine giving each object's rank"),
            Parameter(name="descending", type="bool", description="largest first"),
        ],
        relevance_cues=["objects ranked by size", "colour by rank"],
        implementation_notes=["Sorted(objects, key=key).", "ties keep reading order"],
    )
    assert memory.add([revision], source="t2") == {"added": [], "revised": ["sort objects"]}
    assert len(memory) == 1
    entry = memory.entries[0]
    merged = entry.concept
    assert merged.title == "sort objects"  # the original spelling
    assert merged.description == "order objects by a key" and merged.output_typing == "list[Object]"
    assert merged.kind == "routine"
    assert [(p.name, p.type, p.description) for p in merged.parameters] == [
        ("objects", "list[Object]", "what to order"),
        ("key", "Callable[[Object], int]", "a routine giving each object's rank"),
        ("descending", "bool", "largest first"),
    ]
    assert merged.relevance_cues == ["objects ranked by size", "colour by rank"]
    assert merged.implementation_notes == ["sorted(objects, key=key)", "ties keep reading order"]
    assert entry.sources == ["t1", "t2"]


def test_a_revision_replaces_text_fields_it_gives():
    memory = ConceptMemory("ps")
    memory.add([SORT])
    memory.add([PSConcept(title="sort objects", kind="structure", description="a better description", output_typing="list")])
    concept = memory.entries[0].concept
    assert (concept.kind, concept.description, concept.output_typing) == ("structure", "a better description", "list")
    assert concept.relevance_cues == SORT.relevance_cues and len(concept.parameters) == 2


def test_the_same_title_twice_in_one_write_is_one_concept():
    memory = ConceptMemory("ps")
    changes = memory.add([PSConcept(**PS_CONCEPT), PSConcept(title="flip rows", relevance_cues=["mirror"])], source="t")
    assert changes == {"added": ["flip rows"], "revised": []}
    assert memory.entries[0].concept.relevance_cues == ["outputs are mirror images", "mirror"]
    assert memory.entries[0].sources == ["t"]


def test_oe_memory_appends_and_skips_exact_repeats():
    memory = ConceptMemory("oe")
    lesson = OEConcept(situation="shapes change colour by size", suggestion="rank shapes by size")
    assert memory.add([lesson, lesson.model_copy()], source="a")["added"] == ["1"]
    assert memory.add([OEConcept(situation="a grid is tiled", suggestion="find the tile")], source="b")["added"] == ["2"]
    assert memory.names() == ["1", "2"]
    assert memory.resolve(["2", "[1]", "7", 2]) == (["2", "1"], ["7"])


def test_rendering_full_and_compressed():
    memory = ConceptMemory("ps")
    memory.add([SORT, PSConcept(**PS_CONCEPT)])
    compressed = memory.render(compressed=True)
    assert compressed.splitlines()[0] == (
        "- sort objects [routine] (objects: list[Object], key: Callable[[Object], int]) -> list[Object]; cues: objects ranked by size"
    )
    assert "order objects by a key" not in compressed and "sorted(" not in compressed
    full = memory.render(["flip rows"])
    assert "## flip rows [routine] (grid: Grid) -> Grid" in full and "note: row[::-1]" in full and "sort" not in full
    oe = ConceptMemory("oe")
    oe.add([OEConcept(situation="S", suggestion="do X")])
    assert oe.render(compressed=True) == "1. S" and "suggestion: do X" in oe.render()


def test_memory_shown_within_a_limit_drops_cues_then_cuts_and_says_so():
    memory = ConceptMemory("ps")
    memory.add([PSConcept(**{**PS_CONCEPT, "title": f"concept {i}", "relevance_cues": ["a long cue " * 5]}) for i in range(6)])
    whole = memory.render(compressed=True)
    assert memory.shown() == (whole, "whole") and memory.shown(len(whole)) == (whole, "whole")
    short, how = memory.shown(len(whole) - 1)
    assert how == "short" and short.splitlines()[0] == "- concept 0 [routine] (grid: Grid) -> Grid" and "cue" not in short
    cut, how = memory.shown(len(short) - 1)
    lines = cut.splitlines()
    assert how == f"cut {6 - len(lines) + 1}" and lines[-1] == f"({6 - len(lines) + 1} more concepts not shown)"
    assert lines[:-1] == short.splitlines()[: len(lines) - 1] and len(cut) <= len(short) - 1
    oe = ConceptMemory("oe")
    oe.add([OEConcept(situation="s" * 300, suggestion="x"), OEConcept(situation="t", suggestion="y")])
    text, how = oe.shown(200)
    assert how == "short" and text.splitlines() == ["1. " + "s" * 117 + "...", "2. t"]


def test_concepts_in_full_within_a_limit_go_brief_then_cut_and_keep_the_order_asked():
    memory = ConceptMemory("ps")
    many = {"relevance_cues": [f"cue {i}" for i in range(6)], "implementation_notes": [f"note {i}" for i in range(6)]}
    memory.add([PSConcept(**{**PS_CONCEPT, **many, "title": f"concept {i}"}) for i in range(4)])
    names = ["concept 2", "concept 0", "ghost"]
    whole, how = memory.render_within(names)
    assert how == "whole" and whole == memory.render(names) and whole.index("concept 0") < whole.index("concept 2")
    ranked, _ = memory.render_within(names, ranked=True)
    assert ranked.index("concept 2") < ranked.index("concept 0")
    brief, how = memory.render_within(names, len(whole) - 1)
    assert how == "brief" and "note 1" in brief and "note 2" not in brief and "cue 2" not in brief and "param" not in brief
    assert brief.count("## concept") == 2
    cut, how = memory.render_within(None, len(brief))
    assert how.startswith("cut ") and cut.endswith(f"({how.split()[1]} more concepts not shown)") and len(cut) <= len(brief)


def test_usage_counts_and_round_trip(tmp_path):
    memory = ConceptMemory("ps")
    memory.add([SORT], source="t1")
    memory.use(["sort objects"])
    memory.use(["sort objects"])
    save_memory(memory, tmp_path / "m.json")
    again = load_memory(tmp_path / "m.json")
    assert again.to_json() == memory.to_json() and again.entries[0].uses == 2
    sheet = CheatsheetMemory("use numpy", ["a"])
    save_memory(sheet, tmp_path / "c.json")
    assert load_memory(tmp_path / "c.json") == sheet


def code(n: int) -> str:
    return f"def transform(grid):\n    return [[{n}]]\n"


def test_concepts_keep_their_programs_through_a_file_and_an_old_file_loads_without_them(tmp_path):
    memory = ConceptMemory("ps")
    memory.add([SORT], source="t1", program=code(1))
    memory.add([PSConcept(**PS_CONCEPT)], source="t2")  # not verified: no program
    save_memory(memory, tmp_path / "m.json")
    saved = json.loads((tmp_path / "m.json").read_text())["concepts"]
    assert [c["programs"] for c in saved] == [[code(1)], []]
    again = load_memory(tmp_path / "m.json")
    assert again.to_json() == memory.to_json() and again.entries[0].programs == [code(1)]
    assert again.stored_programs() == [("sort objects", [code(1)]), ("flip rows", [])]
    for concept in saved:  # a file written before concepts kept programs
        del concept["programs"]
    (tmp_path / "old.json").write_text(json.dumps({"format": "ps", "concepts": saved}))
    old = load_memory(tmp_path / "old.json")
    assert [e.programs for e in old.entries] == [[], []] and old.entries[0].sources == ["t1"]
    assert old.render() == memory.render() and code(1) not in memory.render()  # no prompt shows a program


def test_a_concept_keeps_its_newest_three_programs_without_repeats():
    from memreason.programs.arcmemo.concept_memory import MAX_PROGRAM_CHARS, MAX_PROGRAMS

    memory = ConceptMemory("ps")
    for n in range(5):  # revised by title five times, each from another verified solution
        memory.add([SORT], source=f"t{n}", program=code(n))
    assert MAX_PROGRAMS == 3 and memory.entries[0].programs == [code(2), code(3), code(4)]
    memory.add([SORT], source="t2", program=code(2))  # kept already: now the newest, once
    assert memory.entries[0].programs == [code(3), code(4), code(2)]
    memory.add([SORT], source="t9", program=None)
    memory.add([SORT], source="t9", program="x" * (MAX_PROGRAM_CHARS + 1))  # too long to keep
    assert memory.entries[0].programs == [code(3), code(4), code(2)]
    apart = ConceptMemory("ps")
    apart.add([SORT], source="a", program=code(1))
    apart.add([SORT], source="b", revise=False, program=code(2))
    assert [e.programs for e in apart.entries] == [[code(1)], [code(2)]]
    pickled, copied = pickle.loads(pickle.dumps(memory)), copy.deepcopy(memory)
    assert pickled.entries[0].programs == copied.entries[0].programs == memory.entries[0].programs
    assert pickled._lock is not memory._lock and copied._lock is not memory._lock


def test_a_program_deep_copy_gets_its_own_memory():
    """DSPy compiles on deep copies; the copy's writes must not reach the original."""
    program = build_program("arcmemo_ps")
    program.memory.add([SORT], source="t1")
    twin = program.deepcopy()
    twin.memory.add([PSConcept(title="draw line", kind="routine")], source="t2")
    twin.memory.use(["sort objects"])
    assert len(program.memory) == 1 and program.memory.entries[0].uses == 0
    assert len(twin.memory) == 2 and twin.memory.entries[0].uses == 1
    assert twin.memory.entries[0].concept == program.memory.entries[0].concept


def test_a_program_holding_concepts_saves_whole_with_save_program_and_loads_back(tmp_path):
    """DSPy's ``save(path, save_program=True)`` and MLflow's ``log_model`` cloudpickle the program: the memory's
    lock is left out and made anew."""
    import pickle

    import dspy

    program = build_program("arcmemo_ps")
    program.memory.add([SORT], source="t1")
    program.memory.use(["sort objects"])
    program.save(str(tmp_path / "whole"), save_program=True)
    loaded = dspy.load(str(tmp_path / "whole"), allow_pickle=True)
    assert type(loaded) is type(program) and loaded.memory.to_json() == program.memory.to_json()
    loaded.memory.add([PSConcept(title="draw line", kind="routine")], source="t2")  # its new lock works
    assert len(loaded.memory) == 2 and len(program.memory) == 1
    assert loaded.memory._lock is not program.memory._lock
    again = pickle.loads(pickle.dumps(program.memory))
    assert again.to_json() == program.memory.to_json()
    with again._lock:  # a lock of its own, not held
        pass


def test_a_crash_during_a_write_leaves_the_previous_file_intact(tmp_path, monkeypatch):
    path = tmp_path / "memory.json"
    memory = ConceptMemory("ps")
    memory.add([SORT])
    save_memory(memory, path)
    before = path.read_text()
    memory.add([PSConcept(**PS_CONCEPT)])

    def dies_half_way(data, handle, **kwargs):
        handle.write(json.dumps(data)[:20])
        raise OSError("disk gone")

    monkeypatch.setattr(memory_file.json, "dump", dies_half_way)
    with pytest.raises(OSError, match="disk gone"):
        save_memory(memory, path)
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["memory.json"]  # no temporary file left behind
    monkeypatch.undo()
    assert len(load_memory(path)) == 1


@pytest.mark.parametrize(
    "content, message",
    [
        ("{oops", "is not valid JSON"),
        ("[]", "has no known 'format'"),
        ('{"format": "xx"}', "has no known 'format'"),
        ('{"format": "ps", "concepts": {}}', "'concepts' must be a list"),
        ('{"format": "ps", "concepts": [{"description": "no title"}]}', "concept 0: title"),
        ('{"format": "ps", "concepts": [{"title": "t", "kind": "gadget"}]}', "concept 0: kind"),
        ('{"format": "oe", "concepts": [{"situation": "s"}]}', "concept 0: suggestion"),
        ('{"format": "ps", "concepts": [{"title": "t", "uses": "many"}]}', "'uses' must be an int"),
        ('{"format": "ps", "concepts": [{"title": "t", "programs": [3]}]}', "'programs' must be a list of strings"),
        ('{"format": "cheatsheet", "text": 3}', "needs 'text'"),
    ],
)
def test_corrupt_memory_files_are_one_clear_error(tmp_path, content, message):
    (tmp_path / "m.json").write_text(content)
    with pytest.raises(MemoryFileError, match=message) as info:
        load_memory(tmp_path / "m.json")
    assert "\n" not in str(info.value)


def test_missing_memory_file():
    with pytest.raises(
        MemoryFileError, match=r"^cannot read memory file nowhere.json: no such file \(nor a shipped memory: arc1d_cheatsheet, "
    ):
        load_memory("nowhere.json")


def test_a_shipped_memory_is_read_by_name_and_a_file_of_that_name_wins(tmp_path, monkeypatch):
    from memreason.datasets.arc import MEMORIES
    from memreason.programs import shipped_memories

    assert {"arc1d_ps", "arc1d_ps_apart", "arc1d_oe", "arc1d_cheatsheet", "rearc_ps", "rearc_oe"} <= set(shipped_memories())
    for name in shipped_memories():
        assert load_memory(name).to_json() == load_memory(MEMORIES / f"{name}.json").to_json()
    assert load_memory("arc1d_ps.json").to_json() == load_memory("arc1d_ps").to_json()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "arc1d_ps").write_text('{"format": "oe", "concepts": []}')
    assert load_memory("arc1d_ps").format == "oe"  # a path wins over a shipped name
