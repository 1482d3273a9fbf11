"""A table's own behaviour lives on its spec: the modules that plan, run and print tables never name one."""

import ast
from pathlib import Path

import pytest

from memreason.eval.experience_transfer import table_cells, table_markdown, table_options, tables
from memreason.eval.experience_transfer.table_specs import TABLES, Row
from tests.test_architecture import task_names_used


@pytest.mark.parametrize("module", [tables, table_cells, table_markdown, table_options], ids=lambda m: m.__name__)
def test_no_module_but_the_specs_names_a_table(module):
    tree = ast.parse(Path(module.__file__).read_text())
    named = task_names_used(tree, set(TABLES))  # string constants equal to a table's name, docstrings left out
    assert not named, f"{module.__name__} names a table (ask its TableSpec instead): {named}"


def test_the_scan_finds_a_table_named_in_code():
    tree = ast.parse('"""About table4."""\ndef f(args):\n    return args.table == "table4" or f"{args.table} table5"\n')
    assert task_names_used(tree, set(TABLES)) == [(3, "table4")]


def test_a_row_a_user_adds_gets_its_label_and_the_tables_marks_for_it():
    assert TABLES["table5"].row("hdr_grounded") == Row("HDR, rules checked by code", "hdr_grounded", (True, True))
    assert TABLES["table5"].row("episodic_cot").marks == (False, False)  # no marks of its own: none ticked
    assert TABLES["table2"].row("episodic_cot") == Row("Episodic memory", "episodic_cot", (True,))  # the paper's row
    assert TABLES["table3"].row("nosuch") == Row("nosuch", "nosuch")


def test_rows_are_named_by_program_unless_they_are_memory_lms():
    table4 = TABLES["table4"]
    row = table4.memory_lm_row("openai/gpt-4o")
    assert row == Row("openai/gpt-4o", "hdr") and table4.row_name(row) == "openai/gpt-4o"
    assert TABLES["table3"].row_name({"label": "HDR (Ours)", "program": "hdr"}) == "hdr"


def test_what_each_table_does_unlike_the_others():
    assert {name: spec.heading for name, spec in TABLES.items()} == {
        "table2": "Memory",
        "table3": "Methods",
        "table4": "Models",
        "table5": "Methods",
    }
    assert [name for name, spec in TABLES.items() if spec.averaged] == ["table4"]
    assert [name for name, spec in TABLES.items() if spec.scores_memories] == ["table5"]
    assert [name for name, spec in TABLES.items() if spec.takes_task] == ["table3"]
