def transform(grid):
    """Shift the multicoloured block one cell to the right, keeping the order of its colours."""
    row = grid[0]
    moved = [0] * len(row)
    for i, colour in enumerate(row):
        if colour != 0:
            moved[i + 1] = colour
    return [moved]
