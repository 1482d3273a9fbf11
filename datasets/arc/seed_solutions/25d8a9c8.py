def transform(grid):
    """A row of one colour becomes 5s; every other row becomes 0s."""
    return [[5] * len(row) if len(set(row)) == 1 else [0] * len(row) for row in grid]
