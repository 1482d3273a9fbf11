def transform(grid):
    """Gravity towards the left end: the coloured cells fall to the start of the row, in their order."""
    row = grid[0]
    coloured = [colour for colour in row if colour != 0]
    return [coloured + [0] * (len(row) - len(coloured))]
