"""run_each: the one loop over examples (threads, progress, error budget)."""

import threading
import time

import pytest

from memreason.eval.harness.loop import run_each
from memreason.lm.faults import ErrorBudget


class Bar:
    def __init__(self):
        self.updates = 0

    def update(self):
        self.updates += 1

    def set_postfix(self, **_):
        pass


def test_ordered_results_come_in_input_order_and_stop_at_the_first_item_not_run():
    def work(i):
        time.sleep(0.05 * (5 - i))  # later items finish first
        return None if i == 3 else i * 10

    seen = []
    done = run_each(
        list(range(5)),
        work,
        threads=5,
        bar=Bar(),
        errors=ErrorBudget(None),
        ordered=True,
        on_result=lambda item, result: seen.append((item, result)),
    )
    assert seen == done == [(0, 0), (1, 10), (2, 20)]


def test_an_error_while_keeping_a_result_leaves_no_started_item_running():
    started, finished, lock = set(), set(), threading.Lock()

    def work(i):
        with lock:
            started.add(i)
        time.sleep(0.2)
        with lock:
            finished.add(i)
        return i

    def keep(item, result):
        raise KeyboardInterrupt  # Ctrl-C while the first result is written

    bar = Bar()
    with pytest.raises(KeyboardInterrupt):
        run_each(list(range(8)), work, threads=2, bar=bar, errors=ErrorBudget(None), ordered=True, on_result=keep)
    with lock:
        assert started and started == finished  # started ones finished before the interrupt left
        assert len(started) < 8  # the rest were never started
    assert bar.updates == 0


def test_an_interrupt_says_what_is_still_running_and_a_second_one_stops_without_waiting(monkeypatch, caplog):
    import os
    import signal

    from memreason.eval.harness import loop

    monkeypatch.setattr(loop, "_LEFT_RUNNING", threading.Event())  # process-wide: a fresh one for this test
    slow_started, slow_finished = threading.Event(), threading.Event()

    def work(i):
        if i == 1:
            slow_started.set()
            time.sleep(3)
            slow_finished.set()
        return i

    second = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))  # Ctrl-C again while item 1 runs

    def keep(item, result):
        assert slow_started.wait(10)  # item 1 runs (not left queued, where the interrupt would cancel it)
        second.start()
        raise KeyboardInterrupt  # the first Ctrl-C, as item 0's result comes in

    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with caplog.at_level("WARNING"), pytest.raises(KeyboardInterrupt):
            run_each([0, 1], work, threads=2, bar=Bar(), errors=ErrorBudget(None, unit="scenes"), on_result=keep)
    finally:
        second.cancel()  # never fired outside the wait (a stray Ctrl-C would stop the test session)
        second.join()
        signal.signal(signal.SIGINT, before)
    assert "stopping; scenes in progress: 1, which finish first" in caplog.text
    assert not slow_finished.is_set()  # left without waiting for it
    assert loop.threads_left_running()


def test_one_interrupt_waits_for_the_started_items_and_leaves_no_thread_behind(monkeypatch):
    from memreason.eval.harness import loop

    monkeypatch.setattr(loop, "_LEFT_RUNNING", threading.Event())
    finished, second_started = [], threading.Event()

    def work(i):
        if i:
            second_started.set()
            time.sleep(0.3)
        else:  # item 1 is running, not queued (a queued item is cancelled by the interrupt), when item 0 ends
            assert second_started.wait(10)
        finished.append(i)
        return i

    def keep(item, result):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_each([0, 1], work, threads=2, bar=Bar(), errors=ErrorBudget(None), on_result=keep)
    assert sorted(finished) == [0, 1] and not loop.threads_left_running()
