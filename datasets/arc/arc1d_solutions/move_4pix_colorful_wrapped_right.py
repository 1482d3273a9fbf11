def transform(grid):
    """Rotate the row four cells to the right: every cell moves, and cells pushed off one end wrap around."""
    row = grid[0]
    width = len(row)
    rotated = [0] * width
    for i, colour in enumerate(row):
        rotated[(i + 4) % width] = colour
    return [rotated]
