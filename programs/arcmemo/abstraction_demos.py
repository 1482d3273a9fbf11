"""Hand-written ARC demonstrations for the concept abstractor (one per step, ours, not the paper's).

    use_arc_demos(abstractor)              # what the ARC programs do (their ``demos`` knob)
    use_arc_demos(abstractor, dsl=True)    # for solutions in re-ARC's DSL (``build_memory --solutions rearc``)

One small puzzle -- grey objects recoloured by size rank -- abstracted both ways:
OE as situation/suggestion lessons from a post-hoc derivation, PS as typed concepts,
one of them higher-order (a sort taking the key as a routine), one a revision of a
concept already in memory. The puzzle is stated as the ARC programs state theirs
(:func:`memreason.programs.arcmemo.arc_problem.arc_problem`, without test inputs). Its solution
is written twice, in plain Python and in re-ARC's DSL (shown with the reference of the primitives
it uses, as a re-ARC verifier is shown): the pseudocode and concepts are the same plain words
either way, which is what a small model is to imitate rather than naming the DSL's primitives.
"""

from __future__ import annotations

import dspy

from memreason.signatures import OEConcept, Parameter, PSConcept

from .arc_problem import ARC_INTRO

__all__ = ["use_arc_demos"]

PUZZLE = """Example 1
input (4 rows x 5 columns):
55000
00055
00055
50000
output (4 rows x 5 columns):
22000
00011
00011
30000

Example 2
input (3 rows x 5 columns):
50550
00550
00000
output (3 rows x 5 columns):
20110
00110
00000"""

SOLUTION = """def transform(grid):
    h, w = len(grid), len(grid[0])
    seen, objects = set(), []
    for r in range(h):
        for c in range(w):
            if grid[r][c] != 0 and (r, c) not in seen:
                stack, cells = [(r, c)], []
                seen.add((r, c))
                while stack:
                    y, x = stack.pop()
                    cells.append((y, x))
                    for ny, nx in ((y + 1, x), (y - 1, x), (y, x + 1), (y, x - 1)):
                        if 0 <= ny < h and 0 <= nx < w and grid[ny][nx] != 0 and (ny, nx) not in seen:
                            seen.add((ny, nx))
                            stack.append((ny, nx))
                objects.append(cells)
    out = [row[:] for row in grid]
    for rank, cells in enumerate(sorted(objects, key=len, reverse=True), 1):
        for y, x in cells:
            out[y][x] = rank
    return out
"""

DSL_SOLUTION = """def transform(I: Grid) -> Grid:
    x1 = objects(I, T, F, T)
    x2 = order(x1, compose(invert, size))
    x3 = interval(ONE, increment(size(x2)), ONE)
    x4 = mpapply(recolor, x3, x2)
    x5 = paint(I, x4)
    return x5
"""

DERIVATION = [
    "Observation: inputs hold several separate grey (5) shapes on a black background.",
    "Observation: each output keeps the shapes in place but gives each a new colour 1, 2 or 3.",
    "Observation: the 4-cell square becomes 1, the 2-cell bar 2, the single cell 3.",
    "Thought: the new colour is the shape's rank when shapes are ordered by size, largest first.",
    "Thought: so: find the connected shapes, sort them by cell count, recolour shape k with colour k.",
]

OE_CONCEPTS = [
    OEConcept(
        situation="Output shapes sit exactly where input shapes were but change colour, and the colours differ between shapes of different sizes.",
        suggestion="Rank the shapes by a property (size, position, colour count) and colour each by its rank.",
    ),
    OEConcept(
        situation="The grid holds several separate same-coloured shapes that are treated one at a time.",
        suggestion="Extract connected components (4-neighbour flood fill over non-background cells) and work per object.",
    ),
]

PSEUDOCODE = """1. objects = find objects (non-background connected components)
2. ranked = sort objects by size, largest first
3. recolour each object with its rank (1, 2, 3, ...)"""

MEMORY = """- find objects [routine] (grid: Grid) -> list[Object]; cues: separate shapes on a background
- recolour [routine] (grid: Grid, cells: list[Cell], color: Color) -> Grid; cues: shapes keep their place but change colour"""

PS_CONCEPTS = [
    PSConcept(
        title="find objects",
        kind="routine",
        parameters=[Parameter(name="connectivity", type="int", description="4 or 8 neighbours")],
        relevance_cues=["shapes are ranked, counted or compared"],
        implementation_notes=["flood fill from each unvisited non-background cell; an object is its list of cells"],
    ),
    PSConcept(
        title="sort objects",
        kind="routine",
        description="Order objects by a key, to rank them or pick the first/last.",
        parameters=[
            Parameter(name="objects", type="list[Object]", description="what to order"),
            Parameter(name="key", type="Callable[[Object], int]", description="e.g. size, top row, colour count"),
            Parameter(name="descending", type="bool", description="largest first"),
        ],
        output_typing="list[Object]",
        relevance_cues=["the output treats objects differently by size or position", "an object's new colour is its rank"],
        implementation_notes=["sorted(objects, key=key, reverse=descending); ties keep reading order"],
    ),
]


def _demo(**fields) -> dspy.Example:
    return dspy.Example(**fields)


PROBLEM = f"{ARC_INTRO}\n\n{PUZZLE}"


def _demos(solution: str) -> dict[str, list[dspy.Example]]:
    """Each step's demonstration, the puzzle's solution shown as ``solution``."""
    return {
        "oe_derive": [_demo(problem=PROBLEM, solution=solution, derivation=DERIVATION)],
        "oe_abstract": [_demo(problem=PROBLEM, solution=solution, derivation=DERIVATION, concepts=OE_CONCEPTS)],
        "ps_pseudocode": [_demo(solution=solution, pseudocode=PSEUDOCODE)],
        "ps_abstract": [_demo(memory=MEMORY, pseudocode=PSEUDOCODE, solution=solution, concepts=PS_CONCEPTS)],
    }


def use_arc_demos(abstractor, *, dsl: bool = False) -> None:
    """Give each step of a :class:`ConceptAbstractor` its ARC demonstration (replacing any it had). ``dsl``: the
    demonstrations' solution is the DSL program, shown as re-ARC's verifiers are (needs reasoning-gym)."""
    if dsl:
        from memreason.datasets.arc.rearc_solutions import dsl_text

        demos = _demos(dsl_text(DSL_SOLUTION))
    else:
        demos = _demos(SOLUTION)
    if abstractor.format == "oe":
        steps = [(abstractor.derive, demos["oe_derive"]), (abstractor.abstract, demos["oe_abstract"])]
    else:
        steps = [(abstractor.pseudocode, demos["ps_pseudocode"]), (abstractor.abstract, demos["ps_abstract"])]
    for predictor, examples in steps:
        predictor.demos = list(examples)
