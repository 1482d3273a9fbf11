"""The response cache never runs code planted in it: a refused entry is a miss, with a warning."""

import json
import logging

import dspy
import pytest
from diskcache import FanoutCache

import memreason.eval.cli as cli
from memreason.eval.harness.runs import use_response_cache
from memreason.lm.stub_server import StubServer

pytestmark = pytest.mark.timeout(120)


class Planted:
    """An object whose unpickling writes ``marker`` (what an attacker's cache entry would do)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return exec, (f"open({self.marker!r}, 'w').write('ran')",)


def plant_everywhere(directory, marker) -> int:
    """Overwrite every entry of the disk cache in ``directory`` with a :class:`Planted` object."""
    cache = FanoutCache(directory=str(directory), shards=16, timeout=10)
    keys = list(cache)
    for key in keys:
        cache.set(key, Planted(marker))
    cache.close()
    return len(keys)


def test_a_planted_entry_is_refused_with_a_warning_and_asked_again(tmp_path, caplog):
    marker = tmp_path / "ran"
    request = {"model": "openai/stub", "messages": [{"role": "user", "content": "hi"}]}
    use_response_cache(tmp_path / "cache")
    key = dspy.cache.cache_key(request)
    dspy.cache.disk_cache.set(key, Planted(marker))

    with caplog.at_level(logging.WARNING):
        assert dspy.cache.get(request) is None  # a miss: the call is asked of the LM again
    assert not marker.exists()
    assert any("refused an entry" in r.getMessage() and str(tmp_path / "cache") in r.getMessage() for r in caplog.records)
    assert key not in dspy.cache.disk_cache  # and the entry is gone

    # the same entry read without the restriction does run (so the check above can fail)
    unrestricted = FanoutCache(directory=str(tmp_path / "open"), shards=1)
    unrestricted.set("k", Planted(marker))
    unrestricted.get("k")
    unrestricted.close()
    assert marker.read_text() == "ran"


def test_an_ordinary_response_still_comes_back_from_the_cache(tmp_path):
    use_response_cache(tmp_path / "cache")
    request = {"model": "m", "messages": [{"role": "user", "content": "q"}]}
    dspy.cache.put(request, {"choices": [{"message": {"content": "a"}}]})
    use_response_cache(tmp_path / "elsewhere")  # forget what is in memory
    use_response_cache(tmp_path / "cache")
    assert dspy.cache.get(request) == {"choices": [{"message": {"content": "a"}}]}


def test_resuming_a_run_whose_cache_holds_planted_objects_neither_runs_them_nor_fails(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "stub-key")
    marker, out = tmp_path / "ran", tmp_path / "run"
    argv = ["episodic", "--level", "1", "--limit", "4", "--lm", "openai/stub", "--out", str(out), "--no-progress", "--no-report"]
    with StubServer(latency=0, fail_rate=0, lifetime=60) as stub:
        assert cli.main([*argv, "--api-base", stub.url]) == 0
    whole = json.loads((out / "results.json").read_text())
    use_response_cache(tmp_path / "elsewhere")  # as a new process would: nothing of the run in memory
    assert plant_everywhere(out / "dspy_cache", marker) >= 4
    examples = out / "examples.jsonl"
    examples.write_text("".join(examples.read_text().splitlines(keepends=True)[:2]))  # two examples left to answer
    (out / "results.json").unlink()
    capsys.readouterr()

    with StubServer(latency=0, fail_rate=0, lifetime=60) as stub:
        assert cli.main(["--resume", str(out), "--api-base", stub.url]) == 0
        asked = stub.stats()["served"]["ok"]
    assert not marker.exists()
    assert asked >= 2  # the refused entries were asked again
    assert "refused an entry" in capsys.readouterr().err
    resumed = json.loads((out / "results.json").read_text())
    assert resumed["accuracy"] == whole["accuracy"] and resumed["examples"] == whole["examples"]
