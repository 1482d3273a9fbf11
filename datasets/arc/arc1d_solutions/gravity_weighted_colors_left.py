def transform(grid):
    """Gravity towards the right end with colour 2 heavier than colour 1: the 2s settle at the very end,
    the 1s on top of them, the background before both."""
    row = grid[0]
    ones = sum(1 for colour in row if colour == 1)
    twos = sum(1 for colour in row if colour == 2)
    return [[0] * (len(row) - ones - twos) + [1] * ones + [2] * twos]
