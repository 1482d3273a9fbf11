def transform(grid):
    """Shift the multicoloured block three cells to the left, keeping the order of its colours."""
    row = grid[0]
    moved = [0] * len(row)
    for i, colour in enumerate(row):
        if colour != 0:
            moved[i - 3] = colour
    return [moved]
