def transform(grid):
    """A row with colours at both ends: each fills its half, with a 5 in the middle."""
    out = [row[:] for row in grid]
    for row in out:
        w = len(row)
        if row[0] and row[-1]:
            half = w // 2
            row[:half] = [row[0]] * half
            row[half + 1 :] = [row[-1]] * (w - half - 1)
            row[half] = 5
    return out
