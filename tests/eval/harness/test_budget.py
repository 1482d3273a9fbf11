"""Spending limits (``--budget-tokens``, ``--budget-usd``): a run stops at its cap with its work kept, says so in one
line and in ``results.json``, and a rerun with a larger cap ends with the examples an uncapped run has.

Runs talk to the loopback stub server (``memreason.lm.stub_server``) or to scripted engines; nothing leaves the machine.
"""

import json

import pytest

import memreason.eval.arc.sandbox as arc_sandbox
import memreason.eval.cli as cli
from memreason.eval.harness.runs import comparable
from memreason.lm import LMChoice, ScriptedEngine
from memreason.lm.faults import BudgetReached, ErrorBudget, GuardedLM, RetryPolicy
from memreason.lm.spend import Spend
from memreason.lm.stub_server import StubServer
from memreason.lm.tokens import Tokens
from tests.helpers.arc_helpers import arc_responder, choice, small_sandbox, tiny  # noqa: F401
from tests.helpers.scripted_answers import oracle_counter

FAST = ["--backoff", "0.01", "--no-progress", "--no-report"]


@pytest.fixture
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "stub-key")


def results(out):
    return json.loads((out / "results.json").read_text())


def examples(out):
    """Each example's id and prediction (ARC: its attempts; build_memory: its solution), the latest line per example
    (as a run reads them back)."""
    found = {}
    for line in (out / "examples.jsonl").read_text().splitlines():
        record = json.loads(line)
        answer = next(record[key] for key in ("prediction", "attempts", "solution") if key in record)
        found[(record["run"], record["id"])] = answer
    return sorted(found.items())


def errors(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error:") or "Traceback" in line]


# -- Experience-Transfer against the stub server ----------------------------------------------------


def test_a_token_cap_stops_the_run_with_its_work_kept_and_a_larger_one_finishes_it(tmp_path, api_key, capsys):
    capped, whole = tmp_path / "capped", tmp_path / "whole"
    with StubServer(latency=0, fail_rate=0) as stub:
        argv = ["episodic", "--level", "1", "--limit", "10", "--lm", "openai/stub", "--api-base", stub.url, *FAST]
        assert cli.main([*argv, "--out", str(capped), "--budget-tokens", "1500"]) == 1
        err = capsys.readouterr().err
        assert "budget estimate: 10 scenes to answer (0 done before), about 1 LM call each" in err
        assert "spent so far 0 tokens of 1,500" in err
        [line] = errors(err)
        assert line.startswith("error: run stopped: the budget was reached (")
        assert f"tokens of 1,500); what the run has is in {capped}: rerun the same command with a larger --budget-tokens" in line
        kept = examples(capped)
        assert 0 < len(kept) < 10  # answered until the cap, then no scene started
        execution = results(capped)["execution"]
        assert execution["stopped"] == "budget" and execution["answered_examples"] == len(kept)
        budget = execution["budget"]
        assert budget["budget_tokens"] == 1500 and budget["reached"] and budget["spent_tokens"] >= 1500
        assert results(capped)["examples"] == len(kept)  # the results of what was answered

        # the same command with a larger cap continues (and counts what the run has spent before)
        served = stub.served["ok"]
        assert cli.main([*argv, "--out", str(capped), "--budget-tokens", "100000"]) == 0
        assert stub.served["ok"] - served == 10 - len(kept)  # no scene answered twice
        err = capsys.readouterr().err
        assert f"budget estimate: {10 - len(kept)} scenes to answer ({len(kept)} done before)" in err
        assert f"from the {len(kept)} scenes the run has" in err and not errors(err)
        again = results(capped)["execution"]
        assert "stopped" not in again and again["budget"]["earlier_tokens"] == budget["spent_tokens"]

        assert cli.main([*argv, "--out", str(whole)]) == 0  # uncapped
    assert "budget estimate" not in capsys.readouterr().err  # no cap, no estimate
    assert examples(capped) == examples(whole) and len(examples(whole)) == 10
    assert comparable(results(capped)) == comparable(results(whole))


def test_a_resumed_run_takes_a_new_budget_and_keeps_its_identity(tmp_path, api_key, capsys):
    out = tmp_path / "run"
    with StubServer(latency=0, fail_rate=0) as stub:
        argv = ["episodic_cot", "--level", "2", "--limit", "6", "--lm", "openai/stub", "--api-base", stub.url, *FAST]
        assert cli.main([*argv, "--out", str(out), "--budget-tokens", "1"]) == 1  # one scene, then the cap
        assert len(examples(out)) == 1
        assert cli.main(["--resume", str(out), "--budget-tokens", "1"]) == 1  # spent already: nothing starts
        assert len(examples(out)) == 1
        assert "the budget was reached" in errors(capsys.readouterr().err)[-1]
        assert cli.main(["--resume", str(out), "--api-base", stub.url, "--budget-tokens", "999999", *FAST]) == 0
    assert len(examples(out)) == 6 and results(out)["examples"] == 6


def test_a_dollar_cap_stops_a_run_of_a_priced_model(tmp_path, api_key, capsys):
    out = tmp_path / "run"
    with StubServer(latency=0, fail_rate=0) as stub:  # LiteLLM prices gpt-4o-mini; the stub answers for it
        argv = ["episodic", "--level", "1", "--limit", "10", "--lm", "openai/gpt-4o-mini", "--api-base", stub.url, *FAST]
        assert cli.main([*argv, "--out", str(out), "--budget-usd", "0.0003"]) == 1
    err = capsys.readouterr().err
    assert "budget estimate: 10 scenes" in err and "$0.0000 of $0.0003" in err
    assert "of $0.0003); what the run has is in" in errors(err)[0] and "--budget-usd" in errors(err)[0]
    execution = results(out)["execution"]
    assert execution["stopped"] == "budget" and execution["budget"]["spent_usd"] >= 0.0003
    assert 0 < len(examples(out)) < 10
    assert results(out)["cost"]["total"] == pytest.approx(execution["budget"]["spent_usd"], abs=1e-6)


# -- a table's cells share one budget ---------------------------------------------------------------


def test_a_table_stops_at_its_budget_and_a_larger_one_finishes_its_cells(tmp_path, api_key, capsys):
    out = tmp_path / "tables"
    with StubServer(latency=0, fail_rate=0) as stub:
        argv = ["table3", "--levels", "1", "--rows", "episodic,episodic_cot", "--limit", "3", "--lm", "openai/stub"]
        argv += ["--api-base", stub.url, "--out", str(out), "--no-progress", "--no-report"]
        assert cli.main([*argv, "--budget-tokens", "1"]) == 1
        assert "the budget was reached" in errors(capsys.readouterr().err)[0]
        assert not (out / "table3.json").exists()
        [first] = out.glob("cells/episodic-L1-*")
        assert results(first)["execution"]["stopped"] == "budget"
        assert cli.main([*argv, "--budget-tokens", "999999"]) == 0
    assert "budget: table3 has 2 cells" in capsys.readouterr().err
    table = json.loads((out / "table3.json").read_text())
    assert [c["examples"] for row in table["rows"] for c in row["cells"]] == [3, 3]
    assert "stopped" not in results(first)["execution"]


# -- ARC and build_memory on the scripted engine ------------------------------------------------------


@pytest.fixture
def arc_lm(monkeypatch):
    engine = ScriptedEngine(arc_responder(selected=["flip rows"]))
    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", lambda spec, **kw: choice(engine, spec or "embedded"))
    monkeypatch.setattr(arc_sandbox, "make_sandbox", lambda workers, wall_seconds: small_sandbox())
    return engine


def test_an_arc_run_stops_at_its_budget_and_resumes_to_the_uncapped_run(tmp_path, tiny, arc_lm, capsys):  # noqa: F811
    argv = ["arcmemo_ps", "--split", str(tiny), "--attempts", "1", "--retries", "1", "--continual-every", "1", *FAST]
    capped, whole = tmp_path / "capped", tmp_path / "whole"
    assert cli.main([*argv, "--out", str(capped), "--budget-tokens", "1"]) == 1
    err = capsys.readouterr().err
    assert "budget estimate: 2 tasks to answer (0 done before), about 3 LM calls each" in err
    assert "the budget was reached" in errors(err)[0]
    assert len(examples(capped)) == 1 and results(capped)["execution"]["stopped"] == "budget"
    assert cli.main([*argv, "--out", str(capped), "--budget-tokens", "999999"]) == 0
    assert cli.main([*argv, "--out", str(whole)]) == 0
    assert examples(capped) == examples(whole)
    assert comparable(results(capped)) == comparable(results(whole))


def test_build_memory_stops_at_its_budget_and_continues(tmp_path, tiny, arc_lm, capsys):  # noqa: F811
    argv = ["build_memory", "--format", "ps", "--split", str(tiny), "--attempts", "1", "--retries", "0"]
    argv += ["--out", str(tmp_path / "ps.json"), "--run-dir", str(tmp_path / "log"), "--no-progress"]
    assert cli.main([*argv, "--budget-tokens", "1"]) == 1
    assert "the budget was reached" in errors(capsys.readouterr().err)[0]
    assert results(tmp_path / "log")["execution"]["stopped"] == "budget"
    assert len(examples(tmp_path / "log")) == 1
    assert cli.main([*argv, "--budget-tokens", "999999"]) == 0
    assert len(examples(tmp_path / "log")) == 2 and "stopped" not in results(tmp_path / "log")["execution"]


# -- the pieces ---------------------------------------------------------------------------------------


def test_the_spend_reaches_either_cap_and_stops_the_error_budget():
    spend = Spend(max_tokens=100)
    errors_ = ErrorBudget(None, spend=spend)
    spend.add(Tokens(60, 30, 1), None, earlier=True)
    assert not spend.reached and not errors_.stopping
    spend.add_call(5, 5, None)
    assert spend.reached and errors_.stopping and errors_.budget_reached and not errors_.failing
    assert errors_.why().startswith("the budget was reached (100 tokens of 100)")
    dollars = Spend(max_usd=0.01)
    from memreason.lm.cost import Price

    dollars.add(Tokens(1000, 0, 1), Price(input=1e-5, output=0))
    assert dollars.reached and dollars.describe() == "$0.0100 of $0.01"


def test_a_refusing_spend_refuses_calls_past_the_cap_and_a_guard_of_a_guard_counts_once():
    engine = ScriptedEngine(lambda call: {"answer": "yes"})
    spend = Spend(max_tokens=1, refuse=True)
    inner = GuardedLM(engine.lm(), role="task", policy=RetryPolicy(retries=0), spend=spend)
    outer = GuardedLM(inner, role="task", policy=RetryPolicy(retries=0))  # one guard, counting into the same spend
    assert outer.spend is spend and not isinstance(outer.inner, GuardedLM)
    outer(messages=[{"role": "user", "content": "one two three"}])
    assert spend.tokens > 1 and spend.reached
    with pytest.raises(BudgetReached, match="the budget was reached"):
        outer(messages=[{"role": "user", "content": "again"}])
    assert spend.refused == 1 and len(engine.calls) == 1


def test_an_lm_choice_from_a_scripted_engine_has_no_price():
    from memreason.eval.harness.budget import check_prices
    from memreason.eval.harness.errors import UsageError

    check_prices(None, ["embedded"])  # no dollar cap: nothing to price
    check_prices(1.0, ["openai/gpt-4o-mini"])
    with pytest.raises(UsageError, match="LiteLLM's price list has none for 'embedded'"):
        check_prices(1.0, [None])
    assert LMChoice("scripted", ScriptedEngine(oracle_counter()).lm(), local=False).spec == "scripted"


def test_one_limit_covers_the_cells_of_every_rule_table(tmp_path, api_key, capsys):
    out = tmp_path / "tables"
    with StubServer(latency=0, fail_rate=0) as stub:
        argv = ["table3", "--levels", "2", "--rows", "episodic,episodic_cot", "--limit", "2", "--lm", "openai/stub"]
        argv += [
            "--rules",
            "hard-test-7-0,hard-test-7-1",
            "--api-base",
            stub.url,
            "--out",
            str(out),
            "--no-progress",
            "--no-report",
        ]
        assert cli.main([*argv, "--budget-tokens", "1"]) == 1  # the first table's first cell stops it
        assert "budget: table3 has 4 cells" in capsys.readouterr().err
        assert [p.name.split("-rules-")[1] for p in out.glob("cells/*")] == ["hard-test-7-0-limit2"]
