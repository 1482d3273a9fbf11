"""How this copy of the package runs, and what messages may tell its user to type.

    command("eval")          # "memreason-eval", or "python -m eval" when that is how it was run
    as_run(examples)         # examples written with "python -m eval ..." in the commands as run
    install_hint("gym")      # "pip install 'memreason[gym]'", or "pip install -e '.[gym]'" in a checkout
    from_checkout()          # True: the package's files are a source checkout (editable, or run from the root)

A package installed with ``pip install .`` (or from a wheel) has no ``eval`` folder on the path and no
checkout to install extras from, so the commands and install hints it prints follow how it runs. At
the bottom of the package: nothing of ours is imported here.
"""

from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path

__all__ = ["as_run", "command", "from_checkout", "install_hint"]

_ROOT = Path(__file__).resolve().parent.parent  # a checkout's root, or site-packages for an installed copy


def command(name: str) -> str:
    """The command line ``name`` (``eval`` or ``optimize``) as the user types it: ``python -m eval`` (``python -m
    memreason.eval``) in a process started with ``python -m eval`` or ``python -m optimize`` (``memreason.``
    likewise), else the console script ``memreason-eval``, which works wherever the package is installed (also
    what a call from Python is told)."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    module = getattr(spec, "name", None) or ""
    for prefix in ("", "memreason."):
        if module in (f"{prefix}eval.__main__", f"{prefix}optimize.__main__"):
            return f"python -m {prefix}{name}"
    return f"memreason-{name}"


def as_run(text: str) -> str:
    """``text`` (help examples written as ``python -m eval ...``, ``python -m optimize ...``) with each command as
    :func:`command` names it."""
    return text.replace("python -m eval", command("eval")).replace("python -m optimize", command("optimize"))


@lru_cache(maxsize=1)
def from_checkout() -> bool:
    """Whether the running package is a source checkout (an editable install, or the repository's root on the
    path) rather than a copy pip installed from a directory, a wheel or an index.

    A checkout's ``memreason/`` folder sits beside the project's ``pyproject.toml``; an installed copy sits in
    site-packages, which holds none. (Installed metadata cannot tell: from the repository's root the
    ``memreason.egg-info`` an editable build leaves there is found first.)"""
    project = _ROOT / "pyproject.toml"
    try:
        return project.is_file() and 'name = "memreason"' in project.read_text(errors="replace")
    except OSError:
        return False


def install_hint(extra: str) -> str:
    """The command that adds an optional extra (``gym``, ``mlflow``, ``local``) to this installation: for an
    installed copy, ``pip install 'memreason[gym]'`` (pip keeps the installed memreason and adds what the extra
    needs); in a checkout, the editable install of it (``.`` from its root, else its path)."""
    if not from_checkout():
        return f"pip install 'memreason[{extra}]'"
    try:
        where = "." if Path.cwd().resolve() == _ROOT else str(_ROOT)
    except OSError:  # the working directory is gone
        where = str(_ROOT)
    return f"pip install -e '{where}[{extra}]'"
