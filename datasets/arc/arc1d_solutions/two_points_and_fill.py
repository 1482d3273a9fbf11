def transform(grid):
    """Join the two dots of one colour with a line of that colour, ends included."""
    row = grid[0]
    dots = [i for i, colour in enumerate(row) if colour != 0]
    out = list(row)
    for i in range(dots[0], dots[-1] + 1):
        out[i] = row[dots[0]]
    return [out]
