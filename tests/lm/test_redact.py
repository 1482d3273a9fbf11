"""No credentials in what a run records: URLs lose their user:password before anything is written."""

import json

import pytest

import memreason.eval.cli as cli
from memreason.lm.redact import redact
from memreason.lm.resolve import split_credentials
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


def test_split_credentials_takes_the_password_out_of_the_address():
    assert split_credentials("http://me:s%40cret@host:8000/v1") == ("http://host:8000/v1", "s@cret")
    assert split_credentials("http://token@host/v1") == ("http://host/v1", "token")
    assert split_credentials("http://host:8000/v1") == ("http://host:8000/v1", None)


def test_an_api_base_with_a_password_works_and_no_file_the_run_writes_holds_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    out = tmp_path / "run"
    with StubServer(latency=0, fail_rate=0, lifetime=60) as stub:
        url = stub.url
        base = url.replace("http://", "http://someone:hunter2@")
        argv = ["episodic", "--level", "1", "--limit", "2", "--lm", "openai/stub", "--api-base", base, "--lm-retries", "0"]
        mlflow = ["--mlflow", f"sqlite:///{tmp_path / 'mlflow.db'}"]
        assert cli.main([*argv, "--out", str(out), "--no-progress", *mlflow]) == 0  # the address works
        assert stub.stats()["served"]["ok"] >= 2
    config = json.loads((out / "config.json").read_text())
    assert config["api_base"] == url.replace("http://", "http://***@")
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(written) >= 6 and (tmp_path / "mlflow.db").is_file()  # config, examples, results, report, cache, mlflow.db
    assert not [p for p in written if b"hunter2" in p.read_bytes()]
    out_err = capsys.readouterr()
    assert "hunter2" not in out_err.out + out_err.err


def test_a_password_in_the_address_of_a_dead_server_is_in_no_message_nor_trace(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    import memreason.optimize.cli as optimize_cli

    base = "http://someone:hunter2@127.0.0.1:9/v1"
    mlflow = ["--mlflow", f"sqlite:///{tmp_path / 'mlflow.db'}"]
    argv = [
        "hdr",
        "--level",
        "1",
        "--trials",
        "1",
        "--limit",
        "2",
        "--lm",
        "openai/stub",
        "--api-base",
        base,
        "--lm-retries",
        "0",
    ]
    assert optimize_cli.main([*argv, "--out", str(tmp_path / "study"), *mlflow]) == 1
    out_err = capsys.readouterr()
    assert "hunter2" not in out_err.out + out_err.err and "127.0.0.1:9" in out_err.err
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and b"hunter2" in p.read_bytes()]


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
