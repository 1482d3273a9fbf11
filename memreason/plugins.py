"""Modules of the user's own, imported at start: what registers tasks (``MEMREASON_TASKS``) and memory programs
(``MEMREASON_PROGRAMS``) from outside the package.

    plugins = Plugins("MEMREASON_PROGRAMS", "memreason.programs")
    plugins.load(on_entry=register_program)     # each module of the variable, then each entry point, once a process

A variable names modules (a dotted name, or a ``.py`` file; several separated by commas); an entry-point group
is read from the installed packages' metadata. Importing a module runs its code, as pytest runs a plugin's: name
only modules you trust. One that cannot be loaded (a missing file, a syntax error, any exception at import, a
``sys.exit`` there) raises ``error`` (:class:`PluginError` unless told) naming it and what went wrong in one line;
it is never marked loaded, so the next look-up refuses it again. At the bottom of the package: nothing of ours
is imported here.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Callable

__all__ = ["PluginError", "Plugins", "import_named"]


class PluginError(ValueError):
    """A module of the user's own that cannot be loaded (one line; the command line exits 2)."""


class Plugins:
    """The modules ``variable`` names and the entry points of ``group``, each imported once a process."""

    def __init__(self, variable: str, group: str):
        self.variable, self.group = variable, group
        self.loaded: set[str] = set()

    def named(self) -> list[str]:
        """The modules the variable names now, in order."""
        return [part.strip() for part in os.environ.get(self.variable, "").split(",") if part.strip()]

    def load(self, *, on_entry: Callable[[Any], Any] | None = None, error: type[Exception] = PluginError) -> None:
        """Import each module the variable names, then load each entry point of the group (``on_entry`` gets what
        one gives, where the module's import did not register it itself); ``error``: the class of the one line."""
        for name in self.named():
            if name not in self.loaded:
                guarded(f"{self.variable}: {name}", lambda name=name: import_named(name, self.variable, error), error)
                self.loaded.add(name)
        if self.group in self.loaded:  # the installed packages' entry points, read once a process
            return
        for point in entry_points(group=self.group):
            key = f"entry point {point.name}"
            if key not in self.loaded:
                found = guarded(f"{key} ({point.value})", point.load, error)
                self.loaded.add(key)
                if on_entry is not None:
                    on_entry(found)
        self.loaded.add(self.group)


def guarded(what: str, load: Callable[[], Any], error: type[Exception] = PluginError) -> Any:
    """``load()``, with anything that goes wrong in a module's code (an exception of any kind, ``sys.exit``) turned
    into one ``error`` line naming ``what`` was loaded; Ctrl-C stays Ctrl-C."""
    try:
        return load()
    except error:
        raise
    except SystemExit as exc:
        raise error(f"{what} called sys.exit({exc.code!r}) while being imported; a module must not end the command") from None
    except Exception as exc:
        text = str(exc).strip().splitlines()
        raise error(f"{what} could not be loaded: {type(exc).__name__}: {text[0] if text else 'no message'}") from None


def import_named(name: str, variable: str = "", error: type[Exception] = PluginError) -> Any:
    """The module ``name`` names (a dotted name, or a ``.py`` file), imported. A file is imported once a process
    under one name whichever variable names it (``memreason_plugin_<stem>``), so a file that registers a task and
    a program may be named in both."""
    if not name.endswith(".py"):
        return importlib.import_module(name)
    path = Path(name)
    module_name = f"memreason_plugin_{path.stem}"
    known = sys.modules.get(module_name)
    if known is not None and Path(getattr(known, "__file__", "") or "").resolve() == path.resolve():
        return known
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None or not path.is_file():
        raise error(f"{variable + ': ' if variable else ''}no such file {name}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(spec.name, None)
        raise
    return module
