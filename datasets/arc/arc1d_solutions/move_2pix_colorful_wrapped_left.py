def transform(grid):
    """Rotate the row two cells to the left: every cell moves, and cells pushed off one end wrap around."""
    row = grid[0]
    width = len(row)
    rotated = [0] * width
    for i, colour in enumerate(row):
        rotated[(i - 2) % width] = colour
    return [rotated]
