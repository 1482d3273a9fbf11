def transform(grid):
    """Shift the multicoloured block four cells to the left, keeping the order of its colours."""
    row = grid[0]
    moved = [0] * len(row)
    for i, colour in enumerate(row):
        if colour != 0:
            moved[i - 4] = colour
    return [moved]
