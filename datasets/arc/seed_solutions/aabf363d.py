def transform(grid):
    """Recolour the shape with the bottom-left corner's colour, then clear the corner."""
    h = len(grid)
    marker = grid[h - 1][0]
    out = [[marker if c not in (0, marker) else c for c in row] for row in grid]
    out[h - 1][0] = 0
    return out
