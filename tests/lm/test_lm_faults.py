"""LM faults: retried with backoff, counted by kind, recorded per example; runs survive them.

The end-to-end tests talk to the loopback stub server (``memreason.lm.stub_server``) through
DSPy's real OpenAI client; the unit tests use scripted engines.
"""

import json
import time

import dspy
import pytest
from dspy.utils.exceptions import LMRateLimitError, LMServerError, LMTimeoutError, LMTransportError

import memreason.eval.cli as cli
from memreason.eval.experience_transfer.run import ExperienceTransferConfig, evaluate_experience_transfer
from memreason.lm import LMChoice, ScriptedEngine
from memreason.lm.faults import ErrorBudget, GuardedLM, LMFailure, RetryPolicy, fault_kind
from memreason.lm.stub_server import StubServer
from memreason.lm.tokens import Meter, metering
from tests.helpers.scripted_answers import oracle_counter

FAST = ["--backoff", "0.01", "--no-progress", "--no-report"]


@pytest.fixture
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "stub-key")


def stub_argv(stub, out, *extra):
    return ["episodic", "--level", "1", "--lm", "openai/stub", "--api-base", stub.url, "--out", str(out), *FAST, *extra]


def lines(out):
    return [json.loads(line) for line in (out / "examples.jsonl").read_text().splitlines()]


def test_a_100_example_run_survives_a_faulty_server(tmp_path, api_key):
    out = tmp_path / "run"
    # answers take 0.1 s, hung ones 6 s: a 3 s timeout tells them apart with room for a loaded machine and for
    # pauses of this process, which serves the stub too (at 0.8 s the test failed once while the whole suite ran
    # on two cores; a resume test with the same margin of 1 s failed the same way)
    with StubServer(latency=0.1, fail_rate=0.2, seed=3, hang=6.0, lifetime=180) as stub:
        code = cli.main(stub_argv(stub, out, "--limit", "100", "--threads", "8", "--lm-timeout", "3"))
        served = stub.stats()["served"]
    assert code == 0
    records = lines(out)
    assert len(records) == 100 and len({r["id"] for r in records}) == 100
    for r in records:  # a score, or a recorded failure (and then scored wrong)
        assert isinstance(r["prediction"], int) or (r["failure"]["kind"] and r["failure"]["reason"] and not r["correct"])
        assert sum(r["faults"].values()) - sum(r["retries"].values()) == (1 if r["failure"] else 0)
    results = json.loads((out / "results.json").read_text())
    faults = {kind: n for kind, n in served.items() if kind != "ok" and n}
    assert set(faults) == {"rate_limit", "server_error", "timeout", "unparseable"}  # the seed serves every kind
    assert results["faults"] == faults  # every faulty answer the server gave was seen and counted
    failed = [r for r in records if r["failure"]]
    assert sum(results["failures"].values()) == len(failed)
    assert sum(results["retries"].values()) == sum(faults.values()) - len(failed)
    # every answer with text was metered: the good ones and the garbage
    assert results["tokens"]["task"]["calls"] == served["ok"] + served["unparseable"]
    assert results["tokens_by_step"]["task"]["reasoner"]["calls"] == results["tokens"]["task"]["calls"]


def test_max_errors_stops_a_failing_run_and_keeps_its_work(tmp_path, api_key, capsys):
    out = tmp_path / "run"
    with StubServer(latency=0, fail_rate=1.0, faults=("server_error",)) as down:
        code = cli.main(stub_argv(down, out, "--limit", "12", "--lm-retries", "1", "--max-errors", "2"))
        assert down.served["server_error"] == 3 * 2  # three scenes, each tried twice
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and "--max-errors 2" in err and "Traceback" not in err
    assert [r["failure"]["kind"] for r in lines(out)] == ["server_error"] * 3
    assert not (out / "results.json").exists()

    with StubServer(latency=0, fail_rate=0) as up:  # the server is back: continue, answering the failures again
        assert cli.main(stub_argv(up, out, "--limit", "12", "--retry-failed")) == 0
        assert up.served["ok"] == 12
    results = json.loads((out / "results.json").read_text())
    assert results["examples"] == 12 and results["failures"] == {}
    assert results["faults"] == {} and results["retries"] == {}  # the failed attempts were replaced


def test_a_refused_key_stops_the_run_at_once(tmp_path, api_key, capsys):
    out = tmp_path / "run"
    with StubServer(latency=0, fail_rate=1.0, faults=("auth",)) as stub:
        assert cli.main(stub_argv(stub, out, "--limit", "12")) == 1
        assert stub.served["auth"] == 1  # not retried, and no other scene tried
    err = capsys.readouterr().err
    assert "the provider refused the calls (auth: " in err and err.count("\n") == 1
    assert [r["failure"]["kind"] for r in lines(out)] == ["auth"]


def test_memory_that_cannot_be_built_stops_the_run_and_it_resumes(tmp_path, api_key, capsys):
    out = tmp_path / "run"
    argv = ["reflexion_all", "--level", "1", "--lm", "openai/stub", "--out", str(out), "--limit", "3", "--lm-retries", "2", *FAST]
    with StubServer(latency=0, fail_rate=1.0, faults=("rate_limit",)) as down:
        assert cli.main([*argv, "--api-base", down.url]) == 1
        assert down.served["rate_limit"] == 3
    err = capsys.readouterr().err
    assert "building the memory of run 1 failed (rate_limit" in err and err.count("\n") == 1
    assert not (out / "memory-run0.json").exists() and not (out / "examples.jsonl").read_text()

    with StubServer(latency=0, fail_rate=0) as up:
        assert cli.main([*argv, "--api-base", up.url]) == 0
        assert up.served["ok"] == 1 + 3  # one reflection, three scenes
    memory = json.loads((out / "memory-run0.json").read_text())
    assert memory["hypotheses"] == ["stub reflection"] and memory["usage"]["memory"]["reflect_on_episodes"]["calls"] == 1


# -- unit tests with scripted engines -----------------------------------------------------------


def evaluate(tmp_path, engine, name="run", **config):
    config = ExperienceTransferConfig(program="episodic", level=1, **{"limit": 3, **config})
    choice = LMChoice("scripted", engine.lm(cache=True), local=False)
    return evaluate_experience_transfer(
        config, task=choice, memory=choice, run_dir=tmp_path / name, progress=False, policy=RetryPolicy(backoff=0)
    )


@pytest.fixture
def cache_dir(tmp_path):
    dspy.configure_cache(enable_disk_cache=True, enable_memory_cache=True, disk_cache_dir=str(tmp_path / "cache"))


def test_an_empty_answer_is_asked_again_past_the_cache(tmp_path, cache_dir):
    count, seen = oracle_counter(), set()

    def respond(call):  # the first answer to each prompt is empty (and cached by DSPy)
        if call.user_text not in seen:
            seen.add(call.user_text)
            return ""
        return count(call)

    engine = ScriptedEngine(respond)
    results = evaluate(tmp_path, engine)
    assert len(engine.calls) == 6 and results["accuracy"]["mean"] == 1.0
    assert results["faults"] == {"empty": 3} and results["retries"] == {"empty": 3}


def test_an_unparseable_answer_is_asked_again_in_the_json_format(tmp_path, cache_dir):
    count = oracle_counter()
    engine = ScriptedEngine(lambda call: count(call) if call.response_format else "no fields at all")
    results = evaluate(tmp_path, engine)
    assert results["accuracy"]["mean"] == 1.0
    assert [c.response_format is not None for c in engine.calls] == [False, True] * 3
    assert results["faults"] == {"unparseable": 3} == results["retries"]


def test_an_answer_that_never_parses_is_a_recorded_failure(tmp_path, cache_dir):
    engine = ScriptedEngine(lambda call: "no fields at all")
    results = evaluate(tmp_path, engine, limit=2)
    assert len(engine.calls) == 2 * 4  # four attempts per scene (chat, JSON, chat, JSON), each a real call
    assert results["failures"] == {"unparseable": 2} and results["faults"] == {"unparseable": 8}
    record = lines(tmp_path / "run")[0]
    assert record["failure"]["kind"] == "unparseable" and "no fields at all" in record["failure"]["reason"]
    assert record["prediction"] is None and record["correct"] is False


def test_faults_behind_a_cached_answer_count_again_when_it_is_replayed(tmp_path, cache_dir):
    count, seen = oracle_counter(), set()

    def respond(call):  # every prompt is rate-limited once, then answered
        if call.user_text not in seen:
            seen.add(call.user_text)
            raise LMRateLimitError("slow down")
        return count(call)

    engine = ScriptedEngine(respond)
    first = evaluate(tmp_path, engine, name="first")
    assert first["faults"] == {"rate_limit": 3} == first["retries"] and len(engine.calls) == 6
    replayed = evaluate(tmp_path, engine, name="replayed")  # a fresh run directory, the same cache
    assert len(engine.calls) == 6  # every answer came from the cache...
    assert replayed["faults"] == first["faults"] and replayed["retries"] == first["retries"]  # ...with its faults
    assert replayed["tokens"] == first["tokens"]  # and its tokens


def test_the_guarded_copy_shares_its_engine_so_a_local_model_stays_behind_its_lock():
    engine = ScriptedEngine(lambda call: {"count": 1})
    lm = engine.lm()
    guarded = GuardedLM(lm, role="task")
    assert guarded.inner is not lm and guarded.inner.engine is engine is lm.engine  # one engine, one lock
    assert guarded.num_retries == 0 and lm.num_retries == 3  # DSPy's slow retries off in our copy only
    assert guarded.model == lm.model and guarded.supports_response_schema


@pytest.mark.parametrize(
    "error, kind",
    [
        (LMRateLimitError("slow down"), "rate_limit"),
        (LMServerError("boom"), "server_error"),
        (LMTimeoutError("late"), "timeout"),
        (LMTransportError("read timed out waiting for headers"), "timeout"),
        (LMTransportError("connection refused"), "connection"),
        (ValueError("bad request"), None),
        (LMFailure("rate_limit", "x", 4), None),  # already retried below
    ],
)
def test_fault_kinds(error, kind):
    assert fault_kind(error) == kind


def test_backoff_doubles_up_to_its_cap_and_honours_retry_after():
    policy = RetryPolicy(backoff=1.0, cap=5.0, jitter=0.0)
    assert [policy.delay(a) for a in range(4)] == [1.0, 2.0, 4.0, 5.0]
    hinted = LMRateLimitError("wait")
    hinted.retry_after = 0.25
    assert policy.delay(3, hinted) == 0.25
    jittery = RetryPolicy(backoff=1.0, jitter=0.1)
    assert all(1.0 <= jittery.delay(0) <= 1.1 for _ in range(20))


def test_the_error_budget_stops_past_max_errors_or_at_once_on_a_refused_key():
    budget = ErrorBudget(max_errors=1, unit="tasks")
    budget.fail({"kind": "timeout", "reason": "slow"})
    assert not budget.stopping  # one failure is within --max-errors 1
    budget.fail({"kind": "rate_limit", "reason": "429"})
    assert budget.stopping and budget.why().startswith("2 tasks failed in this process (--max-errors 1); last: rate_limit: 429")
    refused = ErrorBudget(max_errors=None)
    refused.fail({"kind": "timeout", "reason": "slow"})
    assert not refused.stopping  # no limit
    refused.fail({"kind": "auth", "reason": "bad key"})
    assert refused.stopping and "the provider refused the calls (auth: bad key)" in refused.why()


# -- each fault of the loopback server, end to end: retried or recorded, and the exit code ---------------


@pytest.mark.parametrize("fault", ["server_error", "rate_limit", "timeout", "html", "empty_body", "unparseable"])
def test_a_fault_that_passes_is_retried_and_the_run_exits_0(tmp_path, api_key, fault):
    # a fifth of the calls meet the fault once; the repeat is a new request (a new seen-count), which passes or not by seed
    with StubServer(latency=0, fail_rate=0.3, seed=3, hang=1.0, faults=(fault,), lifetime=60) as stub:
        code = cli.main(stub_argv(stub, tmp_path / "run", "--limit", "10", "--lm-timeout", "0.5", "--lm-retries", "4"))
        served = stub.stats()["served"]
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert code == 0 and served[fault] > 0
    assert results["execution"]["failed_examples"] == 0  # every fault was retried past
    counted = sum(results["faults"].values())
    assert counted >= served[fault]  # and counted (an unparseable answer may cost a second format too)


@pytest.mark.parametrize("fault", ["server_error", "html", "empty_body"])
def test_a_server_that_always_faults_is_a_recorded_failure_and_exit_1(tmp_path, api_key, capsys, fault):
    with StubServer(latency=0, fail_rate=1.0, faults=(fault,), lifetime=60) as stub:
        code = cli.main(stub_argv(stub, tmp_path / "run", "--limit", "2", "--lm-retries", "1"))
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and err[-1].startswith("error: run stopped: no LM call answered and every one of the 2 scenes")
    examples = [json.loads(line) for line in (tmp_path / "run" / "examples.jsonl").read_text().splitlines()]
    assert {e["failure"]["kind"] for e in examples} == {"server_error"}  # a gateway page counts as a server fault


def test_a_server_killed_mid_run_ends_in_exit_1_once_nothing_answers(tmp_path, api_key, capsys):
    stub = StubServer(latency=0, fail_rate=0, lifetime=60).start()
    url = stub.url
    stub.stop()  # killed before the run: every call meets a closed port
    argv = ["episodic", "--level", "1", "--limit", "3", "--lm", "openai/stub", "--api-base", url, "--out", str(tmp_path / "r")]
    assert cli.main([*argv, *FAST, "--lm-retries", "1"]) == 1
    assert "connection" in capsys.readouterr().err


def guarded_n2_twice(lm) -> list:
    """The tokens metered for the same ``n`` = 2 call made twice: live, then from DSPy's cache."""
    guarded, predict, spent = GuardedLM(lm, role="task"), dspy.Predict("question -> answer"), []
    for _ in range(2):
        meter = Meter()
        with dspy.context(lm=guarded), metering(meter):
            out = predict(question="what?", config={"n": 2, "temperature": 0.7})
        assert len(out.completions.answer) == 2
        spent.append(meter.tokens())
    return spent


def test_a_replayed_answer_of_several_completions_counts_its_tokens_on_litellms_route(cache_dir, api_key):
    # llama-server's n > 1 calls go by LiteLLM; DSPy's cache drops such a response's usage on a hit
    with StubServer(latency=0, fail_rate=0) as stub:
        live, replayed = guarded_n2_twice(dspy.LM("openai/stub", api_base=stub.url, cache=True, engine="litellm"))
        assert stub.served["ok"] == 1  # one request for both answers; the second call was the cache's
    assert live.prompt > 0 and replayed == live


def test_a_replayed_answer_of_several_completions_counts_its_tokens_on_dspys_engine(cache_dir):
    engine = ScriptedEngine(lambda call: {"answer": "one two three"})
    live, replayed = guarded_n2_twice(engine.lm(cache=True))
    assert len(engine.calls) == 2  # DSPy's engine asks once per completion, and only the first time
    assert live.prompt > 0 and replayed == live


def test_a_programs_own_record_of_a_calls_tokens_counts_a_replay_from_the_cache(cache_dir):
    # an ARC attempt's steps keep their tokens through programs.shared.usage; a resumed run replays from the cache
    from memreason.programs.shared.usage import usage

    engine = ScriptedEngine(lambda call: {"answer": "one two three"})
    guarded, predict, spent = GuardedLM(engine.lm(cache=True), role="task"), dspy.Predict("question -> answer"), []
    for _ in range(2):
        with dspy.context(lm=guarded), metering(Meter()) as meter, usage() as block:
            predict(question="what?")
        spent.append((dict(block), meter.tokens()))
    assert len(engine.calls) == 1  # the second answer came from the cache
    (live, live_meter), (replayed, replayed_meter) = spent
    assert live["calls"] == 1 and live["prompt"] > 0 and replayed == live
    assert (live["prompt"], live["completion"]) == (live_meter.prompt, live_meter.completion) and replayed_meter == live_meter


def test_threads_asking_the_same_cached_request_at_once_make_one_call(cache_dir):
    # threads answering scenes that share an object ask the same thing; the second waits for the first's answer
    import threading

    from memreason.lm import faults

    entered, release = threading.Event(), threading.Event()

    def respond(call):
        entered.set()
        release.wait(5)
        return {"answer": "one two three"}

    engine = ScriptedEngine(respond)
    guarded, answers = GuardedLM(engine.lm(cache=True), role="task"), []

    def ask(question):
        with dspy.context(lm=guarded):
            answers.append(dspy.Predict("question -> answer")(question=question).answer)

    first = threading.Thread(target=ask, args=("what?",))
    first.start()
    assert entered.wait(5)  # the first call is with the LM...
    second = threading.Thread(target=ask, args=("what?",))
    second.start()  # ...when the second asks the same
    time.sleep(0.3)
    release.set()
    first.join(5)
    second.join(5)
    assert answers == ["one two three"] * 2 and len(engine.calls) == 1
    assert faults._flights == {}  # nothing held once both are answered

    ask("and now?")  # another request is asked of the LM
    assert len(engine.calls) == 2
