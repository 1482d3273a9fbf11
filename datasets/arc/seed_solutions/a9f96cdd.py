def transform(grid):
    """The 2 is replaced by four diagonal neighbours: 3 up-left, 6 up-right, 8 down-left, 7 down-right."""
    h, w = len(grid), len(grid[0])
    out = [[0] * w for _ in range(h)]
    for r in range(h):
        for c in range(w):
            if grid[r][c] == 2:
                for dr, dc, colour in ((-1, -1, 3), (-1, 1, 6), (1, -1, 8), (1, 1, 7)):
                    if 0 <= r + dr < h and 0 <= c + dc < w:
                        out[r + dr][c + dc] = colour
    return out
