def transform(grid):
    """Slide the block towards the dot of colour 1 until it touches the dot, without covering it."""
    row = grid[0]
    dot = row.index(1)
    block = [i for i, colour in enumerate(row) if colour not in (0, 1)]
    colour, length = row[block[0]], len(block)
    start = dot - length if block[0] < dot else dot + 1
    out = [0] * len(row)
    out[dot] = 1
    for i in range(start, start + length):
        out[i] = colour
    return [out]
