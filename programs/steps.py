"""One body for ``forward`` and ``aforward``: a composite module's algorithm written as steps.

A step function is a generator that yields ``call(module, **inputs)`` for every sub-module
call and receives the call's prediction back; what happens between the calls (loops,
filtering, records) is written once. :func:`run` drives it with ``module(**inputs)``,
:func:`arun` with ``await module.acall(**inputs)``::

    def steps(self, episodes):
        out = yield call(self.extract, episodes=episodes)
        return dspy.Prediction(factors=distinct(out.factors))

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
