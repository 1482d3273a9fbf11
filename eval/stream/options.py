"""The options of one run of a memory program over a stream task (``python -m eval <program> --task rg:NAME``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..harness.options import RunOptions, as_path
from ..harness.resume import identity_field

__all__ = ["MAX_PROBES", "StreamOptions"]

MAX_PROBES = 50  # --verify: more probes than this would answer each write's probes more often than the stream's items


@dataclass(kw_only=True)
class StreamOptions(RunOptions):
    """What one evaluation of a stream program asks for.

    ``task_config``: the dataset's own config (a JSON object, as text); ``size``: test items; ``seed_size``:
    seed problems (memory sources, from another seed stream); ``answer``: ``"text"`` or ``"program"``;
    ``retries``: retries on reference-free feedback; ``learn_from``: what writes from the stream learn from
    (None: ``"check"`` where the task has a check, else ``"self"``); ``lesson``: what a write reads of an
    attempt (``"reasoning"``: the solver's reasoning then its answer; ``"answer"``: the answer alone);
    ``batch``: items between memory updates (0: memory frozen after the seed problems); ``order_seed`` and
    ``orders``: the stream's orders; ``verify``: problems already scored each write is tried on before it is kept
    (0: writes not verified), ``verify_margin``: how many more of them it must turn right than wrong,
    ``candidates``: proposals asked of the writer for each verified write; ``memory_tokens``: the most tokens memory
    may hold (0: no budget)."""

    program: str = identity_field()
    task: str = identity_field()
    task_config: str = identity_field("{}")  # a JSON object's text
    seed: int = identity_field(0)
    size: int = identity_field(50)
    seed_size: int = identity_field(10)
    answer: str = identity_field("text")
    retries: int = identity_field(2)
    learn_from: str | None = identity_field(None)
    lesson: str = identity_field("reasoning")
    batch: int = identity_field(10)
    order_seed: int = identity_field(0)
    orders: int = identity_field(1)
    verify: int = identity_field(0)
    verify_margin: int = identity_field(1)
    candidates: int = identity_field(1)
    memory_tokens: int = identity_field(0)
    config: Path | None = None  # a best.json whose "knobs" build the program

    def __post_init__(self) -> None:
        self.config = as_path(self.config)
