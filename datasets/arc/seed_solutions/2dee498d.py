def transform(grid):
    """The grid is one tile repeated three times across: keep the first tile."""
    w = len(grid[0]) // 3
    return [row[:w] for row in grid]
