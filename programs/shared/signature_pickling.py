"""DSPy signatures made at run time pickle by their fields, so programs that hold them pickle.

``dspy.ChainOfThought`` (which prepends ``reasoning``), ``Signature.delete``, ``with_instructions``
and their kin make a new signature class each time; pickle saves a class by its importable name,
and these have none (``StringSignature``), so a program holding one could be deep-copied but not
pickled. Importing :mod:`memreason.programs` registers, for DSPy's signature metaclass, a reduction
that keeps the default for a class importable by its name and saves any other as its name,
instructions and fields (annotation and ``dspy.InputField``/``OutputField`` each), rebuilt on load
by ``dspy.make_signature``. The rebuilt class has the same fields, descriptions, types and
instructions, so a predictor using it prompts and parses as before; methods or validators written
on a run-time subclass are not carried (none of this package's signatures has any).
"""

from __future__ import annotations

import copyreg
import sys
from typing import Any

import dspy
from dspy.signatures.signature import SignatureMeta

__all__ = ["rebuilt_signature"]


def rebuilt_signature(name: str, instructions: str, fields: dict[str, tuple[Any, Any]]) -> type[dspy.Signature]:
    """The signature class saved as ``name``, ``instructions`` and ``fields`` (name -> (annotation, FieldInfo))."""
    return dspy.make_signature(fields, instructions, name)


def _reduce_signature(cls: type) -> Any:
    found: Any = sys.modules.get(cls.__module__)
    for part in cls.__qualname__.split("."):
        found = getattr(found, part, None)
    if found is cls:  # importable by its name: saved by reference, as pickle saves any class
        return cls.__qualname__
    fields = {name: (field.annotation, field) for name, field in cls.model_fields.items()}
    return rebuilt_signature, (cls.__name__, cls.instructions, fields)


copyreg.pickle(SignatureMeta, _reduce_signature)
