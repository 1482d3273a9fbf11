"""No credentials in what a run records: URLs lose their user:password before anything is written."""

import json

import pytest

import memreason.eval.cli as cli
from memreason.lm.redact import redact
from memreason.lm.stub_server import StubServer


@pytest.mark.parametrize(
    "text, expected",
    [
        ("http://me:secret@host:8000/v1", "http://***@host:8000/v1"),
        ("postgresql://u:p@db/optuna", "postgresql://***@db/optuna"),
        ("token-only https://tok@h/x and http://plain/y", "token-only https://***@h/x and http://plain/y"),
        ("no url here: a@b.c", "no url here: a@b.c"),
        ("http://host/path@not-userinfo", "http://host/path@not-userinfo"),
        ("failed to connect to me:pw@127.0.0.1:80: refused", "failed to connect to ***@127.0.0.1:80: refused"),
        ("mail me at a@b.c at 10:30", "mail me at a@b.c at 10:30"),
    ],
)
def test_redact_takes_userinfo_out_of_urls(text, expected):
    assert redact(text) == expected


def test_redact_walks_structures():
    assert redact({"a": ["http://u:p@h/"], "b": ("x", 1), "c": None}) == {"a": ["http://***@h/"], "b": ("x", 1), "c": None}


def test_a_run_records_no_password_from_its_api_base(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    out = tmp_path / "run"
    with StubServer(latency=0, fail_rate=0, lifetime=60) as stub:
        url = stub.url
        base = url.replace("http://", "http://someone:hunter2@")
        argv = ["episodic", "--level", "1", "--limit", "2", "--lm", "openai/stub", "--api-base", base, "--lm-retries", "0"]
        # DSPy's own client may not take credentials in the URL (then every call fails, exit 1): either way none is written
        assert cli.main([*argv, "--out", str(out), "--no-progress"]) in (0, 1)
    config = json.loads((out / "config.json").read_text())
    assert config["api_base"] == url.replace("http://", "http://***@")
    written = [p for p in out.rglob("*") if p.is_file() and "dspy_cache" not in p.parts]
    assert len(written) >= 4  # config, examples, results, report
    assert not [p for p in written if b"hunter2" in p.read_bytes()]


def test_a_run_whose_api_base_held_a_password_resumes_only_with_the_url_given_again(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    out = tmp_path / "run"
    argv = ["episodic", "--level", "1", "--limit", "2", "--lm", "openai/stub", "--lm-retries", "0", "--backoff", "0.01"]
    with StubServer(latency=0, fail_rate=0, lifetime=60) as stub:
        url = stub.url
        cli.main([*argv, "--api-base", url.replace("http://", "http://u:pw@"), "--out", str(out), "--no-progress"])
        capsys.readouterr()
        assert cli.main(["--resume", str(out)]) == 2
        assert "give it again with --api-base URL" in capsys.readouterr().err
        assert cli.main(["--resume", str(out), "--api-base", url, "--retry-failed", "--no-progress"]) == 0
