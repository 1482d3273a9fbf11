"""``python -m optimize compile consolidator`` on the scripted engine: F1 as the metric, generated tables, a state eval loads."""

import json

import pytest

import memreason.eval.cli as eval_cli
import memreason.optimize.cli as optimize_cli
import memreason.optimize.consolidator as consolidator
from memreason.datasets.experience_transfer import make_level
from memreason.datasets.experience_transfer.random_tables import random_tables
from memreason.optimize.lms import SCRIPTED_ENV, resolve, scripted_engine
from memreason.programs import build_program

LM = "scripted:tests.helpers.optimize_lms:consolidator"


@pytest.fixture(autouse=True)
def scripted(monkeypatch):
    monkeypatch.setenv(SCRIPTED_ENV, "1")


def compile_(out, optimizer="bootstrap", *extra):
    argv = [
        "compile",
        "consolidator",
        "--program",
        "hdr",
        "--optimizer",
        optimizer,
        "--train-tables",
        "3",
        "--val-tables",
        "2",
        "--level",
        "1",
        "--knob",
        "K=1",
        "--knob",
        "N=1",
        "--out",
        str(out),
        "--lm",
        LM,
        *extra,
    ]
    return optimize_cli.main(argv)


def demonstrated(call) -> bool:
    """Whether a generator call carried a demonstration (a second episodes field, from the demo)."""
    return call.user_text.count("[[ ## episodes ## ]]") > 1


def test_bootstrap_raises_f1_on_validation_tables_and_eval_loads_the_compiled_consolidator(tmp_path, monkeypatch, capsys):
    out = tmp_path / "compiled"
    assert compile_(out, "bootstrap", "--test-tables", "1", "--paper-levels", "2") == 0
    report = json.loads((out / "compile.json").read_text())
    before, after = report["validation"]["uncompiled"], report["validation"]["compiled"]
    assert report["test_tables"] == [random_tables("test", 1)[0].name, "paper Table 1, L2"]
    assert report["test"]["uncompiled"]["mean_f1"] < report["test"]["compiled"]["mean_f1"] == 1.0
    assert before["mean_f1"] < 1.0 and after["mean_f1"] == 1.0  # the scripted writer drops its noise once shown a demo
    assert report["val_tables"] == [t.name for t in random_tables("validation", 2)]
    assert set(report["train_tables"]).isdisjoint(report["val_tables"])
    assert report["compile"]["calls"] > 0 and report["compile"]["prompt_tokens"] > 0
    summary = (out / "summary.md").read_text()
    assert f"| **mean** | **{before['mean_f1']:.2f}** | **1.00** |" in summary
    assert all(f"| {name} |" in summary for name in report["val_tables"])

    state = json.loads((out / "program.json").read_text())
    assert state["consolidator.generate.generate"]["demos"]
    assert not [k for k in state if k.startswith("reasoner.") or k == "memory"]  # the consolidator alone: no reader, no memory
    program = build_program("hdr", K=1, N=1)
    program.load(str(out / "program.json"))
    assert len(dict(program.consolidation_predictors())["consolidator.generate.generate"].demos) == 2
    reader = build_program("hdr", K=1, N=1, per_object=True, retrieve_k=1)  # another reader: the state still fits
    reader.load(str(out / "program.json"))
    assert len(dict(reader.consolidation_predictors())["consolidator.generate.generate"].demos) == 2

    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", resolve)
    engine = scripted_engine(LM)
    for state_args, name in (([], "plain"), (["--program-state", str(out / "program.json")], "compiled")):
        engine.calls.clear()
        assert (
            eval_cli.main(
                [
                    "hdr",
                    "--level",
                    "1",
                    "--limit",
                    "2",
                    "--config",
                    str(out / "config.json"),
                    *state_args,
                    "--lm",
                    LM,
                    "--out",
                    str(tmp_path / f"eval-{name}"),
                    "--no-progress",
                    "--no-report",
                ]
            )
            == 0
        )
        generator = [c for c in engine.calls if "`hypotheses` (list[str])" in c.system.split("Your output fields are:")[-1]]
        assert generator and all(demonstrated(c) == (name == "compiled") for c in generator)
        f1 = json.loads((tmp_path / f"eval-{name}" / "results.json").read_text())["hypothesis_f1"]["mean"]
        assert (f1 == 1.0) == (name == "compiled")  # on the paper's Table 1, which no compile saw


def test_labelled_demos_come_from_training_tables_true_rules_and_need_no_lm_call_to_compile(tmp_path):
    out = tmp_path / "labelled"
    assert (
        compile_(out, "bootstrap", "--max-demos", "0", "--labeled-demos", "1", "--threads", "3") == 0
    )  # 3 tables scored at once
    report = json.loads((out / "compile.json").read_text())
    assert report["compile"]["calls"] == 0  # nothing bootstrapped: the demos are written from the tables
    assert report["validation"]["uncompiled"]["mean_f1"] < report["validation"]["compiled"]["mean_f1"] == 1.0
    state = json.loads((out / "program.json").read_text())
    train = {t.name: make_level(1, rules=t) for t in random_tables("train", 3)}
    [generated] = state["consolidator.generate.generate"]["demos"]
    assert generated["hypotheses"] in [d.oracle_hypotheses for d in train.values()] and generated["previous_hypotheses"] == []
    [judged] = state["consolidator.verify.verify"]["demos"]
    assert {v["verdict"] for v in judged["verdicts"]} == {"valid"} and len(judged["verdicts"]) == len(judged["hypotheses"])
    [extracted] = state["consolidator.extract_factors.extract"]["demos"]
    assert extracted["factors"] == ["shape", "color", "background"] and extracted["current_factors"] == []


def test_specific_labelled_rules_state_each_combination_the_episodes_show_once_truly_in_showing_order(tmp_path):
    from memreason.eval.experience_transfer.hypothesis_scoring import score_hypotheses

    out = tmp_path / "specific"
    assert compile_(out, "bootstrap", "--max-demos", "0", "--labeled-demos", "1", "--labeled-rules", "specific") == 0
    report = json.loads((out / "compile.json").read_text())
    assert report["labeled_rules"] == "specific" and "specific rules" in (out / "summary.md").read_text()
    [generated] = json.loads((out / "program.json").read_text())["consolidator.generate.generate"]["demos"]
    [data] = [
        d
        for d in (make_level(1, rules=t) for t in random_tables("train", 3))
        if [e["label"] for e in generated["episodes"]] == [e.label for e in d.episodes]
    ]
    episodes = consolidator.level_episodes(data.episodes, "text")
    first = [e for i, e in enumerate(episodes) if all(p.attributes != e.attributes for p in episodes[:i])]  # in showing order
    assert len(generated["hypotheses"]) == len(first) < len(episodes) and generated["previous_hypotheses"] == []
    for episode, rule in zip(first, generated["hypotheses"]):
        shown = episode.attributes
        assert (
            rule == f"A {shown['color']} {shown['shape']} on {'an' if shown['background'][0] in 'aeiou' else 'a'} "
            f"{shown['background']} background is labelled {episode.label}."
        )  # the episodes' own wording
    score = score_hypotheses(generated["hypotheses"], data)
    assert all(score.correct) and score.recall == 1.0  # every one true, and together they cover what the level scores


def test_labelled_verdicts_show_the_verifier_false_specific_rules_judged_invalid_with_the_episode_against_them(tmp_path):
    out = tmp_path / "verdicts"
    assert (
        compile_(
            out, "bootstrap", "--max-demos", "0", "--labeled-demos", "1", "--labeled-rules", "specific", "--labeled-verdicts"
        )
        == 0
    )
    state = json.loads((out / "program.json").read_text())
    [generated] = state["consolidator.generate.generate"]["demos"]
    [judged] = state["consolidator.verify.verify"]["demos"]
    assert generated["hypotheses"] != judged["hypotheses"]  # the verifier's demo is its own; the generator's is all true
    [data] = [
        d
        for d in (make_level(1, rules=t) for t in random_tables("train", 3))
        if [e["label"] for e in judged["episodes"]] == [e.label for e in d.episodes]
    ]
    episodes = consolidator.level_episodes(data.episodes, "text")
    truth = {(e.attributes["color"], e.attributes["shape"], e.attributes["background"]): e for e in episodes}
    invalid = [v for v in judged["verdicts"] if v["verdict"] == "invalid"]
    assert (
        len(invalid) == (len(judged["hypotheses"]) + 2) // 3
        and [v["hypothesis"] for v in judged["verdicts"]] == judged["hypotheses"]
    )
    for verdict in judged["verdicts"]:
        [key] = [
            k
            for k in truth
            if verdict["hypothesis"].startswith(f"A {k[0]} {k[1]} on ") and f" {k[2]} background " in verdict["hypothesis"]
        ]
        true_rule = verdict["hypothesis"].endswith(f"labelled {truth[key].label}.")
        assert true_rule == (verdict["verdict"] == "valid")  # judged by the table, not at random
        assert true_rule or truth[key].observation.split(" of size")[0] in verdict["reason"]  # names an episode against it
    assert "the verifier's judging false rules too" in (out / "summary.md").read_text()


def test_answers_stopped_at_the_token_cap_are_counted_by_step_in_compile_json_and_the_summary(tmp_path):
    repeating = ["--max-demos", "0", "--labeled-demos", "1", "--lm", "scripted:tests.helpers.optimize_lms:repeating_consolidator"]
    assert compile_(tmp_path / "capped", "bootstrap", *repeating, "--max-tokens", "300") == 0
    report = json.loads((tmp_path / "capped" / "compile.json").read_text())
    for side in ("uncompiled", "compiled"):
        for table in report["validation"][side]["tables"].values():
            assert table["cut"] == {"hypothesis_generator": 1}  # K=1, N=1: one generator answer, stopped mid-repeat
            assert table["f1"] > 0  # the cut answer was still read
    calls = sum(t["tokens"]["calls"] for t in report["validation"]["compiled"]["tables"].values())
    assert (
        f"Answers that stopped at the token cap (--max-tokens) instead of ending: uncompiled 2 of {calls} "
        f"(hypothesis_generator 2); compiled 2 of {calls} (hypothesis_generator 2)."
    ) in (tmp_path / "capped" / "summary.md").read_text()

    assert compile_(tmp_path / "uncapped", "bootstrap", *repeating) == 0  # the same answers, no cap: nothing cut
    report = json.loads((tmp_path / "uncapped" / "compile.json").read_text())
    assert all(t["cut"] == {} for side in ("uncompiled", "compiled") for t in report["validation"][side]["tables"].values())
    assert "token cap" not in (tmp_path / "uncapped" / "summary.md").read_text()


def test_specific_rules_refuse_a_table_whose_episodes_disagree():
    data = make_level(2, rules=random_tables("train", 1)[0])
    episodes = consolidator.level_episodes(data.episodes, "text")
    twin = episodes[0].model_copy(update={"label": next(l for l in data.rules.labels if l != episodes[0].label)})
    assert len(consolidator.combination_rules(episodes)) == len(data.visible)  # repeats of a combination agree
    with pytest.raises(ValueError, match="two labels"):
        consolidator.combination_rules([episodes[0], twin])
    with pytest.raises(ValueError, match="needs exactly a color, a shape and a background"):
        consolidator.specific_rule({"color": "red", "size": "big"}, "anomaly")


@pytest.mark.parametrize("optimizer", ["mipro", "gepa", "simba"])
def test_every_optimizer_compiles_the_consolidator(tmp_path, optimizer):
    out = tmp_path / optimizer
    assert compile_(out, optimizer, "--candidates", "2", "--budget", "8") == 0
    report = json.loads((out / "compile.json").read_text())
    assert report["optimizer"] == optimizer and set(report["demos"]) == {
        "program.consolidator.extract_factors.extract",
        "program.consolidator.generate.generate",
        "program.consolidator.verify.verify",
    }
    assert 0 <= report["validation"]["compiled"]["mean_f1"] <= 1 and (out / "program.json").is_file()


def test_a_compile_starts_from_an_earlier_compiled_state_and_gepa_keeps_its_demos(tmp_path, capsys):
    first, second = tmp_path / "first", tmp_path / "second"
    assert compile_(first) == 0
    start = first / "program.json"
    assert compile_(second, "gepa", "--budget", "8", "--program-state", str(start)) == 0
    report = json.loads((second / "compile.json").read_text())
    assert report["start_state"] == str(start) and len(report["start_state_sha256"]) == 64
    # the hand-written consolidator lets the scripted writer's noise through; the start state does not
    assert json.loads((first / "compile.json").read_text())["validation"]["uncompiled"]["mean_f1"] < 1.0
    assert report["validation"]["uncompiled"]["mean_f1"] == 1.0
    assert json.loads((second / "program.json").read_text())["consolidator.generate.generate"]["demos"]
    summary = (second / "summary.md").read_text()
    assert f"Started from `{start}`" in summary and "| validation table | F1 at start | F1 compiled |" in summary
    # hdr's state does not fit hdr_grounded's consolidator: refused before anything runs
    assert (
        optimize_cli.main(
            [
                "compile",
                "consolidator",
                "--program",
                "hdr_grounded",
                "--optimizer",
                "gepa",
                "--program-state",
                str(start),
                "--lm",
                LM,
                "--out",
                str(tmp_path / "third"),
            ]
        )
        == 2
    )
    assert "consolidator.verify.verify, which HDRGrounded's consolidation does not have" in capsys.readouterr().err
    assert not (tmp_path / "third").exists()


def test_the_metric_rewards_the_true_rules_over_noise_and_says_what_is_wrong_and_missing():
    table = random_tables("train", 1)[0]
    data = make_level(2, rules=table)
    metric = consolidator.F1Feedback({table.name: data})
    example = type("E", (), {"table": table.name})()
    truth = type("P", (), {"record": {"hypotheses": data.oracle_hypotheses}})()
    noise = type("P", (), {"record": {"hypotheses": ["Bigger objects are rarer.", "All is well."]}})()
    assert metric(example, truth) == 1.0 and metric(example, noise) == 0.0
    partial = type("P", (), {"record": {"hypotheses": [*data.oracle_hypotheses[:1], "All is well."]}})()
    out = metric(example, partial, None, "program.consolidator.generate.generate", [])
    assert 0 < out.score < 1 and "All is well." in out.feedback and "No correct hypothesis covers:" in out.feedback


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--program", "episodic_cot", "--optimizer", "bootstrap"], "argument --program: invalid choice: 'episodic_cot'"),
        (["--optimizer", "adam"], "argument --optimizer: invalid choice: 'adam'"),
        (["--optimizer", "gepa", "--threshold", "2"], "--threshold is an F1"),
        (["--optimizer", "gepa", "--level", "5"], "--level must be"),
        (["--optimizer", "gepa", "--train-tables", "0"], "--train-tables must be at least 1"),
        (["--optimizer", "gepa", "--paper-levels", "1,4"], "--paper-levels must name levels"),
        (["--optimizer", "gepa", "--labeled-demos", "1"], "--labeled-demos is for bootstrap and mipro"),
        (["--program", "hdr_grounded", "--optimizer", "bootstrap", "--labeled-demos", "1"], "--labeled-demos is for hdr's"),
        (["--optimizer", "bootstrap", "--labeled-rules", "specific"], "give --labeled-demos N too"),
        (["--optimizer", "bootstrap", "--labeled-verdicts"], "give --labeled-demos N too"),
        (["--optimizer", "gepa", "--program-state", "no-such-state.json"], "no-such-state.json: no such file"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, message, capsys, tmp_path):
    assert optimize_cli.main(["compile", "consolidator", *argv, "--lm", LM, "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "x").exists()


def test_a_table_and_a_study_start_from_the_compiled_consolidator(tmp_path, monkeypatch, capsys):
    from tests.helpers.optimize_lms import NOISE

    out = tmp_path / "compiled"
    assert compile_(out) == 0
    state = out / "program.json"
    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", resolve)
    monkeypatch.setattr("memreason.eval.experience_transfer.table_cells.resolve_lm", resolve)
    argv = ["table5", "--levels", "1", "--rows", "hdr", "--memory-lm", LM, "--out", str(tmp_path / "t5"), "--no-progress"]
    assert eval_cli.main(argv) == 0  # the hand-written consolidator: the scripted writer's noise costs F1
    assert eval_cli.main([*argv, "--program-state", f"hdr={state}"]) == 0
    rows = json.loads((tmp_path / "t5" / "table5.json").read_text())["rows"][0]["cells"]
    assert rows[0]["value"] == 1.0 and "-state-" in rows[0]["cell"]
    plain = [d for d in (tmp_path / "t5" / "cells").iterdir() if "-state-" not in d.name]
    assert plain and json.loads(next(plain[0].glob("memory-run0-f1-parse.json")).read_text())["f1"] < 1.0
    capsys.readouterr()
    assert eval_cli.main([*argv, "--program-state", f"episodic={state}"]) == 2
    assert "'episodic' is not a row of this table" in capsys.readouterr().err

    study = [
        "hdr",
        "--level",
        "1",
        "--limit",
        "2",
        "--trials",
        "1",
        "--param",
        "K=1",
        "--param",
        "N=1",
        "--param",
        "cot=false",
        "--param",
        "per_object=false",
        "--param",
        "demos=0",
        "--chunks",
        "1",
        "--out",
        str(tmp_path / "study"),
        "--lm",
        LM,
        "--program-state",
        str(state),
    ]
    assert optimize_cli.main(study) == 0
    (memory,) = (tmp_path / "study" / "configs").glob("*/memory-run0.json")
    hypotheses = json.loads(memory.read_text())["hypotheses"]
    assert hypotheses and not set(NOISE) & set(hypotheses)  # the trial's memory came from the compiled consolidator
    assert optimize_cli.main([*study[:-1], str(tmp_path / "missing.json")]) == 2
