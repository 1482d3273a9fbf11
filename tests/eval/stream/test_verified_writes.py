"""Verified writes (``--verify N``): a change is tried on problems already scored before it is kept; the measured
record on every entry; the token budget (``--memory-tokens``)."""

from __future__ import annotations

import json
import re
import threading

import pytest

from memreason.datasets.gym import GymItem
from memreason.eval.cli import main as eval_main
from memreason.eval.stream.verify import Answer, VerifySettings, WriteVerifier, choose_probes
from memreason.lm import LMChoice, ScriptedEngine
from memreason.programs.stream import Entry, EntryMemory, FewShot, Lesson, similarity
from memreason.programs.stream.entries import estimated_tokens
from memreason.programs.stream.utility import MIN_SHOWN, Record, rate_without
from tests.helpers.scripted_answers import given, outputs
from tests.helpers.stream_answers import answer_for, numbers_of, respond, solve24

POOL = [GymItem(str(i), f"Make 24 using {i}, {i + 1}, {i + 2}, 3.", "x") for i in range(1, 9)]


def _answers(right_without: set[str]):
    """Probe answers that depend on memory: right when it holds an example marked GOOD, wrong when it holds one
    marked BAD, else right only for the items in ``right_without``."""

    def answer(program, items):
        out = []
        for item in items:
            text = program.read(item.question, item.id).text
            right = "GOOD" in text or ("BAD" not in text and item.id in right_without)
            out.append(Answer(right, text[-20:]))
        return out

    return answer


def _lesson(item_id: str, solution: str) -> Lesson:
    return Lesson(item_id, f"Make 24 using {item_id}, 2, 3, 4.", solution, True, "", "reference")


def test_a_change_that_hurts_probes_is_refused_and_one_that_helps_is_kept():
    program = FewShot(k=3)
    verifier = WriteVerifier(VerifySettings(probes=3), answer=_answers(right_without={"2", "3"}))
    learn = lambda lesson: lambda k: program.learn(lesson)  # noqa: E731

    hurt = verifier.write(program, _lesson("1", "BAD"), POOL, learn=learn(_lesson("1", "BAD")))
    assert hurt["decision"] == "refused" and hurt["hurt"] >= 1 and program.memory_size() == 0

    helped = verifier.write(program, _lesson("1", "GOOD"), POOL, learn=learn(_lesson("1", "GOOD")))
    assert helped["decision"] == "kept" and helped["helped"] >= 1 and helped["hurt"] == 0
    [entry] = program.examples.entries
    assert entry.record == Record.admitted(helped=helped["helped"], hurt=0, probes=[p["id"] for p in helped["probes"]])
    assert helped["added"] == [entry.id]
    # every probe recorded with its answers, with the change and without it
    assert all(set(p) == {"id", "without", "with"} and len(p["with"]) == 1 for p in helped["probes"])

    # the write above re-used the "without" answers of the refused one: the memory was equal, so no probe asked twice
    assert verifier.shared == 3 and verifier.asked == 3 + 3 + 3


def test_the_answers_with_a_change_and_without_it_are_asked_together_each_on_its_own_memory():
    both = threading.Barrier(2, timeout=10)  # asked one memory after the other, the first would wait in vain
    memories = []

    def answer(program, items):
        memories.append(program.memory_size())
        both.wait()
        return _answers(right_without=set())(program, items)

    program = FewShot(k=3)
    verifier = WriteVerifier(VerifySettings(probes=2), answer=answer)
    lesson = _lesson("1", "GOOD")
    decided = verifier.write(program, lesson, POOL, learn=lambda k: program.learn(lesson))
    assert sorted(memories) == [0, 1] and decided["decision"] == "kept" and decided["helped"] == 2
    assert program.memory_size() == 1  # the copies' memories were theirs: the program holds what was decided


def test_a_change_that_changes_nothing_is_not_tried_and_the_margin_is_the_bar():
    program = FewShot(k=3)
    verifier = WriteVerifier(VerifySettings(probes=2, margin=2), answer=_answers(right_without=set()))
    wrong = Lesson("1", "Make 24 using 1, 2, 3, 4.", "1 + 1", False, "", "reference")  # few-shot keeps no wrong answer
    unchanged = verifier.write(program, wrong, POOL, learn=lambda k: program.learn(wrong))
    assert unchanged["decision"] == "unchanged" and verifier.asked == 0
    one = _lesson("1", "GOOD")
    decided = verifier.write(program, one, POOL[:2], learn=lambda k: program.learn(one))  # one probe: at most +1
    assert decided["decision"] == "refused" and decided["helped"] == 1 and program.memory_size() == 0


def test_probes_are_scored_problems_most_like_the_source_then_drawn_never_the_source_itself():
    lesson = Lesson("3", POOL[2].question, "x", True, "", "reference")
    probes = choose_probes(POOL, lesson, 4)
    assert "3" not in [p.id for p in probes] and len(probes) == len({p.id for p in probes}) == 4
    nearest = sorted(POOL[:2] + POOL[3:], key=lambda item: -similarity(lesson.problem, item.question))
    assert probes[:2] == nearest[:2]  # half by likeness
    assert probes == choose_probes(POOL, lesson, 4)  # the drawn half repeats in a repeated run
    sources = [Lesson(name, POOL[2].question, "x", True, "", "reference") for name in "abcdef"]  # in no pool
    drawn = {tuple(p.id for p in choose_probes(POOL, source, 4)[2:]) for source in sources}
    assert len(drawn) > 1  # the nearest half is the same for all: the rest is drawn, not the next most alike
    assert len(choose_probes(POOL, lesson, 1)) == 1 and len(choose_probes(POOL[:3], lesson, 5)) == 2
    assert choose_probes(POOL[2:3], lesson, 3) == []  # its own item is all there is: nothing to try it on


def test_the_best_of_several_proposals_is_kept():
    program = FewShot(k=3)
    proposals = iter(["BAD", "plain", "GOOD"])
    verifier = WriteVerifier(VerifySettings(probes=3, candidates=3), answer=_answers(right_without={"2"}))
    lesson = _lesson("1", "")
    decided = verifier.write(program, lesson, POOL, learn=lambda k: program.learn(_lesson("1", next(proposals))))
    assert decided["decision"] == "kept" and decided["candidate"] == 2
    assert [c["candidate"] for c in decided["candidates"]] == [0, 1, 2]
    assert "GOOD" in program.examples.entries[0].text and program.memory_size() == 1


def test_an_entry_whose_use_shows_harm_is_retired_never_shown_and_kept_in_the_snapshot():
    program = FewShot(k=2)
    program.learn(_lesson("1", "GOOD"))
    [entry] = program.examples.entries
    entry.record = Record.admitted(helped=1, hurt=0, probes=["2"])
    read = program.read("Make 24 using 5, 2, 3, 4.", "5").record
    assert read["ids"] == [entry.id]
    for n in range(MIN_SHOWN):
        retired = program.note_use(read, right=False, expected=0.8)
    assert retired == [entry.id] and entry.retired and entry.record.shown == MIN_SHOWN
    assert program.read("Make 24 using 5, 2, 3, 4.", "5").text == "" and program.memory_size() == 0
    saved = program.memory_state()["entries"]
    assert saved[0]["record"]["retired"] == "harm"
    again = FewShot(k=2)
    again.load_memory(json.loads(json.dumps(program.memory_state())))
    assert again.examples.entries[0].retired and again.memory_size() == 0


def test_use_is_counted_against_the_items_not_shown_the_entry_not_the_streams_own_accuracy():
    # an entry shown to three items that all failed, where the items not shown it were right: the stream's accuracy
    # (0.4, lowered by the entry itself) would keep it; the rate without it (1.0) retires it
    scored = [({"e1"}, False)] * 3 + [(set(), True)] * 2
    assert rate_without(scored, "e1") == 1.0 and rate_without(scored, "e9") == 0.4
    assert rate_without([({"e1"}, True), ({"e1"}, False)], "e1") == 0.5  # shown to all: nothing else to compare with
    program = FewShot(k=2)
    program.learn(_lesson("1", "GOOD"))
    [entry] = program.examples.entries
    entry.record = Record.admitted(helped=2, hurt=0, probes=["2", "3"])
    read = program.read("Make 24 using 5, 2, 3, 4.", "5").record
    kept = FewShot(k=2)
    kept.load_memory(json.loads(json.dumps(program.memory_state())))
    for _ in range(3):
        retired = program.note_use(read, right=False, expected={entry.id: rate_without(scored, entry.id)})
        kept.note_use(read, right=False, expected=0.4)
    assert retired == [entry.id] and entry.record.expected == 3.0
    assert not kept.examples.entries[0].retired


def test_reads_rank_by_similarity_and_measured_utility():
    memory = EntryMemory()
    a = memory.add(Entry("a", ["1"], key="make 24 using 1 2 3 4"))
    b = memory.add(Entry("b", ["2"], key="make 24 using 1 2 3 5"))
    query = "make 24 using 1 2 3 4"
    assert memory.nearest(query, k=1) == [a]
    a.record = Record.admitted(helped=0, hurt=0, probes=[]).used(right=False, expected=1.0)
    b.record = Record.admitted(helped=4, hurt=0, probes=[])
    assert memory.nearest(query, k=1) == [b]
    assert [e.id for e in memory.entries] == ["e1", "e2"]


def test_the_budget_retires_the_least_useful_first():
    memory = EntryMemory()
    useful = memory.add(Entry("u" * 40, ["1"]))
    useful.record = Record.admitted(helped=2, hurt=0, probes=[])
    old = memory.add(Entry("o" * 40, ["2"]))
    new = memory.add(Entry("n" * 40, ["3"]))
    assert memory.tokens() == 30
    assert memory.fit(25) == [old.id] and memory.tokens() == 20
    assert memory.fit(10) == [new.id] and [e.id for e in memory.active()] == [useful.id]
    assert old.record.retired == "budget" and len(memory.entries) == 3


# -- end to end on the scripted engine ------------------------------------------------------------------------


def _memory_helps(call):
    """The stream's script, except that a solver shown a solved example answers its problem right."""
    if outputs(call)[-1] == "answer" and "Example 1:" in str(given(call, "memory")):
        numbers = numbers_of(given(call, "problem"))
        return {"reasoning": "as in the example", "answer": solve24(numbers) or answer_for(given(call, "problem"))}
    return respond(call)


def _scripted(monkeypatch, script=respond) -> ScriptedEngine:
    engine = ScriptedEngine(script)
    monkeypatch.setattr(
        "memreason.eval.harness.lms.resolve_lm", lambda spec, **kw: LMChoice(spec or "embedded", engine.lm(), local=False)
    )
    return engine


def _snapshots(run) -> list[dict]:
    paths = [run / "memory" / "seed.json", *sorted((run / "memory" / "order0").iterdir())]
    return [json.loads(p.read_text()) for p in paths]


def test_a_verified_run_keeps_what_helps_tries_only_scored_items_and_counts_the_cost_apart(tmp_path, monkeypatch):
    _scripted(monkeypatch, _memory_helps)
    run = tmp_path / "verified"
    argv = ["fewshot", "--task", "rg:puzzle24", "--size", "6", "--seed-size", "3", "--batch", "2", "--out", str(run)]
    assert eval_main([*argv, "--verify", "2", "--learn-from", "reference", "--no-progress", "--no-report"]) == 0
    results = json.loads((run / "results.json").read_text())
    lines = {r["id"]: r for r in (json.loads(x) for x in (run / "examples.jsonl").read_text().splitlines())}
    seeds = json.loads((run / "memory" / "seed.json").read_text())["items"]
    answered_before: set[str] = set(seeds)
    decisions = []
    for snapshot in _snapshots(run):
        answered_before |= set(snapshot["items"]) if snapshot["items"] != seeds else set()
        for write in snapshot["writes"]:
            decided = write["verify"]
            decisions.append(decided["decision"])
            probes = [p["id"] for p in decided["probes"]]
            assert write["item"] not in probes and set(probes) <= answered_before  # never its source, never unscored
            if decided["decision"] == "kept":
                assert decided["helped"] - decided["hurt"] >= 1
        kept = {e["id"] for e in snapshot["memory"]["entries"]}
        assert all(e["record"]["helped"] >= 1 for e in snapshot["memory"]["entries"] if e["id"] in kept)
    assert "kept" in decisions and "refused" in decisions
    assert results["writes"]["count"] == decisions.count("kept") and results["writes"]["asked"] == len(decisions)
    verification = results["verification"]
    assert verification["decisions"] == dict(sorted({d: decisions.count(d) for d in set(decisions)}.items()))
    assert verification["tokens"]["calls"] > 0 and verification["probe_answers"] > 0
    # the solver's own tokens are the items' alone: verification is counted apart
    assert results["tokens"]["task"]["calls"] == sum(r["tokens"]["calls"] for r in lines.values())


def test_the_budget_holds_in_every_snapshot(tmp_path, monkeypatch):
    _scripted(monkeypatch)
    run = tmp_path / "budget"
    argv = ["failure_memory", "--task", "rg:puzzle24", "--size", "4", "--seed-size", "3", "--batch", "2", "--out", str(run)]
    assert eval_main([*argv, "--memory-tokens", "12", "--no-progress", "--no-report"]) == 0
    for snapshot in _snapshots(run):
        active = [e for e in snapshot["memory"]["entries"] if not (e.get("record") or {}).get("retired")]
        assert sum(estimated_tokens(e["text"]) for e in active) <= 12
        assert len(snapshot["memory"]["entries"]) > len(active)  # the rest retired, kept in the snapshot


@pytest.mark.parametrize(
    "extra, said",
    [
        (["--verify", "2", "--learn-from", "self"], "--verify needs a score of the probes"),
        (["--verify", "2", "--learn-from", "none"], "--verify needs a score of the probes"),
        (["--verify", "-1"], "--verify must be"),
        (["--verify", "51"], "--verify must be"),
        (["--candidates", "3"], "--candidates: proposals are chosen among by verification"),
        (["--memory-tokens", "-5"], "--memory-tokens must be"),
    ],
)
def test_bad_verify_options_are_one_line_and_exit_2(extra, said, tmp_path, monkeypatch, capsys):
    engine = _scripted(monkeypatch)
    argv = ["fewshot", "--task", "rg:puzzle24", "--size", "4", "--out", str(tmp_path / "r"), *extra, "--no-progress"]
    assert eval_main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert said in err and "Traceback" not in err and not engine.calls
    assert not (tmp_path / "r").exists()


def test_a_budget_on_a_memory_it_cannot_cut_is_refused(tmp_path, monkeypatch, capsys):
    _scripted(monkeypatch)
    argv = ["arcmemo_ps_stream", "--task", "rg:puzzle24", "--memory-tokens", "100", "--out", str(tmp_path / "r")]
    assert eval_main([*argv, "--no-progress"]) == 2
    assert "--memory-tokens: arcmemo_ps_stream keeps no memory a token budget can cut" in capsys.readouterr().err


def test_two_runs_sharing_a_cache_answer_the_second_from_the_first(tmp_path, monkeypatch):
    engine = ScriptedEngine(respond)
    monkeypatch.setattr(
        "memreason.eval.harness.lms.resolve_lm",
        lambda spec, **kw: LMChoice(spec or "embedded", engine.lm(cache=True), local=False),
    )
    cache = tmp_path / "shared-cache"
    argv = ["stream_baseline", "--task", "rg:puzzle24", "--size", "4", "--cache", str(cache), "--no-progress", "--no-report"]
    assert eval_main([*argv, "--out", str(tmp_path / "first")]) == 0
    asked = len(engine.calls)
    assert asked > 0
    assert eval_main([*argv, "--out", str(tmp_path / "second")]) == 0
    assert len(engine.calls) == asked  # every prompt of the second run was the first's, answered from the cache
    first, second = (
        [json.loads(x)["prediction"] for x in (tmp_path / r / "examples.jsonl").read_text().splitlines()]
        for r in ("first", "second")
    )
    assert first == second


def test_the_table_shows_verified_rows_their_cost_and_the_prompts_they_share_with_no_memory(tmp_path, monkeypatch):
    from memreason.eval.stream.table import memory_table, write_table

    _scripted(monkeypatch, _memory_helps)
    common = ["--task", "rg:puzzle24", "--size", "6", "--seed-size", "3", "--batch", "2", "--learn-from", "reference"]
    runs = {"stream_baseline": [], "fewshot": ["--verify", "2"]}
    for program, extra in runs.items():
        assert eval_main([program, *common, *extra, "--out", str(tmp_path / program), "--no-progress", "--no-report"]) == 0
    table = memory_table([tmp_path / "stream_baseline", tmp_path / "fewshot"])
    cell = next(c for c in table["cells"] if c["program"] == "fewshot")
    assert cell["row"] == "fewshot, verified (2 probes)" and cell["verify_tokens"] > 0
    lines = {json.loads(x)["id"]: json.loads(x) for x in (tmp_path / "fewshot" / "examples.jsonl").read_text().splitlines()}
    assert cell["equal_prompts"] == sum(1 for r in lines.values() if not r["memory"])  # no memory shown: the baseline's prompt
    assert cell["equal_differed"] == 0  # the script answers a prompt one way
    write_table(table, tmp_path / "summary")
    text = (tmp_path / "summary" / "table.md").read_text()
    assert "points per 1,000 memory tokens" in text and "fewshot, verified (2 probes)" in text


def test_show_prints_the_memory_at_each_batch_and_each_entrys_record(tmp_path, monkeypatch, capsys):
    _scripted(monkeypatch, _memory_helps)
    run = tmp_path / "verified"
    argv = ["fewshot", "--task", "rg:puzzle24", "--size", "6", "--seed-size", "3", "--batch", "2", "--out", str(run)]
    assert eval_main([*argv, "--verify", "2", "--learn-from", "reference", "--no-progress"]) == 0
    capsys.readouterr()
    verification = json.loads((run / "results.json").read_text())["verification"]["tokens"]
    row = f"| verification | embedded | {verification['prompt']:,} | {verification['completion']:,} |"
    assert row in (run / "report.md").read_text()
    assert eval_main(["show", str(run)]) == 0
    out = capsys.readouterr().out
    assert "seed problems" in out and "batch 2" in out and "kept" in out and "helped/hurt" in out
    seed_writes = json.loads((run / "memory" / "seed.json").read_text())["writes"]
    probes = sum(w["verification"]["tokens"]["calls"] for w in seed_writes)
    seed_line = next(line for line in out.splitlines() if "seed problems" in line)
    assert "probe" in out and f" {probes} " in f"{seed_line} "  # the seed's verification calls, on its line
    final = json.loads((run / "memory" / "order0" / "batch0002.json").read_text())["memory"]["entries"]
    assert all(e["id"] in out for e in final)
    shown = next(json.loads(x) for x in (run / "examples.jsonl").read_text().splitlines() if json.loads(x)["memory"])
    assert eval_main(["show", str(run), "--id", shown["id"]]) == 0
    item = capsys.readouterr().out
    assert f"problem: {shown['question'][:30]}" in item and "memory shown (entries e" in item and "Example 1:" in item


def _playbook_helps(call):
    """The stream's script, except that a solver shown a playbook bullet answers right, and the curator adds a bullet
    of its own for each problem."""
    wanted = outputs(call)
    if "bullet_ids" in wanted and "[e" in str(given(call, "memory")):
        numbers = numbers_of(given(call, "problem"))
        cited = re.findall(r"\[(e\d+)\]", str(given(call, "memory")))[:1]
        return {"reasoning": "as the playbook says", "bullet_ids": cited, "answer": solve24(numbers) or "1 + 1"}
    if wanted[-1] == "operations":
        first = numbers_of(given(call, "problem"))[0]
        return {"operations": [{"op": "ADD", "section": "strategies", "content": f"Look for a product near 24 with {first}."}]}
    return respond(call)


def test_ace_with_verify_gives_each_bullet_it_admits_a_measured_record(tmp_path, monkeypatch):
    _scripted(monkeypatch, _playbook_helps)
    run = tmp_path / "ace"
    argv = ["ace", "--task", "rg:puzzle24", "--size", "6", "--seed-size", "3", "--batch", "2", "--out", str(run)]
    assert eval_main([*argv, "--verify", "2", "--learn-from", "reference", "--no-progress", "--no-report"]) == 0
    kept = 0
    for snapshot in _snapshots(run):
        bullets = {e["id"]: e for e in snapshot["memory"]["entries"]}
        for write in snapshot["writes"]:
            if write["verify"]["decision"] == "kept":
                kept += 1
                for bullet_id in write["verify"]["added"]:  # measured: the probes it turned right and wrong
                    assert bullets[bullet_id]["record"]["helped"] - bullets[bullet_id]["record"]["hurt"] >= 1
        assert all(set(e["extra"]["tags"]) == {"helpful", "harmful", "neutral"} for e in bullets.values())
    assert kept >= 1
    lines = [json.loads(x) for x in (run / "examples.jsonl").read_text().splitlines()]
    shown = [r for r in lines if r["read"]["ids"]]
    assert shown and all("[" + r["read"]["ids"][0] + "]" in r["memory"] for r in shown)
    assert any("Bullets used: e" in (r["reasoning"] or "") for r in shown)  # the solver's citations, kept with its attempt


def test_limit_is_the_stream_commands_size_as_every_evaluation_command_names_it(tmp_path, monkeypatch):
    _scripted(monkeypatch)
    argv = ["stream_baseline", "--task", "rg:puzzle24", "--limit", "3", "--seed-size", "0", "--no-progress", "--no-report"]
    assert eval_main([*argv, "--out", str(tmp_path / "r")]) == 0
    assert json.loads((tmp_path / "r" / "config.json").read_text())["size"] == 3
    assert len((tmp_path / "r" / "examples.jsonl").read_text().splitlines()) == 3


def test_a_write_that_changes_nothing_still_has_its_spend_recorded():
    program = FewShot(k=3)
    verifier = WriteVerifier(VerifySettings(probes=2), answer=_answers(right_without=set()))
    wrong = Lesson("1", "Make 24 using 1, 2, 3, 4.", "1 + 1", False, "", "reference")
    decided = verifier.write(program, wrong, POOL, learn=lambda k: {"kept": False, "tokens": {"calls": 1}})
    assert decided["decision"] == "unchanged" and decided["writes"] == [{"kept": False, "tokens": {"calls": 1}}]


def test_a_run_with_several_proposals_a_write_samples_them_and_records_each(tmp_path, monkeypatch):
    engine = _scripted(monkeypatch, _memory_helps)
    run = tmp_path / "candidates"
    argv = ["failure_memory", "--task", "rg:puzzle24", "--size", "4", "--seed-size", "3", "--batch", "2", "--out", str(run)]
    argv += ["--verify", "2", "--candidates", "2", "--learn-from", "reference", "--no-progress", "--no-report"]
    assert eval_main(argv) == 0
    writes = [w for s in _snapshots(run) for w in s["writes"]]
    sampled = [c for c in engine.calls if "`lessons`" in c.system and c.temperature == 0.7]
    assert sampled  # the second proposal of a write was asked at the sampling temperature
    for write in writes:
        if write["verify"]["decision"] != "unchanged":
            assert {c["candidate"] for c in write["verify"]["candidates"]} <= {0, 1}
    assert all(len(w["verify"]["other_candidates"]) == 1 for w in writes)  # the second proposal's write, recorded
    results = json.loads((run / "results.json").read_text())
    assert results["verification"]["candidates"] == 2
