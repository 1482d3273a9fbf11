"""Names a package exports but imports only when first used, so that importing the package stays cheap.

    # memreason/lm/__init__.py
    if TYPE_CHECKING:                     # what type checkers and readers see: the names and where they live
        from .resolve import LMChoice, resolve_lm
    __getattr__, __dir__ = lazy_exports(__name__, {".resolve": "LMChoice resolve_lm"})

``from memreason.lm import resolve_lm`` and ``memreason.lm.resolve_lm`` work as before; the module that defines
the name (and DSPy, LiteLLM, reasoning-gym behind it) is imported the first time the name is asked for, then the
name is kept on the package (module ``__getattr__``, PEP 562). Commands that only parse their arguments or print
their help then start in a fraction of a second. At the bottom of the package: nothing of ours is imported here.

    spec = Imported(".hdr:HDR", "memreason.programs")    # what a registry builds from: spec.load() imports it
    class Acre(ProblemTask):
        signature = Imported("memreason.signatures:AnswerDetector")   # a class attribute imported when first read
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from importlib import import_module
from typing import Any, Callable, Mapping

__all__ = ["Imported", "lazy_exports"]


def lazy_exports(
    package: str, modules: Mapping[str, str], *, aliases: Mapping[str, str] | None = None
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package`` (its ``__name__``) that import each name of
    ``modules`` (a module, relative to ``package`` or absolute -> the names it defines, separated by spaces) on
    first use; ``aliases``: other names of some of them (alias -> name)."""
    aliases = dict(aliases or {})
    where = {name: module for module, names in modules.items() for name in names.split()}
    where.update({alias: where[name] for alias, name in aliases.items()})

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(where[name], package), aliases.get(name, name))
        setattr(sys.modules[package], name, value)  # kept: the next look-up is an ordinary attribute
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *where})

    return __getattr__, __dir__


@dataclass(frozen=True)
class Imported:
    """The object ``"module:name"`` names (a module relative to ``package``, or absolute), imported when first used:
    :meth:`load`. As a class attribute it is that object when read (a descriptor), unless an instance holds its own."""

    path: str
    package: str | None = None

    def load(self) -> Any:
        module, _, name = self.path.partition(":")
        return getattr(import_module(module, self.package), name)

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        return self.load()
