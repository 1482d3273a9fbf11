def transform(grid):
    """Three 3x3 panels split by 5s: the second is the first turned clockwise, the third turned twice."""
    first = [row[:3] for row in grid]
    once = [list(r) for r in zip(*first[::-1])]
    twice = [row[::-1] for row in first[::-1]]
    return [a + [5] + b + [5] + c for a, b, c in zip(first, once, twice)]
