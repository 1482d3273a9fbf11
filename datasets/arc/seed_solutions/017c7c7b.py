def transform(grid):
    """Recolour 1 to 2 and extend the rows' period to 9 rows."""
    rows = [[2 if c == 1 else c for c in row] for row in grid]
    for period in range(1, len(rows) + 1):
        if all(rows[i] == rows[i % period] for i in range(len(rows))):
            break
    return [rows[i % period] for i in range(9)]
