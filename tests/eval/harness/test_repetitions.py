"""--runs R repeats: each run after the first samples its own answers; at temperature 0 nothing would vary, so R > 1 is refused."""

import json

import pytest

import memreason.eval.cli as cli
from memreason.eval.harness.errors import UsageError
from memreason.eval.harness.session import check_repetitions
from memreason.lm.stub_server import StubServer

pytestmark = pytest.mark.timeout(120)


def test_nothing_varies_at_temperature_0():
    assert check_repetitions(1, {"--temperature": 0.0}) is None
    with pytest.raises(UsageError, match="--runs 3 at --temperature 0 and --memory-temperature 0 repeats one run"):
        check_repetitions(3, {"--temperature": 0.0, "--memory-temperature": 0.0})
    assert "nothing" in check_repetitions(3, {"--temperature": 0.0}, continuing=True)["vary_by"]  # a run saved before
    assert "--memory-temperature 0.3" in check_repetitions(2, {"--temperature": 0.0, "--memory-temperature": 0.3})["vary_by"]


def test_each_run_asks_the_lm_itself_instead_of_replaying_the_first(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    served = {}
    for runs in (1, 2):
        out = tmp_path / f"runs{runs}"
        with StubServer(latency=0, fail_rate=0, lifetime=60) as stub:
            argv = [
                "episodic",
                "--level",
                "1",
                "--limit",
                "4",
                "--lm",
                "openai/stub",
                "--api-base",
                stub.url,
                "--temperature",
                "0.7",
            ]
            assert cli.main([*argv, "--runs", str(runs), "--out", str(out), "--no-progress", "--no-report"]) == 0
            served[runs] = stub.stats()["served"]["ok"]
    assert served[2] == 2 * served[1]  # the second run's calls reached the server: none came from the first run's cache
    results = json.loads((tmp_path / "runs2" / "results.json").read_text())
    assert results["repetitions"]["runs"] == 2 and "--temperature 0.7" in results["repetitions"]["vary_by"]
    assert "repetitions" not in json.loads((tmp_path / "runs1" / "results.json").read_text())
