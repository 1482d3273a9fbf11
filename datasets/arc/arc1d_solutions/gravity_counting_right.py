def transform(grid):
    """Count the coloured cells and draw that many 1s from the start of the row (a bar chart of the count)."""
    row = grid[0]
    count = sum(1 for colour in row if colour != 0)
    return [[1] * count + [0] * (len(row) - count)]
