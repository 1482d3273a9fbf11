"""The loopback stub server: bursts of concurrent calls are queued, not reset; streamed answers reach ``dspy.streamify``."""

import json
import threading
import urllib.error
import urllib.request

import dspy
import pytest

from memreason.lm.stub_server import StubServer

pytestmark = pytest.mark.timeout(120)


def _post(url, body, timeout=10):
    request = urllib.request.Request(
        f"{url}/chat/completions", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    return urllib.request.urlopen(request, timeout=timeout)


def _burst(url, calls):
    """``calls`` requests on as many new connections, all started at once; what each returned or raised."""
    start = threading.Barrier(calls)
    results: dict[int, object] = {}

    def call(i):
        body = {"model": "stub", "messages": [{"role": "user", "content": f"question {i}"}]}
        start.wait()
        try:
            with _post(url, body) as answer:
                results[i] = json.load(answer)["choices"][0]["message"]["content"]
        except Exception as exc:  # noqa: BLE001 - the test reports it
            results[i] = exc

    threads = [threading.Thread(target=call, args=(i,)) for i in range(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


@pytest.mark.parametrize("round_", range(2))
def test_sixteen_concurrent_calls_all_succeed(round_):
    # With Python's default listen queue (5) this burst lost a call or more to "connection reset by peer"
    # in most rounds; every round gets a fresh server, whose queue is what a burst meets first.
    with StubServer(latency=0.2, fail_rate=0, lifetime=60) as stub:
        first = _burst(stub.url, 16)
        again = _burst(stub.url, 16)  # and the same server takes a second burst
        served = stub.stats()["served"]
    for results in (first, again):
        failed = {i: r for i, r in results.items() if isinstance(r, Exception)}
        assert not failed and len(results) == 16
        assert all("[[ ## answer ## ]]" in text for text in results.values())
    assert served["ok"] == 32


def _sse_events(answer):
    return [line.removeprefix(b"data: ").decode() for line in answer.read().splitlines() if line.startswith(b"data: ")]


def test_a_streamed_answer_is_openai_server_sent_events_of_the_same_text():
    body = {"model": "stub", "messages": [{"role": "user", "content": "stream this"}]}
    with StubServer(latency=0, fail_rate=0, lifetime=60) as stub:
        with _post(stub.url, body) as answer:
            whole = json.load(answer)
        with _post(stub.url, {**body, "stream": True, "stream_options": {"include_usage": True}}) as answer:
            assert answer.headers["Content-Type"] == "text/event-stream"
            events = _sse_events(answer)
    assert events[-1] == "[DONE]"
    chunks = [json.loads(event) for event in events[:-1]]
    assert {chunk["object"] for chunk in chunks} == {"chat.completion.chunk"}
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    deltas = [c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]]
    assert len([d for d in deltas if d]) > 3  # word by word, not one piece
    assert "".join(deltas) == whole["choices"][0]["message"]["content"]
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "stop"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == whole["usage"]


def test_a_fault_is_an_error_before_any_event():
    with StubServer(latency=0, fail_rate=1.0, faults=("rate_limit",), lifetime=60) as stub:
        with pytest.raises(urllib.error.HTTPError) as refused:
            _post(stub.url, {"model": "stub", "stream": True, "messages": [{"role": "user", "content": "x"}]})
    assert refused.value.code == 429


# DSPy reaches an OpenAI-compatible server by two routes: its own client (lm15, chosen by "auto" for
# openai/... with api_base and api_key) and LiteLLM's; both parse the stream.
ENGINES = ["lm15", "litellm"]


def _lm(stub, engine):
    return dspy.LM("openai/stub", api_base=stub.url, api_key="x", cache=False, engine=engine)


def _collect(program, **inputs):
    return list(program(**inputs))


@pytest.mark.parametrize("engine", ENGINES)
def test_streamify_yields_the_stream_chunks_then_the_prediction(engine):
    with StubServer(latency=0, fail_rate=0, lifetime=60) as stub:
        with dspy.context(lm=_lm(stub, engine), adapter=dspy.ChatAdapter()):
            program = dspy.streamify(dspy.Predict("question -> answer"), async_streaming=False)
            items = _collect(program, question="What is streamed?")
        assert stub.stats()["served"]["ok"] == 1  # one call, streamed
    *chunks, prediction = items
    assert isinstance(prediction, dspy.Prediction) and prediction.answer == "stub answer"
    assert len(chunks) > 3 and not any(isinstance(c, dspy.Prediction) for c in chunks)
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert text == "[[ ## answer ## ]]\nstub answer\n\n[[ ## completed ## ]]"


@pytest.mark.parametrize("engine", ENGINES)
def test_a_stream_listener_gets_the_field_word_by_word(engine):
    with StubServer(latency=0, fail_rate=0, lifetime=60) as stub:
        with dspy.context(lm=_lm(stub, engine), adapter=dspy.ChatAdapter()):
            program = dspy.streamify(
                dspy.Predict("question -> answer, reasoning"),
                async_streaming=False,
                stream_listeners=[dspy.streaming.StreamListener(signature_field_name="reasoning")],
            )
            items = _collect(program, question="Why stream?")
    *responses, prediction = items
    assert all(isinstance(r, dspy.streaming.StreamResponse) for r in responses)
    assert {r.signature_field_name for r in responses} == {"reasoning"}
    assert len(responses) >= 2 and responses[-1].is_last_chunk
    assert "".join(r.chunk for r in responses) == "stub reasoning" == prediction.reasoning
    assert prediction.answer == "stub answer"
