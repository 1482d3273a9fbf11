"""``python -m optimize ...`` (from the repository root) or ``memreason-optimize ...`` (anywhere): see
:mod:`memreason.optimize.cli`.

The import is absolute so that ``python -m optimize`` loads the package once, as ``memreason.optimize``
(a relative one would load it a second time as a top-level ``optimize``).
"""

import sys

from memreason.eval.cli.options import exit_with
from memreason.optimize.cli import main


def run() -> None:
    """The ``memreason-optimize`` console script."""
    exit_with(main(sys.argv[1:]))


if __name__ == "__main__":
    run()
