"""Reading a JSON file a user named: one clear error for a missing file, unreadable bytes or bad JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_json_file(path: str | Path, error: type[Exception], what: str) -> Any:
    """The JSON in ``path``; ``error`` (a one-line message naming ``what`` the file is) when it cannot be read."""
    path = Path(path)
    try:
        return json.loads(path.read_text())
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise error(f"{what} {path} is not valid JSON: {exc}") from None
