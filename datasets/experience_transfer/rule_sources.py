"""What ``--rules`` names: a rule table's JSON file, a generated table's name, or nothing (the paper's Table 1).

    load_rules(None)               # the HDR paper's Table 1
    load_rules("hard-test-7-0")    # a generated table (:func:`.random_tables.table_named`)
    load_rules("my_rules.json")    # a table in the JSON shape of ``table1.json``

Above both :mod:`.rules` (the table) and :mod:`.random_tables` (which builds tables), so neither imports the other's user.
"""

from __future__ import annotations

from pathlib import Path

from .random_tables import table_named
from .rules import RuleTable

__all__ = ["load_rules"]


def load_rules(spec: str | Path | None) -> RuleTable:
    """What ``--rules`` names: a JSON file; else a generated table's name (``hard-test-7-0``, ``train-0-3``:
    :func:`memreason.datasets.experience_transfer.random_tables.table_named`); ``None``: the paper's Table 1."""
    if spec is None:
        return RuleTable.paper()
    if not Path(spec).exists():
        table = table_named(str(spec))
        if table is not None:
            return table
    return RuleTable.from_json(spec)
