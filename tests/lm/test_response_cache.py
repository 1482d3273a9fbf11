"""The response cache never runs code planted in it: it stores JSON, and never unpickles what an earlier version left.

Three planted pickles, each shown live under DSPy's own loaders first (so the checks below can fail):
``posix.system`` (a plain global), the dotted name that escapes DSPy's restricted unpickler through its
trusted ``litellm.types.`` prefix, and one of our own that takes the other trusted prefix
(``openai.types.``) to ``builtins.exec``. Each is planted in a run's ``dspy_cache/`` before
``--resume`` and in a shared ``--cache DIR`` before a brand-new run: the command never runs, the run
is answered as usual, and each refused entry is reported once.
"""

import json
import logging
import shutil
import sqlite3

import dspy
import pytest
from diskcache import FanoutCache

import memreason.eval.cli as cli
from memreason.eval.harness.runs import use_response_cache
from memreason.lm.response_cache import STORE_NAME
from memreason.lm.stub_server import StubServer

pytestmark = pytest.mark.timeout(180)

REFUSED = "refused an entry"


def _text(s: str) -> bytes:
    """A pickle BINUNICODE opcode pushing ``s``."""
    data = s.encode()
    return b"X" + len(data).to_bytes(4, "little") + data


def _call(module: str, name: str, argument: str) -> bytes:
    """A protocol-4 pickle that calls ``module``'s (dotted) attribute ``name`` on ``argument``."""
    return b"\x80\x04" + _text(module) + _text(name) + b"\x93" + _text(argument) + b"\x85R."


def payloads(marker) -> dict[str, bytes]:
    """The three planted pickles, each of which creates ``marker`` when unpickled."""
    return {
        "posix.system": b"cposix\nsystem\n(S'touch " + str(marker).encode() + b"'\ntR.",
        "dotted": _call("litellm.types.integrations.slack_alerting", "os.system", f"touch {marker}"),
        "builtins.exec": _call("openai.types.fine_tuning.fine_tuning_job_event", "builtins.exec", f"open({str(marker)!r}, 'w')"),
    }


def plant_earlier_version(directory, values: dict[str, bytes | object]) -> None:
    """Write ``values`` (key -> pickle bytes, or an object to pickle) as DSPy's own disk cache in ``directory``.

    This is what an earlier version of the library left (or what an attacker plants for it): DSPy's
    ``FanoutCache`` of pickles. Raw pickle bytes are put in place of the pickled value.
    """
    cache = FanoutCache(directory=str(directory), shards=16, timeout=10)
    for key, value in values.items():
        cache.set(key, ["placeholder"] if isinstance(value, bytes) else value)
    cache.close()
    for db in directory.glob("*/cache.db"):
        with sqlite3.connect(db) as shard:
            for key, value in values.items():
                if isinstance(value, bytes):
                    shard.execute("UPDATE Cache SET value = ? WHERE key = ?", (value, key))


def stored(directory) -> dict[str, str]:
    """What the cache in ``directory`` holds: key -> JSON text."""
    with sqlite3.connect(directory / STORE_NAME) as db:
        return dict(db.execute("SELECT key, value FROM responses"))


@pytest.mark.parametrize("name", ["posix.system", "dotted", "builtins.exec"])
def test_each_planted_pickle_runs_under_dspys_own_loader(tmp_path, name):
    """The payloads are live: DSPy's cache (restricted for the last two, as the earlier version opened it) runs them."""
    from dspy.clients.disk_serialization import restricted_disk

    marker = tmp_path / "ran"
    plant_earlier_version(tmp_path / "old", {"k": payloads(marker)[name]})
    options = {} if name == "posix.system" else {"disk": restricted_disk(frozenset())}
    old = FanoutCache(directory=str(tmp_path / "old"), shards=16, **options)
    old.get("k")
    old.close()
    assert marker.exists()


@pytest.mark.parametrize("name", ["posix.system", "dotted", "builtins.exec"])
def test_a_pickle_in_either_store_is_refused_once_and_is_a_miss(tmp_path, caplog, name):
    marker = tmp_path / "ran"
    request = {"model": "openai/stub", "messages": [{"role": "user", "content": "hi"}]}
    key = dspy.cache.cache_key(request)
    plant_earlier_version(tmp_path / "cache", {key: payloads(marker)[name]})  # where the earlier version kept it
    use_response_cache(tmp_path / "cache")
    with caplog.at_level(logging.WARNING):
        assert dspy.cache.get(request) is None
        assert dspy.cache.get(request) is None
    assert [r.getMessage() for r in caplog.records].count(
        f"response cache {tmp_path / 'cache'}: {REFUSED} (stored as a pickle by an earlier version, never read); "
        "the call is asked of the LM again"
    ) == 1

    with sqlite3.connect(tmp_path / "cache" / STORE_NAME) as db:  # and smuggled into the new store itself
        db.execute("INSERT INTO responses VALUES (?, ?)", (key, payloads(marker)[name]))
    use_response_cache(tmp_path / "elsewhere")
    use_response_cache(tmp_path / "cache")
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert dspy.cache.get(request) is None
        assert dspy.cache.get(request) is None
    assert sum(REFUSED in r.getMessage() and "not JSON data" in r.getMessage() for r in caplog.records) == 1
    assert not marker.exists()

    dspy.cache.put(request, {"answer": "asked again"})  # the answer asked again replaces it
    use_response_cache(tmp_path / "elsewhere")
    use_response_cache(tmp_path / "cache")
    assert dspy.cache.get(request) == {"answer": "asked again"}


def test_an_answer_replays_exactly_and_hits_and_misses_are_dspys(tmp_path):
    use_response_cache(tmp_path / "cache")
    request = {"model": "m", "messages": [{"role": "user", "content": "q"}]}
    answer = {"text": "a \u00e9\ud800 \n", "n": 3, "x": 0.1 + 0.2, "big": 2**70, "none": None, "ok": True, "list": [1.5, "b", {}]}
    assert dspy.cache.get(request) is None
    dspy.cache.put(request, answer)
    assert dspy.cache.cache_key(request) in dspy.cache
    use_response_cache(tmp_path / "elsewhere")  # forget what is in memory
    use_response_cache(tmp_path / "cache")
    back = dspy.cache.get(request)
    assert back == answer and json.dumps(back) == json.dumps(answer) and repr(back) == repr(answer)
    assert back is not dspy.cache.get(request)  # each hit is a copy, as DSPy's are
    assert list(stored(tmp_path / "cache")) == [dspy.cache.cache_key(request)]


def test_an_answer_that_is_not_plain_data_stays_in_memory_only(tmp_path):
    use_response_cache(tmp_path / "cache")
    request = {"model": "m", "messages": [{"role": "user", "content": "t"}]}
    dspy.cache.put(request, ("a", "tuple"))
    assert dspy.cache.get(request) == ("a", "tuple")
    assert stored(tmp_path / "cache") == {}


# -- through the command line -------------------------------------------------------------------------


ARGV = ["episodic", "--level", "1", "--limit", "4", "--lm", "openai/stub", "--no-progress", "--no-report"]


@pytest.fixture(scope="module")
def first_run(tmp_path_factory, monkeypatch_module):
    """A finished run (4 scenes) whose cache holds every answer: (run directory, results)."""
    out = tmp_path_factory.mktemp("first") / "run"
    with StubServer(latency=0, fail_rate=0, lifetime=60) as stub:
        assert cli.main([*ARGV, "--out", str(out), "--api-base", stub.url]) == 0
    return out, json.loads((out / "results.json").read_text())


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", "stub-key")
        yield patch


def as_earlier_version(cache_dir, make_value) -> int:
    """Turn the cache in ``cache_dir`` into what an earlier version would have left: the same keys, pickled values."""
    answers = stored(cache_dir)
    (cache_dir / STORE_NAME).unlink()
    for extra in cache_dir.glob(STORE_NAME + "-*"):
        extra.unlink()
    plant_earlier_version(cache_dir, {key: make_value(json.loads(text)) for key, text in answers.items()})
    return len(answers)


def planting(name, marker):
    """What each entry becomes: a payload, or (``earlier version``) the genuine answer pickled."""
    if name == "earlier version":
        return lambda answer: answer
    return lambda answer: payloads(marker)[name]


CASES = ["posix.system", "dotted", "builtins.exec", "earlier version"]


@pytest.mark.parametrize("name", CASES)
def test_resume_with_planted_or_old_cache_runs_nothing_and_answers_as_usual(tmp_path, first_run, capsys, name):
    source, whole = first_run
    out, marker = tmp_path / "run", tmp_path / "ran"
    shutil.copytree(source, out)
    assert as_earlier_version(out / "dspy_cache", planting(name, marker)) >= 4
    examples = out / "examples.jsonl"
    examples.write_text("".join(examples.read_text().splitlines(keepends=True)[:2]))  # two scenes left to answer
    (out / "results.json").unlink()
    capsys.readouterr()

    with StubServer(latency=0, fail_rate=0, lifetime=60) as stub:
        assert cli.main(["--resume", str(out), "--api-base", stub.url]) == 0
        asked = stub.stats()["served"]["ok"]
    err = capsys.readouterr().err
    assert not marker.exists()
    refusals = [line for line in err.splitlines() if REFUSED in line]
    assert asked >= 2 and len(refusals) == asked  # every refused entry asked again, and reported once
    resumed = json.loads((out / "results.json").read_text())
    assert resumed["accuracy"] == whole["accuracy"] and resumed["examples"] == whole["examples"]


@pytest.mark.parametrize("name", CASES)
def test_a_new_run_on_a_planted_or_old_shared_cache_runs_nothing_and_answers_as_usual(tmp_path, first_run, capsys, name):
    source, whole = first_run
    shared, marker, out = tmp_path / "shared", tmp_path / "ran", tmp_path / "new"
    shutil.copytree(source / "dspy_cache", shared)
    planted = as_earlier_version(shared, planting(name, marker))
    capsys.readouterr()

    with StubServer(latency=0, fail_rate=0, lifetime=60) as stub:
        assert cli.main([*ARGV, "--out", str(out), "--cache", str(shared), "--api-base", stub.url]) == 0
        asked = stub.stats()["served"]["ok"]
    err = capsys.readouterr().err
    assert not marker.exists()
    refusals = [line for line in err.splitlines() if REFUSED in line]
    assert 1 <= asked <= planted and len(refusals) == asked  # every refused entry asked again, and reported once
    assert json.loads((out / "results.json").read_text())["accuracy"] == whole["accuracy"]
    assert len(stored(shared)) == planted  # the answers asked again (and their ledgers) are kept again, as data


def test_a_damaged_cache_file_is_refused_in_one_line_before_any_call(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "stub-key")
    out = tmp_path / "run"
    (out / "dspy_cache").mkdir(parents=True)
    (out / "dspy_cache" / STORE_NAME).write_bytes(b"this is no database, and it is long enough to be read as one" * 20)
    argv = [*ARGV, "--out", str(out), "--api-base", "http://127.0.0.1:9/v1"]
    assert cli.main(argv) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"error: response cache {out / 'dspy_cache' / STORE_NAME} is damaged") and "move it away" in line
    assert (out / "dspy_cache" / STORE_NAME).read_bytes().startswith(b"this is no database")  # left as it was
