"""One loop over examples: ``threads`` at a time, a progress bar, and the run's error budget.

    done = run_each(items, work, threads=8, bar=bar, errors=session.errors, postfix=score)
    # [(item, result), ...] in the order they finished (``ordered=True``: input order)

``work(item)`` returns a result, or None when it did not run (the error budget was spent:
the item stays undone, and a resumed run does it). ``on_result(item, result)`` is called
in this thread as each result comes in (in input order with ``ordered=True``), before the
bar moves. On Ctrl-C (or SIGTERM, which the command line turns into one), or an error in
``on_result``, items not started stay undone and started ones finish before the exception
leaves (their results are kept by ``work``); an interrupt says so on stderr at once. A second
interrupt while they finish leaves at once, their threads still running:
:func:`threads_left_running` is then true, and the command line exits without waiting for them
(they are done again when the run continues).

When the rate limits (``--rpm``, ``--tpm``, a provider's ``retry-after``: :mod:`memreason.lm.rate`) held requests
back during the loop, the bar says for how long and why (``slowed=task 37s (rpm)``).

``after_first`` is called once the first item has finished alone, before the others start:
a local server then copies the prompt prefix all items share (instructions, episodes,
memory) from that slot into the others, instead of every slot computing it at once.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor, as_completed, wait
from typing import TYPE_CHECKING, Any, Callable, Sequence, TypeVar

from memreason.lm.rate import slowed, waited

if TYPE_CHECKING:
    from memreason.lm.faults import ErrorBudget

T = TypeVar("T")
R = TypeVar("R")

log = logging.getLogger(__name__)
_LEFT_RUNNING = threading.Event()  # a second interrupt left started items running in their threads


def threads_left_running() -> bool:
    """Whether a second interrupt left items running in this process (exit without joining their threads)."""
    return _LEFT_RUNNING.is_set()


def run_each(
    items: Sequence[T],
    work: Callable[[T], R | None],
    *,
    threads: int,
    bar,
    errors: ErrorBudget,
    postfix: Callable[[list[R]], dict[str, Any]] | None = None,
    ordered: bool = False,
    after_first: Callable[[], None] | None = None,
    on_result: Callable[[T, R], None] | None = None,
) -> list[tuple[T, R]]:
    """``(item, result)`` for every item whose ``work`` ran, updating ``bar`` as each finishes."""
    done: list[tuple[T, R]] = []
    if not items:
        return done
    pool = ThreadPoolExecutor(max_workers=threads)
    futures: dict[Future, T] = {}
    interrupted = False
    held_before = waited()
    try:
        if after_first is not None and threads > 1 and len(items) > 1:
            futures[pool.submit(work, items[0])] = items[0]
            wait(futures)
            after_first()
        for item in items[len(futures) :]:
            futures[pool.submit(work, item)] = item
        for future in futures if ordered else as_completed(futures):
            result = future.result()
            if result is None:
                if ordered:
                    break
                continue
            if on_result is not None:
                on_result(futures[future], result)
            done.append((futures[future], result))
            fields = {**postfix([r for _, r in done]), "failed": errors.failed} if postfix is not None else {}
            if note := slowed(held_before):
                fields["slowed"] = note
            if fields:
                bar.set_postfix(**fields)
            bar.update()
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        _finish_started(pool, futures, unit=errors.unit if interrupted else None)
    return done


def _finish_started(pool: ThreadPoolExecutor, futures: dict[Future, Any], *, unit: str | None) -> None:
    """Cancel the items not started and wait for the started ones; a second interrupt stops the wait.

    ``unit``: what the items are, given when an interrupt stops the loop (said on stderr)."""
    pool.shutdown(wait=False, cancel_futures=True)
    running = [future for future in futures if not future.done()]
    if unit is not None and running:
        log.warning(
            "stopping; %s in progress: %d, which finish first and are kept (interrupt again to stop now: "
            "they are then done again when the run continues)",
            unit,
            len(running),
        )
    try:
        while not all(future.done() for future in running):
            wait(running, timeout=0.5)  # a short wait: the main thread sees the next signal at once
    except KeyboardInterrupt:
        _LEFT_RUNNING.set()
        raise


def finish_example(
    record: dict[str, Any], spent: dict[str, Any], failure: dict[str, Any] | None, *, unit: str, calls, traces, writer, session
) -> dict[str, Any]:
    """Complete one example's line and keep it: what it spent (``spent``, a meter's record) and its failure; then
    its trace under ``unit`` before its line (a line always has its trace), the line, and the failure counted."""
    record = {
        **record,
        "tokens": spent["tokens"],
        "usage": spent["usage"],
        "faults": spent["faults"],
        "retries": spent["retries"],
        "lms": spent.get("lms") or {},
        "failure": failure,
        "error": f"{failure['kind']}: {failure['reason']}" if failure else None,
    }
    traces.write(unit, calls)
    writer.write(record)
    if failure:
        session.errors.fail(failure)
    return record
