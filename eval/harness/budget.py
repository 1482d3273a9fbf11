"""A run's spending limit (``--budget-tokens``, ``--budget-usd``): the spend so far, the estimate, the stop.

    check_prices(options.budget_usd, [lm, memory_lm])     # before any model work: a dollar cap needs prices
    spend = new_spend(options)                             # None without a cap
    add_recorded(spend, run_dir, task.spec, memory.spec)   # what the run's records hold (earlier processes)
    log_estimate(spend, unit="scenes", todo=150, done=0, calls=1.0, prompt=420, basis="...")
    session = RunSession.start(..., spend=spend)           # each answered call adds to it; no new item past the cap
    results = session.finish(..., stopped="budget")        # results["execution"]["stopped"], ["budget"]
    check_stopped(results, run_dir)                        # after results.json is written: RunAborted, exit 1

What a run has spent is what its records hold (the example lines, the memory records, the
memory writes: tokens of every LM call, an answer replayed from the cache included) plus what
this process's calls add. The estimate is plain arithmetic on the plan, made before any LM is called:
items left x calls per item x prompt tokens per call; from the run's own records when it has
some, else calls per item from the program's knobs and prompt tokens as the characters of the
first items' inputs (and the context every call carries) over four.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any, Iterable, Sequence

from memreason.lm import LMChoice
from memreason.lm.cost import price
from memreason.lm.faults import GuardedLM, RetryPolicy, RunAborted
from memreason.lm.spend import Spend
from memreason.lm.tokens import Tokens

from .errors import UsageError
from .options import LMOptions
from .resume import read_examples
from .usage import UsageTally

__all__ = [
    "STOPPED_BY_BUDGET",
    "add_recorded",
    "answered_so_far",
    "capped",
    "check_prices",
    "check_stopped",
    "chars_to_tokens",
    "log_estimate",
    "new_spend",
    "recorded_usage",
    "saved_rates",
    "stopped_by_budget",
]

log = logging.getLogger(__name__)

STOPPED_BY_BUDGET = "budget"  # results["execution"]["stopped"] of a run that reached its spending limit
CHARS_PER_TOKEN = 4  # the estimate's rule of thumb
_MEMORY_RECORD = re.compile(r"memory-run\d+\.json")


def new_spend(options: LMOptions, *, refuse: bool = False) -> Spend | None:
    """The spending limit ``options`` asks for (``budget_tokens``, ``budget_usd``), or None without one."""
    tokens, usd = options.budget_tokens, options.budget_usd
    if tokens is None and usd is None:
        return None
    return Spend(max_tokens=tokens, max_usd=usd, refuse=refuse)


def check_prices(budget_usd: float | None, specs: Iterable[str | None]) -> None:
    """A dollar cap needs a price for every LM the command calls (``None``: the embedded model): :class:`UsageError`
    naming the first without one, before any model work."""
    if budget_usd is None:
        return
    for spec in specs:
        name = spec or "embedded"
        if price(name) is None:
            raise UsageError(
                f"--budget-usd needs the price of every LM the command calls, and LiteLLM's price list has none for "
                f"{name!r} (a local model has none): cap it with --budget-tokens instead"
            )


def capped(choice: LMChoice, role: str, spend: Spend | None, policy: RetryPolicy | None = None) -> LMChoice:
    """``choice`` with its LM guarded, counting into ``spend`` and waiting for its role's rate limit (unchanged with
    neither): for commands that hand the LM to code of their own making (a DSPy optimizer), where a call past the cap
    is refused (``spend.refuse``)."""
    limited = choice.limiter is not None and choice.limiter.limits
    if spend is None and not limited:
        return choice
    guarded = GuardedLM(
        choice.lm,
        role=role,
        policy=policy,
        spend=spend,
        price=price(choice.spec) if spend is not None else None,
        limiter=choice.limiter,
    )
    return LMChoice(choice.spec, guarded, local=choice.local, context=choice.context, limiter=choice.limiter)


# -- what the run's records hold ----------------------------------------------------------------


def recorded_usage(run_dir: Path) -> dict[str, Tokens]:
    """Tokens by role (``memory``, ``task``) that ``run_dir``'s records hold: its example lines (the latest per item),
    its memory records (Experience-Transfer) and its memory writes (ARC)."""
    tally = UsageTally()
    run_dir = Path(run_dir)
    for record in read_examples(run_dir / "examples.jsonl", repair=False).values():
        tally.add(record, role="task")
    for path in sorted(run_dir.glob("memory-run*.json")):
        if _MEMORY_RECORD.fullmatch(path.name):
            record = _json(path)
            if isinstance(record, dict):
                tally.add(record, role="memory")
    for log_file in sorted(run_dir.glob("memory/run*/writes.jsonl")):
        for entry in _writes(log_file):
            tally.add(entry, role="memory")
    return tally.roles()


def add_recorded(spend: Spend | None, run_dir: Path, task_spec: str | None, memory_spec: str | None) -> None:
    """Add to ``spend`` what ``run_dir``'s records hold, at the prices of the run's task and memory LMs."""
    if spend is None or not Path(run_dir).is_dir():
        return
    roles = recorded_usage(run_dir)
    spend.add(roles["task"], price(task_spec or "embedded"), earlier=True)
    spend.add(roles["memory"], price(memory_spec or task_spec or "embedded"), earlier=True)


def saved_rates(records: Iterable[dict[str, Any]]) -> tuple[float, float] | None:
    """(LM calls per item, prompt tokens per call) over the item records ``records``, or None when they hold no call."""
    tally, items = UsageTally(), 0
    for record in records:
        tally.add(record, role="task")
        items += 1
    total = sum(tally.roles().values(), Tokens())
    if not items or not total.calls:
        return None
    return total.calls / items, total.prompt / total.calls


def chars_to_tokens(texts: Sequence[str], context: str = "") -> float:
    """Prompt tokens per call estimated from the first items' input texts and the ``context`` every call carries."""
    if not texts:
        return len(context) / CHARS_PER_TOKEN
    return sum(len(t) + len(context) for t in texts) / len(texts) / CHARS_PER_TOKEN


def log_estimate(
    spend: Spend | None,
    *,
    unit: str,
    todo: int,
    done: int,
    calls: float,
    prompt: float,
    basis: str,
    spec: str | None = None,
) -> None:
    """Log what the run will roughly spend against its cap (nothing without a cap): ``todo`` items left (``done``
    kept from before), ``calls`` per item, ``prompt`` tokens per call (``basis`` says from what), priced at ``spec``."""
    if spend is None:
        return
    total = todo * calls * prompt
    found = price(spec) if spec else None
    dollars = f" (${found.input * total:.4f})" if found is not None else ""
    log.info(
        "budget estimate: %d %s to answer (%d done before), about %s LM call%s each, about %s prompt tokens a call (%s): "
        "about %s prompt tokens%s plus the answers; spent so far %s",
        todo,
        unit,
        done,
        f"{calls:.3g}",
        "" if calls == 1 else "s",
        f"{prompt:,.0f}",
        basis,
        f"{total:,.0f}",
        dollars,
        spend.describe(),
    )


# -- a stopped run ------------------------------------------------------------------------------


def answered_so_far(records: dict[tuple[int, str], dict[str, Any]], runs: int, ids: Sequence[str]) -> list[list[dict[str, Any]]]:
    """The records of a run stopped before its end, per repetition that started: the items (in ``ids`` order) every
    started repetition answered, so each holds the same items (empty when none answered any)."""
    started = [r for r in range(runs) if any((r, i) in records for i in ids)]
    common = [i for i in ids if all((r, i) in records for r in started)]
    return [[records[(r, i)] for i in common] for r in started] if common else []


def stopped_by_budget(results: dict[str, Any]) -> bool:
    return (results.get("execution") or {}).get("stopped") == STOPPED_BY_BUDGET


def check_stopped(results: dict[str, Any], run_dir: Any) -> None:
    """Raise :class:`RunAborted` (exit 1, the work kept) when the run stopped at its spending limit, as
    :meth:`RunSession.finish` recorded in ``results["execution"]``. Call it once ``results.json`` is written."""
    if not stopped_by_budget(results):
        return
    budget = results["execution"].get("budget") or {}
    spend = Spend(
        max_tokens=budget.get("budget_tokens"),
        max_usd=budget.get("budget_usd"),
        tokens=budget.get("spent_tokens") or 0,
        usd=budget.get("spent_usd") or 0.0,
    )
    raise RunAborted(spend.why(run_dir))


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _writes(path: Path) -> list[dict[str, Any]]:
    """A memory-write log's entries, the latest per write point (a torn line is skipped)."""
    by_point: dict[tuple[int, int], dict[str, Any]] = {}
    try:
        text = path.read_text()
    except OSError:
        return []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
            by_point[(int(entry.get("pass", 0)), int(entry["after_problem"]))] = entry
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
    return list(by_point.values())
