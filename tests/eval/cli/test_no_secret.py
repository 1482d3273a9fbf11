"""No credential written down: a credential given as an LM setting, in any of the ways a user can give one, is refused
in one line that says to use the environment, before anything is written; a run whose key comes from the environment
writes it nowhere (run directory, report, MLflow store and its artifacts, output).

Every planted secret is one marker; the tests grep every file under the test's directory for it."""

import json
from pathlib import Path

import pytest

import memreason.eval.cli as cli
import memreason.optimize.cli as optimize_cli
from memreason.eval.harness.runs import write_json
from memreason.lm.redact import credentials_in, is_credential, redact
from memreason.lm.stub_server import StubServer

MARKER = "sk-marker-5d41402abc4b2a76"
ENVIRONMENT = "give credentials through the provider's environment variable"
HDR = ["hdr", "--level", "1", "--limit", "1", "--no-progress", "--lm", "openai/gpt-4.1"]


def files_holding(root: Path, marker: str = MARKER) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and marker.encode() in p.read_bytes()]


def written(root: Path, *given: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p not in given)


PLANTED = [
    ["--lm-arg", f"api_key={MARKER}"],
    ["--lm-arg", f"API_KEY={MARKER}"],
    ["--lm-arg", f"Api-Key={MARKER}"],
    ["--lm-arg", f"access_token={MARKER}"],
    ["--lm-arg", f"client_secret={MARKER}"],
    ["--lm-arg", f"password={MARKER}"],
    ["--lm-arg", f'extra_headers={{"Authorization": "Bearer {MARKER}"}}'],
    ["--lm-arg", f'extra_headers={{"x-api-key": "{MARKER}"}}'],
    ["--lm-arg", f'extra_body={{"api_key": "{MARKER}"}}'],
    ["--lm-arg", f'headers={{"Proxy-Authorization": "Basic {MARKER}"}}'],
    ["--lm-arg", f'extra_body={{"auth": {{"nested": [{{"token": "{MARKER}"}}]}}}}'],
    ["--lm-arg", f'extra_body={{"outer": {{"inner": [{{"Token": "{MARKER}"}}]}}}}'],
    ["--memory-lm-arg", f"API_KEY={MARKER}"],
    ["--memory-lm-arg", f'extra_headers={{"Authorization": "Bearer {MARKER}"}}'],
    ["--memory-lm-arg", f'extra_body={{"api_key": "{MARKER}"}}'],
]


@pytest.mark.parametrize("planted", PLANTED, ids=[" ".join(p)[:60] for p in PLANTED])
def test_a_credential_among_the_flags_is_refused_before_anything_is_written(planted, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    mlflow = ["--mlflow", f"sqlite:///{tmp_path / 'mlflow.db'}"]
    assert cli.main([*HDR, *planted, "--out", str(tmp_path / "run"), *mlflow]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("error: ") and ENVIRONMENT in err
    assert "carries a credential" in err and MARKER not in err
    assert written(tmp_path) == []


@pytest.mark.parametrize(
    "name, text",
    [
        ("lm.json", json.dumps({"task": {"model": "openai/gpt-4.1", "API_KEY": MARKER}})),
        ("lm.json", json.dumps({"memory": {"extra_headers": {"Authorization": f"Bearer {MARKER}"}}})),
        ("lm.json", json.dumps({"task": {"extra_body": {"settings": {"api_key": MARKER}}}})),
        ("lm.toml", f'[task]\nmodel = "openai/gpt-4.1"\n[task.extra_headers]\nX-Api-Key = "{MARKER}"\n'),
    ],
)
def test_a_credential_in_the_lm_config_file_is_refused(name, text, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_text(text)
    assert cli.main([*HDR, "--lm-config", name, "--out", "run"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and f"--lm-config {name} (" in err and ENVIRONMENT in err
    assert MARKER not in err and written(tmp_path, tmp_path / name) == []


def test_optimize_refuses_a_credential_the_same_way(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    argv = ["hdr", "--level", "1", "--trials", "1", "--lm", "openai/gpt-4.1", "--lm-arg", f"Token={MARKER}"]
    assert optimize_cli.main([*argv, "--out", "study"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--lm-arg Token carries a credential" in err and MARKER not in err
    assert written(tmp_path) == []


def test_a_key_from_the_environment_works_and_no_file_a_run_and_mlflow_write_holds_it(tmp_path, monkeypatch, capsys):
    pytest.importorskip("mlflow")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", MARKER)
    with StubServer(latency=0, fail_rate=0, lifetime=120) as stub:
        argv = ["episodic", "--level", "1", "--limit", "2", "--lm", "openai/stub", "--api-base", stub.url]
        headers = ["--lm-arg", 'extra_headers={"X-Request-Source": "memreason-tests"}']  # no credential: sent, kept
        assert cli.main([*argv, *headers, "--out", "runs/run", "--no-progress", "--mlflow"]) == 0
        assert stub.stats()["served"]["ok"] >= 2
    config = json.loads((tmp_path / "runs" / "run" / "config.json").read_text())
    assert config["lm_args"] == {"extra_headers": {"X-Request-Source": "memreason-tests"}}
    every = [p for p in tmp_path.rglob("*") if p.is_file()]
    names = {p.name for p in every}
    assert {"config.json", "examples.jsonl", "results.json", "report.md", "mlflow.db"} <= names, names
    assert files_holding(tmp_path) == []
    out, err = capsys.readouterr()
    assert MARKER not in out + err


def test_redact_masks_every_setting_named_as_a_credential_at_any_depth(tmp_path):
    settings = {
        "lm_args": {"API_KEY": MARKER, "extra_headers": {"Authorization": MARKER, "X-Source": "kept"}, "top_p": 0.9},
        "memory_lm_args": {"extra_body": {"nested": [{"access_token": MARKER}], "max_tokens": 5}},
        "tokens": {"prompt": 3},
        "budget_tokens": 100,
    }
    assert credentials_in(settings) == [
        "lm_args.API_KEY",
        "lm_args.extra_headers.Authorization",
        "memory_lm_args.extra_body.nested.0.access_token",
    ]
    masked = redact(settings)
    assert masked["lm_args"] == {"API_KEY": "***", "extra_headers": {"Authorization": "***", "X-Source": "kept"}, "top_p": 0.9}
    assert masked["memory_lm_args"]["extra_body"] == {"nested": [{"access_token": "***"}], "max_tokens": 5}
    assert masked["tokens"] == {"prompt": 3} and masked["budget_tokens"] == 100
    write_json(tmp_path / "config.json", settings)  # the one writer of run configs masks them too
    assert files_holding(tmp_path) == []


@pytest.mark.parametrize("name", ["max_tokens", "budget_tokens", "promptTokenCount", "top_k", "author", "tokenizer"])
def test_counts_and_other_settings_are_no_credentials(name):
    assert not is_credential(name)
