"""One loop over examples: ``threads`` at a time, a progress bar, and the run's error budget.

    for item, result in run_each(items, work, threads=8, bar=bar, errors=session.errors, postfix=score):
        ...                      # each finished item, in the order they finish (``ordered=True``: input order)

``work(item)`` returns a result, or None when it did not run (the error budget was spent:
the item stays undone, and a resumed run does it). On Ctrl-C, items not started stay undone
and started ones finish and are kept.

``after_first`` is called once the first item has finished alone, before the others start:
a local server then copies the prompt prefix all items share (instructions, episodes,
memory) from that slot into the others, instead of every slot computing it at once.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor, as_completed, wait
from typing import Any, Callable, Iterator, Sequence, TypeVar

from memreason.lm.faults import ErrorBudget

T = TypeVar("T")
R = TypeVar("R")


def run_each(items: Sequence[T], work: Callable[[T], R | None], *, threads: int, bar, errors: ErrorBudget,
             postfix: Callable[[list[R]], dict[str, Any]] | None = None, ordered: bool = False,
             after_first: Callable[[], None] | None = None) -> Iterator[tuple[T, R]]:
    """Yield ``(item, result)`` for every item whose ``work`` ran, updating ``bar`` as each finishes."""
    if not items:
        return
    pool = ThreadPoolExecutor(max_workers=threads)
    done: list[R] = []
    try:
        futures: dict[Future, T] = {}
        if after_first is not None and threads > 1 and len(items) > 1:
            futures[pool.submit(work, items[0])] = items[0]
            wait(futures)
            after_first()
        for item in items[len(futures):]:
            futures[pool.submit(work, item)] = item
        for future in (futures if ordered else as_completed(futures)):
            result = future.result()
            if result is None:
                if ordered:
                    break
                continue
            done.append(result)
            if postfix is not None:
                bar.set_postfix(**postfix(done), failed=errors.failed)
            bar.update()
            yield futures[future], result
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
