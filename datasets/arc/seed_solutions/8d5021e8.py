def transform(grid):
    """Mirror each row left-right and put it before itself; stack the block, flipped, as [flipped, block, flipped]."""
    wide = [row[::-1] + row for row in grid]
    flipped = wide[::-1]
    return flipped + wide + flipped
