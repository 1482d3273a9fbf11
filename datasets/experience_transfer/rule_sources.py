"""What ``--rules`` names: a rule table's JSON file, a generated table's name, a shipped table's name, or
nothing (the paper's Table 1).

    load_rules(None)               # the HDR paper's Table 1
    load_rules("hard-test-7-0")    # a generated table (:func:`.random_tables.table_named`)
    load_rules("example_table")    # a table this package ships (:data:`SHIPPED_TABLES`), by name
    load_rules("my_rules.json")    # a table in the JSON shape of ``table1.json``

Above both :mod:`.rules` (the table) and :mod:`.random_tables` (which builds tables), so neither imports the other's user.
"""

from __future__ import annotations

from pathlib import Path

from .random_tables import table_named
from .rules import RuleTable, RuleTableError

__all__ = ["SHIPPED_TABLES", "load_rules"]

#: The rule tables this package ships, by name: ``table1`` (the paper's) and ``example_table`` (one that is not).
SHIPPED_TABLES = {
    "table1": Path(__file__).with_name("table1.json"),
    "example_table": Path(__file__).with_name("example_table.json"),
}


def load_rules(spec: str | Path | None) -> RuleTable:
    """What ``--rules`` names: a JSON file; else a generated table's name (``hard-test-7-0``, ``train-0-3``:
    :func:`memreason.datasets.experience_transfer.random_tables.table_named`) or a shipped one's
    (:data:`SHIPPED_TABLES`); ``None``: the paper's Table 1."""
    if spec is None:
        return RuleTable.paper()
    if not Path(spec).exists():
        table = table_named(str(spec))
        if table is not None:
            return table
        shipped = SHIPPED_TABLES.get(str(spec).removesuffix(".json"))
        if shipped is not None:
            return RuleTable.from_json(shipped)
        if not Path(spec).is_symlink():
            raise RuleTableError(
                f"cannot read rules file {spec}: no such file (nor a generated table's name such as hard-test-7-0, "
                f"nor a shipped table: {', '.join(SHIPPED_TABLES)})"
            )
    return RuleTable.from_json(spec)
