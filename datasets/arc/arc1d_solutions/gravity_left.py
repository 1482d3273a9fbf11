def transform(grid):
    """Gravity towards the right end: the coloured cells pile up at the end of the row, in their order."""
    row = grid[0]
    coloured = [colour for colour in row if colour != 0]
    return [[0] * (len(row) - len(coloured)) + coloured]
