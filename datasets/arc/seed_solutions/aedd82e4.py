def transform(grid):
    """A 2 with no 2 among its four neighbours becomes 1."""
    h, w = len(grid), len(grid[0])
    out = [row[:] for row in grid]
    for r in range(h):
        for c in range(w):
            if grid[r][c] == 2 and not any(
                0 <= r + dr < h and 0 <= c + dc < w and grid[r + dr][c + dc] == 2 for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1))
            ):
                out[r][c] = 1
    return out
