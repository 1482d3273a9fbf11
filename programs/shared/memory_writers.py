"""Memory writers kept out of an optimizer's reach, and still saved, loaded and given an LM with their program.

A memory program holds two kinds of predictors. Its readers (HDR's reasoner; ArcMemo's solver and
concept selector) run on every example, so a metric on answers judges them. Its memory writers
(HDR's consolidator, ArcMemo's concept abstractor, the cheatsheet's curator) run once per memory or
between problems, never on an optimizer's examples: a metric that never runs them cannot tell a
better writer from a worse one, yet an optimizer would reset their demos and rewrite their
instructions all the same.

What an optimizer may touch is what ``named_parameters()`` lists, and DSPy 3.4.1 leaves out of that
listing any sub-module whose ``_compiled`` is true (the flag an optimizer sets on a program it has
compiled, so that a pipeline holding it keeps it frozen). A program built with
``freeze_memory_writers=True`` (the default) sets that flag on each of its writers, and leaves out of
its own listing a writer that is a bare ``dspy.Predict`` (DSPy lists a predictor whatever its flag)::

    program = build_program("arcmemo_ps")
    [name for name, _ in program.named_predictors()]        # solver and selector: no abstractor
    program.memory_writer_predictors()                       # the abstractor's, by name
    program.freeze_memory_writers = False                    # optimizers see the writers again

What DSPy would then drop, the program keeps: ``save`` writes the writers' state (demos and
instructions; not their LM, which ``set_lm`` sets at run time and a loaded state does not replace),
``load`` puts it back, and ``set_lm`` reaches them.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar

import dspy

from .memory_parameter import fill_missing_memory

__all__ = ["MemoryWriters"]


class MemoryWriters:
    """Mixin for a ``dspy.Module`` (list it first among the bases) whose memory writers can be frozen.

    A subclass names its writers with ``memory_writer_names`` (or overrides :meth:`is_memory_writer`)
    and sets ``self.freeze_memory_writers`` in its constructor before it builds them: a writer assigned
    to a program that freezes its writers is frozen as it is assigned.
    """

    memory_writer_names: ClassVar[tuple[str, ...]] = ()

    def is_memory_writer(self, name: str) -> bool:
        """Whether the sub-module held as attribute ``name`` writes memory."""
        return name in self.memory_writer_names

    def memory_writers(self) -> list[tuple[str, dspy.Module]]:
        """The sub-modules that write memory, by attribute name."""
        return [
            (name, value) for name, value in vars(self).items() if isinstance(value, dspy.Module) and self.is_memory_writer(name)
        ]

    def memory_writer_predictors(self) -> list[tuple[str, dspy.Predict]]:
        """The memory writers' predictors, named as DSPy names a program's predictors, frozen or not."""
        found: list[tuple[str, dspy.Predict]] = []
        for name, writer in self.memory_writers():
            if isinstance(writer, dspy.Predict):
                found.append((name, writer))
            else:  # a module's own listing holds its predictors whatever its flag
                found += [(f"{name}.{sub}", predictor) for sub, predictor in writer.named_predictors()]
        return found

    @property
    def freeze_memory_writers(self) -> bool:
        """Whether the memory writers are kept out of ``named_parameters()`` (and so out of optimizers' reach)."""
        return self.__dict__.get("_freeze_memory_writers", False)

    @freeze_memory_writers.setter
    def freeze_memory_writers(self, freeze: bool) -> None:
        if not isinstance(freeze, bool):
            raise TypeError(f"freeze_memory_writers must be True or False, got {type(freeze).__name__} {freeze!r}")
        self.__dict__["_freeze_memory_writers"] = freeze
        for _, writer in self.memory_writers():
            writer._compiled = freeze

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if isinstance(value, dspy.Module) and self.freeze_memory_writers and self.is_memory_writer(name):
            value._compiled = True  # DSPy's own freeze: named_parameters() skips a compiled sub-module

    # -- what optimizers see --------------------------------------------------------------

    def named_parameters(self) -> list[tuple[str, Any]]:
        """DSPy's listing, without the memory writers' predictors while they are frozen."""
        listed = super().named_parameters()
        if not self.freeze_memory_writers:
            return listed
        hidden = {id(predictor) for _, predictor in self.memory_writer_predictors()}
        return [(name, p) for name, p in listed if id(p) not in hidden]

    # -- what the program still does with them -----------------------------------------------

    def memory_writers_state(self, json_mode: bool = True) -> dict[str, Any]:
        """The writers' predictors' state (demos, instructions, fields), without their LM."""
        state = {}
        for name, predictor in self.memory_writer_predictors():
            unbound = copy.copy(predictor)  # the LM is a run-time setting, and a custom engine cannot be saved
            unbound.lm = None
            state[name] = unbound.dump_state(json_mode=json_mode)
        return state

    def load_memory_writers(self, state: dict[str, Any], *, allow_unsafe_lm_state: bool = False) -> None:
        """Load the writers' predictors that ``state`` holds; one saved without an LM keeps the LM it has."""
        for name, predictor in self.memory_writer_predictors():
            if name in state:
                lm = predictor.lm
                predictor.load_state(state[name], allow_unsafe_lm_state=allow_unsafe_lm_state)
                if state[name].get("lm") is None:
                    predictor.lm = lm

    def dump_state(self, json_mode: bool = True) -> dict[str, Any]:
        state = super().dump_state(json_mode=json_mode)
        if self.freeze_memory_writers:
            state.update(self.memory_writers_state(json_mode=json_mode))
        return state

    def load_state(self, state: dict[str, Any], *, allow_unsafe_lm_state: bool = False):
        """DSPy's, then the frozen writers' (a state saved before programs saved their memory keeps the memory)."""
        super().load_state(fill_missing_memory(self, state), allow_unsafe_lm_state=allow_unsafe_lm_state)
        if self.freeze_memory_writers:
            self.load_memory_writers(state, allow_unsafe_lm_state=allow_unsafe_lm_state)
        return self

    def set_lm(self, lm) -> None:
        """Every predictor's LM, the memory writers' included."""
        super().set_lm(lm)
        for _, predictor in self.memory_writer_predictors():
            predictor.lm = lm
