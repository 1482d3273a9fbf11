def transform(grid):
    """One step of gravity towards the left: scanning left to right, a coloured cell with an empty
    cell on its left moves into it (so a run of cells behind a gap moves along with its head)."""
    row = list(grid[0])
    for i in range(1, len(row)):
        if row[i] != 0 and row[i - 1] == 0:
            row[i - 1], row[i] = row[i], 0
    return [row]
