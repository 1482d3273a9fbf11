"""Rate limits (``memreason.lm.rate``): the window holds across threads, tokens per minute count real usage, a
provider's retry-after pauses every caller of the role. Unit tests run on a fake clock; the command-line tests run
against the loopback stub server enforcing a limit of its own, on a window scaled down to a second or two."""

import json
import re
import threading
import time

import dspy
import pytest
from dspy.utils.exceptions import LMRateLimitError

import memreason.eval.cli as cli
from memreason.eval.bench.rate_limits import most_in_window
from memreason.eval.harness.loop import run_each
from memreason.lm import ScriptedEngine, rate
from memreason.lm.faults import ErrorBudget, GuardedLM, LMFailure, RetryPolicy, retry_after
from memreason.lm.rate import RateLimit, estimate_tokens, limiter_for, slowed, waited
from memreason.lm.stub_server import StubServer

pytestmark = pytest.mark.timeout(120)


class FakeClock:
    """A clock that moves only when someone sleeps on it (each sleep moves it for everyone)."""

    def __init__(self):
        self.t, self._lock = 1000.0, threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self.t

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.t += max(seconds, 0.0)
        time.sleep(0.0005)  # let the other threads run


def limiter(**caps) -> tuple[RateLimit, FakeClock]:
    clock = FakeClock()
    return RateLimit(**caps, clock=clock.now, sleep=clock.sleep), clock


def test_the_window_holds_across_threads():
    limit, clock = limiter(rpm=10)
    starts, lock = [], threading.Lock()

    def worker():
        for _ in range(10):
            slot = limit.acquire()
            with lock:
                starts.append(slot.started)
            clock.sleep(0.3)  # the call takes a while
            limit.release(slot)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(starts) == 80  # every request went, none lost
    assert most_in_window(starts, 60.0) == 10  # never more than 10 started in any 60 s, and the cap was reached
    assert max(starts) - min(starts) >= 7 * 60  # 80 requests at 10 a minute take at least seven more windows
    assert limit.stats()["waits"]["rpm"] > 0 and limit.stats()["held_seconds"] > 0


def test_a_request_stays_in_the_window_until_a_window_after_its_answer():
    # a provider counts requests as they arrive, after they started: a window from the answer keeps its count under the cap
    limit, clock = limiter(rpm=1)
    first = limit.acquire()
    clock.sleep(5.0)  # a slow answer
    limit.release(first)
    second = limit.acquire()
    assert second.started >= first.ended + 60.0 and first.ended == first.started + 5.0


def test_tokens_per_minute_count_the_real_usage_once_known():
    limit, clock = limiter(tpm=1000)
    a = limit.acquire(400)
    limit.release(a, tokens=600)  # the answer's usage: more than the prompt's estimate
    clock.sleep(10.0)
    b = limit.acquire(300)  # 600 + 300 <= 1000: at once
    assert b.started == a.ended + 10.0
    limit.release(b, tokens=300)
    c = limit.acquire(200)  # 900 + 200 > 1000: waits until a leaves the window
    assert c.started >= a.ended + 60.0 and c.started < b.ended + 60.0
    assert limit.stats()["waits"] == {"tpm": 1}


def test_a_request_larger_than_the_cap_goes_alone():
    limit, clock = limiter(tpm=100)
    big = limit.acquire(5000)  # the window is empty: it goes at once
    assert big.started == clock.now()
    limit.release(big, tokens=5200)
    small = limit.acquire(10)  # waits for the big one to leave the window
    assert small.started >= big.ended + 60.0


def test_an_answer_from_the_cache_leaves_the_window():
    limit, _ = limiter(rpm=1)
    cached = limit.acquire()
    limit.release(cached, cached=True)  # the provider never saw it
    assert limit.acquire().started == cached.started


def test_a_pause_holds_every_thread_of_the_role():
    limit, clock = limiter()  # no caps: it shares the provider's pauses only
    paused_at = clock.now()
    limit.pause(12.0)
    starts = []
    threads = [threading.Thread(target=lambda: starts.append(limit.acquire().started)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(starts) == 4 and min(starts) >= paused_at + 12.0
    assert limit.stats()["waits"]["retry-after"] >= 1 and limit.stats()["provider_pauses"] == 1


def test_a_429s_retry_after_pauses_the_other_callers_of_the_role():
    limit, clock = limiter()
    seen = []

    def respond(call):
        seen.append(clock.now())
        if len(seen) == 1:
            error = LMRateLimitError("slow down")
            error.retry_after = 12.0
            raise error
        return {"answer": "ok"}

    engine = ScriptedEngine(respond)
    first = GuardedLM(engine.lm(), role="task", policy=RetryPolicy(retries=0), limiter=limit)
    with dspy.context(lm=first), pytest.raises(LMFailure):  # this call gives up: the pause stands all the same
        dspy.Predict("question -> answer")(question="one")
    other = first.copy()  # a thread's own copy (a repetition's, a worker's)
    done = []

    def ask():
        with dspy.context(lm=other):
            done.append(dspy.Predict("question -> answer")(question="two").answer)

    thread = threading.Thread(target=ask)
    thread.start()
    thread.join()
    assert done == ["ok"] and seen[1] >= seen[0] + 12.0


def test_retry_after_ms_is_honoured_on_either_route():
    for engine in ("auto", "litellm"):  # DSPy's own route reads retry-after-ms; on LiteLLM's it is read from the headers
        with StubServer(latency=0, fail_rate=0, limit=1, limit_window=0.6, retry_after="ms", lifetime=60) as stub:
            lm = dspy.LM("openai/stub", api_base=stub.url, api_key="stub-key", cache=False, engine=engine)
            guarded = GuardedLM(lm, role="task", policy=RetryPolicy(backoff=20.0))  # a backoff would wait 20 s
            guarded("first")
            started = time.perf_counter()
            guarded("second")  # 429: retry-after-ms ~600, then answered
            elapsed = time.perf_counter() - started
            log = stub.stats()["requests"]
        assert [r.get("limited", False) for r in log] == [False, True, False], engine
        assert 0.3 < elapsed < 5.0 and guarded.limiter.pauses == 1, (engine, elapsed)


def test_retry_after_is_read_from_headers_when_the_route_did_not():
    error = LMRateLimitError("slow down")
    cause = RuntimeError("429")
    cause.headers = {"Retry-After-Ms": "1500"}
    error.__cause__ = cause
    assert retry_after(error) == 1.5
    assert retry_after(LMRateLimitError("no hint")) is None


def test_estimate_counts_the_text_of_a_request():
    messages = [{"role": "system", "content": "x" * 400}, {"role": "user", "content": [{"type": "text", "text": "y" * 40}]}]
    assert estimate_tokens(messages=messages) == 110 and estimate_tokens("z" * 8) == 2


def test_one_limiter_per_role_and_model_in_a_process(monkeypatch):
    monkeypatch.setattr(rate, "WINDOW", 60.0)
    a = limiter_for("task", "openai/model-a", rpm=10)
    assert limiter_for("task", "openai/model-a", rpm=10) is a  # a table's next cell, a study's next trial
    assert limiter_for("memory", "openai/model-a", rpm=10) is not a
    assert limiter_for("task", "openai/model-b", rpm=10) is not a
    assert limiter_for("task", "openai/model-a", rpm=20) is not a


def test_the_progress_line_says_when_the_limits_slowed_the_loop(monkeypatch):
    clock = FakeClock()  # the process's limiter for this role and model, on a fake clock: a minute passes at once
    limit = limiter_for("task", "test/progress-line", rpm=1)
    monkeypatch.setattr(limit, "clock", clock.now)
    monkeypatch.setattr(limit, "sleep", clock.sleep)

    def work(item):
        limit.release(limit.acquire())
        return item

    class Bar:
        def __init__(self):
            self.postfixes = []

        def set_postfix(self, **fields):
            self.postfixes.append(fields)

        def update(self):
            pass

    bar = Bar()
    done = run_each([1, 2, 3], work, threads=3, bar=bar, errors=ErrorBudget(None), postfix=lambda rs: {"n": len(rs)})
    assert len(done) == 3 and bar.postfixes[-1]["n"] == 3 and bar.postfixes[-1]["failed"] == 0
    note = re.fullmatch(r"task (\d+)s \((.*)\)", bar.postfixes[-1]["slowed"])  # "task 120s (rpm)"
    assert note and int(note[1]) >= 119 and "rpm" in note[2]  # two requests waited a minute each


def test_slowed_says_nothing_when_nothing_waited():
    assert slowed(waited()) is None


# -- the command line, on the stub server enforcing its own limit ---------------------------------------------------


@pytest.fixture
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "stub-key")


def run(stub, out, *extra):
    argv = ["episodic", "--level", "1", "--limit", "16", "--threads", "16", "--lm", "openai/stub", "--api-base", stub.url]
    return cli.main([*argv, "--no-cache", "--backoff", "0.05", "--no-progress", "--no-report", "--out", str(out), *extra])


def test_16_threads_at_rpm_send_no_more_than_the_cap_in_any_window_and_lose_no_item(tmp_path, api_key, monkeypatch):
    monkeypatch.setattr(rate, "WINDOW", 1.0)  # requests per second, for the test's sake
    with StubServer(latency=0.05, fail_rate=0, limit=4, limit_window=1.0, lifetime=100) as stub:
        assert run(stub, tmp_path / "capped", "--rpm", "4") == 0
        capped = stub.stats()["requests"]
    with StubServer(latency=0.05, fail_rate=0, limit=4, limit_window=1.0, lifetime=100) as stub:
        assert run(stub, tmp_path / "uncapped") == 0  # the same run without the cap: it meets the server's 429s
        uncapped = stub.stats()["requests"]
    assert len(capped) == 16 and not any(r.get("limited") for r in capped)
    assert most_in_window([r["at"] for r in capped], 1.0) <= 4
    results = json.loads((tmp_path / "capped" / "results.json").read_text())
    assert results["examples"] == 16 and not results["failures"] and not results["faults"]
    limits = results["execution"]["rate_limits"]
    assert limits["task"]["rpm"] == 4 and limits["task"]["waits"]["rpm"] > 0 and limits["task"]["held_seconds"] > 1
    assert json.loads((tmp_path / "capped" / "config.json").read_text())["rpm"] == 4
    assert any(r.get("limited") for r in uncapped)
    assert json.loads((tmp_path / "uncapped" / "results.json").read_text())["faults"]["rate_limit"] > 0


def test_the_rate_limits_are_no_part_of_a_runs_identity(tmp_path, api_key):
    out = tmp_path / "run"
    with StubServer(latency=0, fail_rate=0, lifetime=100) as stub:
        assert run(stub, out, "--limit", "2", "--rpm", "600") == 0
        assert cli.main(["--resume", str(out), "--api-base", stub.url, "--rpm", "1000", "--tpm", "100000"]) == 0
        assert run(stub, out, "--limit", "2", "--tpm", "5000", "--memory-rpm", "30") == 0  # the same run, other limits


def test_a_copied_program_waits_for_the_same_limiter_and_a_pickled_one_keeps_the_caps():
    import copy
    import pickle

    limit = RateLimit(rpm=5, tpm=900, name="memory")
    limit.pause(30.0)
    assert copy.deepcopy({"lm": limit})["lm"] is limit  # DSPy's optimizers deep-copy programs: one provider, one limiter
    restored = pickle.loads(pickle.dumps(limit))
    assert (restored.rpm, restored.tpm, restored.name, restored.paused_until, restored.slots) == (5, 900, "memory", 0.0, [])
