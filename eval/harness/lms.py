"""The task LM and the memory LM a run's :class:`~memreason.eval.harness.options.LMOptions` name, and its retry policy."""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import fields, replace
from typing import Any, Callable, Iterator

from memreason.lm import SLOTS, LMChoice, resolve_lm
from memreason.lm.faults import RetryPolicy
from memreason.lm.rate import limiter_for
from memreason.lm.resolve import with_generation

from .options import MEMORY_MAX_TOKENS, MEMORY_TEMPERATURE, LMOptions, RunOptions

__all__ = [
    "MEMORY_MAX_TOKENS",
    "MEMORY_TEMPERATURE",
    "adapted_records",
    "memory_chars",
    "resolve_lms",
    "resolving_with",
    "retry_policy",
    "role_given",
    "same_kind",
    "with_limits",
]

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
    memory: bool = True,
    resolve: Callable[..., LMChoice] | None = None,
) -> tuple[LMChoice, LMChoice]:
    """The task LM and the memory LM the options name (the memory LM is the task LM unless it has settings of its own).

    ``slots``: requests a local server decodes together (default: ``--threads``); ``resolve``: how a
    model string becomes an LM (default: the one :func:`resolving_with` set, else :func:`memreason.lm.resolve_lm`).
    ``temperature`` replaces the task LM's (a setting of the command's own: ARC's solver sends its own with each call).

    The memory role's own settings: ``memory_temperature`` and ``memory_max_tokens`` (else the options'), its
    keywords (``memory_lm_args``) and its address (``memory_api_base``). With any, the memory LM is ``memory_lm``
    (or the task model) resolved with them, or else a copy of the task LM with them (a local model's copy uses the
    same server); with none, the memory LM is ``memory_lm`` resolved as the task LM is, or the task LM itself.
    ``memory=False``: the program makes no memory calls, so the memory LM is the task LM and its settings are
    never checked. The memory LM is sent to ``api_base`` only when it has no address of its own and it is the same
    kind of model as the task LM (the same provider prefix), so an API model beside a self-hosted one is not sent
    to the self-hosted server.

    Settings a model's provider refuses are refused before any call, in one line naming the setting and the role;
    defaults it would refuse are adapted (:mod:`memreason.lm.reasoning`; each LM's ``adapted`` says how).

    Each LM gets its role's rate limits (:func:`with_limits`)."""
    resolve = resolve or _resolver.get() or resolve_lm
    common = dict(cache=not args.no_cache, slots=max(SLOTS, slots if slots is not None else args.threads))
    if args.lm_timeout is not None:
        common["timeout"] = args.lm_timeout
    if args.deterministic:
        common["deterministic"] = True
    task_given = role_given(args, "task")
    if temperature is not None:
        task_given.pop("temperature", None)  # the command's own, not the user's
    task_settings = dict(
        temperature=args.temperature if temperature is None else temperature,
        max_tokens=args.max_tokens,
        extra=dict(getattr(args, "lm_args", None) or {}),
    )
    task = resolve(args.lm, api_base=args.api_base, **task_settings, given=task_given, role="task LM", **common)
    if not memory:
        return with_limits(task, task, args)
    memory_temperature = getattr(args, "memory_temperature", None) if memory_temperature is None else memory_temperature
    memory_max_tokens = getattr(args, "memory_max_tokens", None) if memory_max_tokens is None else memory_max_tokens
    memory_extra = dict(getattr(args, "memory_lm_args", None) or {})
    memory_base = getattr(args, "memory_api_base", None)
    if memory_base is None and same_kind(args.lm, args.memory_lm):
        memory_base = args.api_base
    given = role_given(args, "memory")
    own = (
        memory_temperature is not None or memory_max_tokens is not None or memory_extra or getattr(args, "memory_api_base", None)
    )
    if not own:
        if not args.memory_lm:
            return with_limits(task, task, args)
        given = {**{k: v for k, v in task_given.items() if k in ("temperature", "max_tokens")}, **given}
        memory_settings = {**task_settings, "extra": memory_extra}
        memory_lm = resolve(args.memory_lm, api_base=memory_base, **memory_settings, given=given, role="memory LM", **common)
        return with_limits(task, memory_lm, args)
    if memory_temperature is None:  # the task LM's
        given.update({k: v for k, v in task_given.items() if k == "temperature"})
    if memory_max_tokens is None:
        given.update({k: v for k, v in task_given.items() if k == "max_tokens"})
    settings = dict(
        temperature=task_settings["temperature"] if memory_temperature is None else memory_temperature,
        max_tokens=args.max_tokens if memory_max_tokens is None else memory_max_tokens,
    )
    if args.memory_lm or getattr(args, "memory_api_base", None):
        spec = args.memory_lm or args.lm
        chosen = resolve(spec, api_base=memory_base, **settings, extra=memory_extra, given=given, role="memory LM", **common)
    else:
        chosen = with_generation(task, **settings, extra=memory_extra, given=given, role="memory LM")
    return with_limits(task, chosen, args)


# The options that hold each role's settings: (temperature, max tokens, keywords, the flag of a keyword).
ROLE_FIELDS = {
    "task": ("temperature", "max_tokens", "lm_args", "--lm-arg"),
    "memory": ("memory_temperature", "memory_max_tokens", "memory_lm_args", "--memory-lm-arg"),
}


def role_given(args: Any, role: str) -> dict[str, str]:
    """The settings of ``role`` (``"task"``, ``"memory"``) the user gave, each with where it came from
    (``args.origins``, from the command line; without those, a setting differing from its default counts as given,
    named by its flag)."""
    temperature, cap, keywords, flag = ROLE_FIELDS[role]
    origins = getattr(args, "origins", None)
    defaults = {f.name: f.default for f in fields(LMOptions)}
    given: dict[str, str] = {}
    for setting, name in (("temperature", temperature), ("max_tokens", cap)):
        if origins is not None:
            if name in origins:
                given[setting] = origins[name]
        elif getattr(args, name, None) != defaults.get(name):
            given[setting] = "--" + name.replace("_", "-")
    for key in getattr(args, keywords, None) or {}:
        given[key] = (origins or {}).get(f"{keywords}.{key}", f"{flag} {key}")
    return given


def same_kind(task: str | None, memory: str | None) -> bool:
    """Whether the memory model is the same kind as the task model: the same model, or the same provider prefix
    (``openai/o4-mini`` and ``openai/gpt-4.1``; not ``hosted_vllm/...`` and ``openai/...``)."""
    if memory is None or memory == task:
        return True
    if task is None or memory.startswith("local:") or task.startswith("local:"):
        return False
    return "/" in task and task.partition("/")[0] == memory.partition("/")[0]


def adapted_records(task: LMChoice, memory: LMChoice) -> list[dict[str, Any]]:
    """What :func:`resolve_lms` adapted to the models' providers, as a run's config records it."""
    found = list(task.adapted) + ([] if memory is task else list(memory.adapted))
    return [change.as_dict() for change in found]


def with_limits(task: LMChoice, memory: LMChoice, args: LMOptions) -> tuple[LMChoice, LMChoice]:
    """``task`` and ``memory`` with their roles' rate limits (:func:`memreason.lm.rate.limiter_for`: one per role and
    model in the process). The memory role on the task's model, with no limits of its own (``--memory-rpm``,
    ``--memory-tpm``), shares the task's: one provider quota, one limiter. An LM that already has a limiter keeps it
    when the options set no limits for its role (a study's trial runs on the study's LMs)."""
    same = memory is task  # one LM for both roles stays one (callers tell the roles apart by it)
    task = _limited(task, "task", args.rpm, args.tpm, args.api_base)
    if same and args.memory_rpm is None and args.memory_tpm is None:
        return task, task
    if (
        memory.spec == task.spec
        and args.memory_rpm is None
        and args.memory_tpm is None
        and not getattr(args, "memory_api_base", None)
    ):
        return task, replace(memory, limiter=task.limiter)
    return task, _limited(
        memory, "memory", args.memory_rpm, args.memory_tpm, getattr(args, "memory_api_base", None) or args.api_base
    )


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
