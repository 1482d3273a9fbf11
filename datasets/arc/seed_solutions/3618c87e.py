def transform(grid):
    """Each 1 falls through its 5 onto the bottom row."""
    out = [row[:] for row in grid]
    h = len(grid)
    for r in range(h):
        for c, v in enumerate(grid[r]):
            if v == 1:
                out[r][c] = 0
                out[h - 1][c] = 1
    return out
