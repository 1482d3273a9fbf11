def transform(grid):
    """Shift the multicoloured block two cells to the right, keeping the order of its colours."""
    row = grid[0]
    moved = [0] * len(row)
    for i, colour in enumerate(row):
        if colour != 0:
            moved[i + 2] = colour
    return [moved]
