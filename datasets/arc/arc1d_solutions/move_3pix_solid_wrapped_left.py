def transform(grid):
    """Slide the one-colour block three cells to the left; what leaves one end of the row comes back in at the other."""
    row = grid[0]
    width = len(row)
    colours = [colour for colour in row if colour != 0]
    if not colours:
        return [list(row)]
    covered = {(i - 3) % width for i, colour in enumerate(row) if colour != 0}
    return [[colours[0] if i in covered else 0 for i in range(width)]]
