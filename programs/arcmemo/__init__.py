"""ArcMemo (concept-level memory for ARC-AGI by program synthesis), its baselines, and its memory stores.

ArcProgram, Baseline                  the solver loop (Algorithm 1) and the memoryless baseline
ArcSolver, Attempt, Step              program synthesis with attempts and retries on execution feedback
ArcMemo, ArcMemoOE, ArcMemoPS         concepts read by selection, written by abstraction
ConceptMemory, ConceptSelector,       the concept memory, its read and its write
ConceptAbstractor, use_arc_demos
Cheatsheet, CheatsheetMemory          the Dynamic Cheatsheet baseline
load_memory, save_memory, ...         memory files (JSON, written atomically)
arc_problem, arc_problem_image        an ARC task as the task-neutral concept modules read it
"""

from .abstraction_demos import use_arc_demos
from .arc_problem import arc_problem, arc_problem_image
from .arc_program import ArcProgram, Baseline, Feedback
from .arc_solver import ArcSolver, Attempt, Step
from .arcmemo import ArcMemo, ArcMemoOE, ArcMemoPS
from .cheatsheet import Cheatsheet
from .cheatsheet_memory import CheatsheetMemory
from .concept_abstractor import ConceptAbstractor
from .concept_memory import ConceptMemory
from .concept_selector import ConceptSelector
from .memory_file import MemoryFileError, empty_memory, load_memory, save_memory, shipped_memories

__all__ = [
    "ArcMemo",
    "ArcMemoOE",
    "ArcMemoPS",
    "ArcProgram",
    "ArcSolver",
    "Attempt",
    "Baseline",
    "Cheatsheet",
    "CheatsheetMemory",
    "ConceptAbstractor",
    "ConceptMemory",
    "ConceptSelector",
    "Feedback",
    "MemoryFileError",
    "Step",
    "arc_problem",
    "arc_problem_image",
    "empty_memory",
    "load_memory",
    "save_memory",
    "shipped_memories",
    "use_arc_demos",
]
