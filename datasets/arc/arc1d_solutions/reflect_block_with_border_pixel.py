def transform(grid):
    """Mirror the block in place: its odd-coloured end cell moves to the other end."""
    row = grid[0]
    filled = [i for i, colour in enumerate(row) if colour != 0]
    start, end = filled[0], filled[-1]
    return [row[:start] + row[start : end + 1][::-1] + row[end + 1 :]]
