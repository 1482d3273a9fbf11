"""The task LM and the memory LM a run's :class:`~memreason.eval.harness.options.LMOptions` name, and its retry policy."""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from typing import Callable, Iterator

from memreason.lm import SLOTS, LMChoice, resolve_lm
from memreason.lm.faults import RetryPolicy
from memreason.lm.rate import limiter_for
from memreason.lm.resolve import with_generation

from .options import LMOptions, RunOptions

__all__ = [
    "MEMORY_MAX_TOKENS",
    "MEMORY_TEMPERATURE",
    "memory_chars",
    "resolve_lms",
    "resolving_with",
    "retry_policy",
    "with_limits",
]

# The memory role's own generation settings (ArcMemo, Appendix A.2: concept abstraction and
# selection on GPT-4.1 at temperature 0.3, at most 1000 tokens; the solver has its own budget).
MEMORY_TEMPERATURE = 0.3
MEMORY_MAX_TOKENS = 1000

_resolver: ContextVar[Callable[..., LMChoice] | None] = ContextVar("lm_resolver", default=None)


@contextmanager
def resolving_with(resolve: Callable[..., LMChoice]) -> Iterator[None]:
    """Within the block (in this thread's context), :func:`resolve_lms` turns model strings into LMs with ``resolve``
    unless its caller gives one: how a study's trial runs a task (``Task.run``) on the LMs the study resolved."""
    token = _resolver.set(resolve)
    try:
        yield
    finally:
        _resolver.reset(token)


def resolve_lms(
    args: RunOptions,
    *,
    slots: int | None = None,
    temperature: float | None = None,
    memory_temperature: float | None = None,
    memory_max_tokens: int | None = None,
    resolve: Callable[..., LMChoice] | None = None,
) -> tuple[LMChoice, LMChoice]:
    """The task LM and the memory LM the options name (the memory LM is the task LM unless ``--memory-lm``).

    ``slots``: requests a local server decodes together (default: ``--threads``); ``resolve``: how a
    model string becomes an LM (default: the one :func:`resolving_with` set, else :func:`memreason.lm.resolve_lm`). ``memory_temperature`` and
    ``memory_max_tokens`` give the memory role generation settings of its own (ARC); with either, the
    memory LM is ``--memory-lm`` resolved with them, or else a copy of the task LM with them (a local
    model's copy uses the same server). ``None`` keeps the task LM's setting; both ``None``: as the task LM."""
    resolve = resolve or _resolver.get() or resolve_lm
    choose = dict(
        api_base=args.api_base,
        max_tokens=args.max_tokens,
        cache=not args.no_cache,
        temperature=args.temperature if temperature is None else temperature,
        slots=max(SLOTS, slots if slots is not None else args.threads),
    )
    if args.lm_timeout is not None:
        choose["timeout"] = args.lm_timeout
    task = resolve(args.lm, **choose)
    if memory_temperature is None and memory_max_tokens is None:
        memory = resolve(args.memory_lm, **choose) if args.memory_lm else task
        return with_limits(task, memory, args)
    own = dict(
        temperature=choose["temperature"] if memory_temperature is None else memory_temperature,
        max_tokens=args.max_tokens if memory_max_tokens is None else memory_max_tokens,
    )
    memory = resolve(args.memory_lm, **{**choose, **own}) if args.memory_lm else with_generation(task, **own)
    return with_limits(task, memory, args)


def with_limits(task: LMChoice, memory: LMChoice, args: LMOptions) -> tuple[LMChoice, LMChoice]:
    """``task`` and ``memory`` with their roles' rate limits (:func:`memreason.lm.rate.limiter_for`: one per role and
    model in the process). The memory role on the task's model, with no limits of its own (``--memory-rpm``,
    ``--memory-tpm``), shares the task's: one provider quota, one limiter. An LM that already has a limiter keeps it
    when the options set no limits for its role (a study's trial runs on the study's LMs)."""
    same = memory is task  # one LM for both roles stays one (callers tell the roles apart by it)
    task = _limited(task, "task", args.rpm, args.tpm, args.api_base)
    if same and args.memory_rpm is None and args.memory_tpm is None:
        return task, task
    if memory.spec == task.spec and args.memory_rpm is None and args.memory_tpm is None:
        return task, replace(memory, limiter=task.limiter)
    return task, _limited(memory, "memory", args.memory_rpm, args.memory_tpm, args.api_base)


def _limited(choice: LMChoice, role: str, rpm: int | None, tpm: int | None, address: str | None) -> LMChoice:
    if rpm is None and tpm is None and choice.limiter is not None:
        return choice
    return replace(choice, limiter=limiter_for(role, choice.spec, rpm=rpm, tpm=tpm, address=address))


def retry_policy(args: LMOptions) -> RetryPolicy:
    return RetryPolicy(retries=args.lm_retries, backoff=args.backoff)


def memory_chars(choice: LMChoice) -> int | None:
    """How many characters of a concept memory one memory call may show on ``choice``: as many as its context
    holds tokens (8,192 on the embedded model: about a third of the context at 3-4 characters a token, the
    rest for the problem or solution and the answer); no limit where the context is not known (API models)."""
    return choice.context
