def transform(grid):
    """Append the grid's vertical mirror below it."""
    return [row[:] for row in grid] + [row[:] for row in grid[::-1]]
