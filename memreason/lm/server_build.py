"""``python -m memreason.lm.server_build``: build llama.cpp's ``llama-server`` for this machine, once.

Prints the path of the binary (building it first if the cache has none) and exits 0, or
prints one ``error:`` line and exits 2. The build itself is :mod:`memreason.lm.llama_build`;
this module is only the command, so that nothing in the package imports it ahead of
``python -m`` (which would run it twice).
"""

from __future__ import annotations

import logging
import sys

from .llama_build import ServerBuildError, cached_binary, server_binary

__all__ = ["ServerBuildError", "cached_binary", "main", "server_binary"]


def main() -> int:
    logging.basicConfig(format="%(message)s", level=logging.INFO)  # the build's progress lines on stderr
    try:
        print(server_binary())
    except ServerBuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
