"""The rate-limits benchmark on a clock scaled down to a second: the capped run stays under the server's limit and
loses nothing; the uncapped one meets its 429s."""

import json

import pytest

from memreason.eval.bench.rate_limits import main, most_in_window
from memreason.lm import rate

pytestmark = pytest.mark.timeout(180)


def test_most_in_window_counts_the_busiest_window():
    assert most_in_window([0.0, 0.5, 0.9, 1.0, 1.95, 3.0], 1.0) == 3  # (0, 1]: 0.5, 0.9, 1.0
    assert most_in_window([], 1.0) == 0


def test_the_benchmark_at_four_a_second(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "stub-key")
    before = rate.WINDOW
    figures = tmp_path / "figures.json"
    argv = ["--rpm", "4", "--window", "1", "--scenes", "12", "--threads", "16", "--latency", "0.02", "--json", str(figures)]
    assert main(argv) == 0
    assert rate.WINDOW == before  # the process's limiters count per minute again
    capped, uncapped = json.loads(figures.read_text())["rows"]
    assert capped["most_in_a_window"] <= 4 and capped["refused_429"] == 0
    assert capped["scenes"] == 12 and capped["failed"] == 0 and capped["held_seconds"] > 1
    assert uncapped["refused_429"] >= 1 and uncapped["provider_pauses"] == uncapped["refused_429"]
    assert uncapped["scenes"] == 12
    assert "most in 1 s" in capsys.readouterr().out
