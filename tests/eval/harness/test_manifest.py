"""A run's manifest: the models that answered (not only the one asked for), their fingerprints, the settings sent,
the versions, seeds and instruction digests; ``report`` flags runs whose manifests differ. On the loopback stub,
which names another model than the one asked for and sends a ``system_fingerprint``, as providers do."""

import json
import shutil

import pytest

import memreason.eval.cli as cli
from memreason.eval.harness.manifest import manifest_differences, run_manifest, seeds_of
from memreason.lm.stub_server import StubServer
from memreason.lm.tokens import merge_lms, sent_settings

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-stub-secret")


def hdr(stub, out, *extra):
    argv = ["hdr", "--level", "1", "--limit", "3", "--lm", "openai/stub", "--api-base", stub.url, "--out", str(out)]
    return cli.main([*argv, "--no-progress", "--no-report", "--backoff", "0.01", *extra])


def manifest(out):
    return json.loads((out / "results.json").read_text())["manifest"]


def test_the_manifest_records_the_model_that_answered_and_its_fingerprint(tmp_path, api_key):
    with StubServer(latency=0, fail_rate=0, answer_model="stub-2026-01-01", fingerprint="fp_abc123", lifetime=100) as stub:
        assert hdr(stub, tmp_path / "run", "--temperature", "0.5", "--max-tokens", "900") == 0
    found = manifest(tmp_path / "run")
    for role in ("task", "memory"):
        entry = found["roles"][role]
        assert entry["asked"] == "openai/stub"  # what was asked for ...
        assert list(entry["answered"]) == ["stub-2026-01-01"] and entry["answered"]["stub-2026-01-01"] > 0  # ... and who answered
        assert list(entry["fingerprints"]) == ["fp_abc123"]
        assert entry["settings"] == {"max_tokens": 900, "temperature": 0.5}  # no key, no address, no timeout
    assert sum(found["roles"]["task"]["answered"].values()) == 3  # one call a scene
    assert set(found["versions"]) == {"memreason", "dspy", "litellm", "reasoning-gym", "python"}
    assert found["versions"]["dspy"] and found["versions"]["litellm"]
    assert found["seeds"] == {"seed": 0}
    # every predictor HDR holds, the memory writers it keeps from optimizers included
    assert {"reasoner.answer.predict", "consolidator.generate.generate"} <= set(found["instructions"])
    assert all(len(digest) == 16 for digest in found["instructions"].values())
    assert "sk-stub-secret" not in (tmp_path / "run" / "results.json").read_text()


def test_answers_replayed_from_the_cache_keep_the_model_that_gave_them(tmp_path, api_key):
    with StubServer(latency=0, fail_rate=0, answer_model="stub-2026-01-01", fingerprint="fp_abc123", lifetime=100) as stub:
        assert hdr(stub, tmp_path / "first") == 0
    first = manifest(tmp_path / "first")
    again = tmp_path / "again"
    again.mkdir()
    shutil.copytree(tmp_path / "first" / "dspy_cache", again / "dspy_cache")
    with StubServer(latency=0, fail_rate=0, answer_model="another-model", lifetime=100) as stub:  # never asked
        assert hdr(stub, again) == 0
        assert stub.stats()["served"]["ok"] == 0  # every answer came from the cache
    assert manifest(again) == first


def test_report_flags_runs_whose_manifests_differ(tmp_path, api_key, capsys):
    with StubServer(latency=0, fail_rate=0, answer_model="stub-2026-01-01", lifetime=100) as stub:
        assert hdr(stub, tmp_path / "a") == 0
        assert hdr(stub, tmp_path / "same") == 0
    with StubServer(latency=0, fail_rate=0, answer_model="stub-2026-06-01", lifetime=100) as stub:
        assert hdr(stub, tmp_path / "b", "--temperature", "0.7") == 0
    capsys.readouterr()
    assert cli.main(["report", str(tmp_path / "a"), str(tmp_path / "same"), "--out", str(tmp_path / "agree")]) == 0
    assert "manifests that differ" not in capsys.readouterr().out
    assert "Every run's manifest agrees" in (tmp_path / "agree" / "report.md").read_text()

    assert cli.main(["report", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "differ")]) == 0
    printed = capsys.readouterr().out
    assert "manifests that differ" in printed
    assert "task answered by stub-2026-06-01 (first: stub-2026-01-01)" in printed
    assert "task temperature 0.7 (first: 0.0)" in printed
    report = (tmp_path / "differ" / "report.md").read_text()
    assert "## Manifest" in report and "**Manifests that differ**" in report
    assert "`stub-2026-06-01` (3)" in report and "task temperature 0.7 (first: 0.0)" in report


def test_a_single_runs_report_shows_its_manifest(tmp_path, api_key):
    with StubServer(latency=0, fail_rate=0, answer_model="stub-2026-01-01", fingerprint="fp_abc123", lifetime=100) as stub:
        assert hdr(stub, tmp_path / "run", "--no-report") == 0
    assert cli.main(["report", str(tmp_path / "run")]) == 0
    report = (tmp_path / "run" / "report.md").read_text()
    assert "| `openai/stub` | `stub-2026-01-01` (3) | `fp_abc123` (3) |" in report
    assert "Seeds: seed 0." in report and "`reasoner.answer.predict`" in report


def test_differences_name_what_differs_and_leave_out_what_other_programs_hold_apart():
    def made(model="m-1", temperature=0.0, sent=None, instructions=None, dspy="3.4.1", seed=0):
        lms = {"task": {"models": {model: 2}, "fingerprints": {}, "sent": sent or {}}}

        class LM:
            kwargs = {"temperature": temperature, "api_key": "secret", "api_base": "http://h", "timeout": 3}

        found = run_manifest(roles={"task": ("openai/x", LM())}, lms=lms, seeds={"seed": seed}, instructions=instructions or {})
        found["versions"]["dspy"] = dspy
        return found

    base = made(instructions={"reasoner.predict": "aaa", "consolidator.generate": "bbb"})
    assert base["roles"]["task"]["settings"] == {"temperature": 0.0}  # no secret, no plumbing
    assert manifest_differences(base, made(instructions={"reasoner.predict": "aaa"})) == []  # another program's predictors
    assert manifest_differences(base, made(instructions={"reasoner.predict": "ccc"})) == ["instructions of reasoner.predict"]
    assert manifest_differences(base, made(model="m-2", temperature=1.0, dspy="3.5.0", seed=3)) == [
        "task answered by m-2 (first: m-1)",
        "task temperature 1.0 (first: 0.0)",
        "DSPy 3.5.0 (first: 3.4.1)",
        "seed 3 (first: 0)",
    ]
    assert manifest_differences(base, made(sent={"temperature": [0.7]})) == []  # one program sent it, the other not
    assert manifest_differences(made(sent={"n": [2]}), made(sent={"n": [4]})) == ["task sent n 4 (first: 2)"]
    assert manifest_differences(base, None) == ["no manifest"]


def test_what_a_program_sends_is_kept_as_data_without_keys_or_cache_keys():
    class Schema:
        pass

    sent = sent_settings({"temperature": 0.7, "n": 2, "rollout_id": 5, "api_key": "k", "response_format": Schema})
    assert sent == {"temperature": 0.7, "n": 2, "response_format": "Schema"}
    merged = merge_lms(
        {"task": {"models": {"a": 1}, "sent": {"seed": [1]}}}, {"task": {"models": {"a": 2, "b": 1}, "sent": {"seed": [0, 1]}}}
    )
    assert merged == {"task": {"models": {"a": 3, "b": 1}, "fingerprints": {}, "sent": {"seed": [0, 1]}}}
    assert seeds_of({"seed": 2, "order_seed": 5, "seed_size": 10, "knobs": {"seed": 1}}) == {
        "knobs.seed": 1,
        "order_seed": 5,
        "seed": 2,
    }
