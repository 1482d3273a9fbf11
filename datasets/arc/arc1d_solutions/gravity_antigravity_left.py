def transform(grid):
    """Colour 1 falls to the left end and colour 2 rises to the right end; the background fills the middle."""
    row = grid[0]
    ones = sum(1 for colour in row if colour == 1)
    twos = sum(1 for colour in row if colour == 2)
    return [[1] * ones + [0] * (len(row) - ones - twos) + [2] * twos]
