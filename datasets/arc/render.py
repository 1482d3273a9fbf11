"""ARC grids as text for prompts and as PNG images for vision models.

Text: one line per row, one digit per cell, no separators (``0120``); digits are
single tokens for most tokenizers, so this is the cheapest exact rendering. A
header gives the size. Images: the standard ARC palette, a grid line between cells.
"""

from __future__ import annotations

from PIL import Image, ImageDraw

from .tasks import ArcTask, Grid

PALETTE = [
    (0, 0, 0),
    (0, 116, 217),
    (255, 65, 54),
    (46, 204, 64),
    (255, 220, 0),
    (170, 170, 170),
    (240, 18, 190),
    (255, 133, 27),
    (127, 219, 255),
    (135, 12, 37),
]


def grid_text(grid: Grid) -> str:
    return "\n".join("".join(str(cell) for cell in row) for row in grid)


def sized(label: str, grid: Grid) -> str:
    return f"{label} ({len(grid)} rows x {len(grid[0])} columns):\n{grid_text(grid)}"


def puzzle_text(task: ArcTask, *, test_inputs: bool = True) -> str:
    """The train pairs, then (optionally) the test inputs; never a test output."""
    parts = []
    for i, pair in enumerate(task.train, 1):
        parts.append(f"Example {i}\n{sized('input', pair.input)}\n{sized('output', pair.output)}")
    if test_inputs:
        for i, pair in enumerate(task.test, 1):
            parts.append(f"Test {i}\n{sized('input', pair.input)}")
    return "\n\n".join(parts)


def grid_image(grid: Grid, cell: int = 12) -> Image.Image:
    rows, cols = len(grid), len(grid[0])
    image = Image.new("RGB", (cols * cell + 1, rows * cell + 1), (80, 80, 80))
    draw = ImageDraw.Draw(image)
    for r, row in enumerate(grid):
        for c, value in enumerate(row):
            draw.rectangle([c * cell + 1, r * cell + 1, (c + 1) * cell - 1, (r + 1) * cell - 1], fill=PALETTE[value])
    return image


def task_image(task: ArcTask, cell: int = 12, gap: int = 16) -> Image.Image:
    """One image: a row per train pair (input, output), then a row per test input."""
    rows = [[grid_image(p.input, cell), grid_image(p.output, cell)] for p in task.train]
    rows += [[grid_image(p.input, cell)] for p in task.test]
    width = max(sum(im.width for im in row) + gap * (len(row) + 1) for row in rows)
    height = sum(max(im.height for im in row) for row in rows) + gap * (len(rows) + 1)
    canvas = Image.new("RGB", (width, height), (255, 255, 255))
    y = gap
    for row in rows:
        x = gap
        for im in row:
            canvas.paste(im, (x, y))
            x += im.width + gap
        y += max(im.height for im in row) + gap
    return canvas
