def transform(grid):
    """Slide the single one-colour block two cells to the left; the rest stays background (0)."""
    row = grid[0]
    filled = [i for i, colour in enumerate(row) if colour != 0]
    if not filled:
        return [list(row)]
    colour = row[filled[0]]
    start, end = filled[0] - 2, filled[-1] - 2
    return [[colour if start <= i <= end else 0 for i in range(len(row))]]
