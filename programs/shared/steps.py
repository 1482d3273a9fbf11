"""One body for ``forward`` and ``aforward``: a composite module's algorithm written as steps.

A step function is a generator that yields ``call(module, **inputs)`` for every sub-module
call and receives the call's prediction back; what happens between the calls (loops,
filtering, records) is written once. :func:`run` drives it with ``module(**inputs)``,
:func:`arun` with ``await module.acall(**inputs)``. A module whose whole algorithm is one
step function subclasses :class:`StepModule` and writes only ``steps``::

    class FactorExtractor(StepModule):
        def steps(self, episodes):
            out = yield call(self.extract, episodes=episodes)
            return dspy.Prediction(factors=distinct(out.factors))

    extractor(episodes=...)                  # forward: run(self.steps(...))
    await extractor.acall(episodes=...)      # aforward: await arun(self.steps(...))

Any other module (or a pipeline of your own) writes the two one-line methods itself::

    def forward(self, episodes):
        return run(self.steps(episodes))

    async def aforward(self, episodes):
        return await arun(self.steps(episodes))

A sub-call's exception is raised inside the step function at its ``yield``, as a direct
call's would be, so ``with`` blocks and ``try`` in the steps behave the same both ways.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Generator, TypeVar

import dspy

__all__ = ["Call", "StepModule", "Steps", "arun", "as_steps", "call", "run"]

T = TypeVar("T")
Call = tuple[Callable[..., Any], dict[str, Any]]
Steps = Generator[Call, Any, T]


def call(module: Callable[..., Any], **inputs: Any) -> Call:
    """The request a step function yields: call ``module`` with ``inputs``."""
    return module, inputs


def run(steps: Steps[T]) -> T:
    """Drive ``steps`` synchronously; its return value."""
    reply, error = None, None
    try:
        while True:
            try:
                module, inputs = steps.throw(error) if error is not None else steps.send(reply)
            except StopIteration as done:
                return done.value
            try:
                reply, error = module(**inputs), None
            except BaseException as exc:  # raised inside the steps, at their yield (Ctrl-C too)
                reply, error = None, exc
    finally:
        steps.close()


async def arun(steps: Steps[T]) -> T:
    """Drive ``steps`` with the sub-modules' ``acall``; its return value."""
    reply, error = None, None
    try:
        while True:
            try:
                module, inputs = steps.throw(error) if error is not None else steps.send(reply)
            except StopIteration as done:
                return done.value
            try:
                reply, error = await module.acall(**inputs), None
            except BaseException as exc:  # cancellation too: the steps' ``with`` blocks exit where they were entered
                reply, error = None, exc
    finally:
        steps.close()


def as_steps(result: Steps[T] | T) -> Steps[T]:
    """``result`` as steps: a step function's generator as it is, a plain value as steps that make no call."""
    if inspect.isgenerator(result):
        return result
    return _no_calls(result)


def _no_calls(value: T) -> Steps[T]:
    return value
    yield  # a generator that returns at once


class StepModule(dspy.Module):
    """A module whose algorithm is one step function, :meth:`steps`: ``forward`` and ``aforward`` both drive it.

    ``module(...)`` makes the steps' sub-module calls with ``sub(...)``, ``await module.acall(...)``
    with ``await sub.acall(...)``: the same calls with the same inputs, in the same order. The
    arguments of ``forward`` and ``aforward`` are those of ``steps``, which documents them and
    the prediction it returns.
    """

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """``run(self.steps(...))``: see :meth:`steps`."""
        return run(as_steps(self.steps(*args, **kwargs)))

    async def aforward(self, *args: Any, **kwargs: Any) -> Any:
        """``await arun(self.steps(...))``: see :meth:`steps`."""
        return await arun(as_steps(self.steps(*args, **kwargs)))

    def steps(self, *args: Any, **kwargs: Any) -> Steps[Any]:
        """The module's algorithm as a step function (a generator yielding :func:`call`), or a plain method
        that makes no call and returns the result."""
        raise NotImplementedError(f"{type(self).__name__} defines no steps")
