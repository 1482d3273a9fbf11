"""``python -m eval <stream program> --task rg:NAME``: reasoning-gym's tasks by name, the stream protocol, offline."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

import pytest

from memreason.datasets.gym import GymData, disjoint, seed_stream
from memreason.eval.cli import main as eval_main
from memreason.eval.stream.run import StreamRun
from memreason.eval.tasks import get_task
from memreason.lm import LMChoice, ScriptedEngine
from memreason.programs.registry import PROGRAMS, STREAM
from tests.helpers.scripted_answers import outputs
from tests.helpers.stream_answers import respond


def _scripted(monkeypatch) -> ScriptedEngine:
    engine = ScriptedEngine(respond)

    def resolve(spec, **kw):
        return LMChoice(spec or "embedded", engine.lm(), local=False)

    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", resolve)
    return engine


def _lines(run) -> list[dict]:
    return [json.loads(line) for line in (run / "examples.jsonl").read_text().splitlines()]


def test_a_reasoning_gym_task_by_name_end_to_end_and_resumed(tmp_path, monkeypatch, capsys):
    engine = _scripted(monkeypatch)
    run = tmp_path / "fewshot"
    argv = ["fewshot", "--task", "rg:puzzle24", "--size", "6", "--seed-size", "3", "--batch", "2", "--out", str(run)]
    assert eval_main([*argv, "--no-progress"]) == 0
    assert "fewshot on rg:puzzle24: accuracy" in capsys.readouterr().out
    results = json.loads((run / "results.json").read_text())
    config = json.loads((run / "config.json").read_text())
    assert results["task"] == config["task"] == "rg:puzzle24" and results["examples"] == 6
    assert results["learn_from"] == config["learn_from"] == "check"  # puzzle24 has a reference-free check
    assert results["seed_solutions"] == "reference" and results["seed_problems"] == 3 and results["streams_disjoint"]
    assert results["guard"] == {"withheld_entries": 0, "items_with_withheld": 0}
    lines = _lines(run)
    assert sorted(r["id"] for r in lines) == [str(i) for i in range(6)]
    assert 0 < results["accuracy"]["mean"] < 1  # the script answers some right, some wrong
    assert all(r["correct"] == (r["checked"] is True) for r in lines)  # the check agrees with the scorer here
    snapshots = sorted(p.name for p in (run / "memory" / "order0").iterdir())
    assert snapshots == ["batch0000.json", "batch0001.json", "batch0002.json"] and (run / "memory" / "seed.json").exists()
    calls = len(engine.calls)
    assert eval_main([*argv, "--no-progress"]) == 0 and len(engine.calls) == calls  # finished: nothing asked again
    # a crash in the last batch: its snapshot and one of its lines lost; the rest is not done again
    (run / "memory" / "order0" / "batch0002.json").unlink()
    kept = [r for r in lines if r["batch"] != 2 or r["position"] != 5]
    (run / "examples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept))
    assert eval_main(["--resume", str(run), "--no-progress"]) == 0
    again = json.loads((run / "results.json").read_text())
    assert again["accuracy"] == results["accuracy"] and len(_lines(run)) == 6
    assert (run / "memory" / "order0" / "batch0002.json").exists()


@pytest.mark.parametrize("program", [name for name, spec in PROGRAMS.items() if spec.kind == STREAM])
def test_each_memory_program_runs_on_a_stream_task(program, tmp_path, monkeypatch):
    _scripted(monkeypatch)
    run = tmp_path / program
    argv = [program, "--task", "rg:puzzle24", "--size", "4", "--seed-size", "2", "--batch", "2", "--out", str(run)]
    argv += ["--answer", "function"] if program == "stored_programs" else []
    assert eval_main([*argv, "--no-progress", "--no-report"]) == 0
    results = json.loads((run / "results.json").read_text())
    assert results["program"] == program and results["examples"] == 4 and results["writes"]["asked"] == 2 + 4
    if program == "stream_baseline":
        assert results["writes"]["count"] == 0  # no memory: no write changed anything
    else:
        assert 0 < results["writes"]["count"] <= 2 + 4
    assert results["writes"]["failed"] == 0
    memory = json.loads((run / "memory" / "order0" / "batch0001.json").read_text())
    if program != "stream_baseline":
        assert results["memory_size"][0] > 0 and memory["memory"]
        assert any(r["memory"] for r in _lines(run))  # memory reached the solver's prompt


def test_the_guard_withholds_an_items_own_entries_and_counts_them(tmp_path, monkeypatch):
    _scripted(monkeypatch)
    drawn = GymData.seed_items

    def same_ids(self, seed=0, size=10, *, avoid=()):  # seed problems named as the test items are: their entries
        return [replace(item, id=str(index)) for index, item in enumerate(drawn(self, seed, size, avoid=avoid))]

    monkeypatch.setattr(GymData, "seed_items", same_ids)
    run = tmp_path / "guard"
    argv = ["fewshot", "--task", "rg:puzzle24", "--size", "4", "--seed-size", "2", "--batch", "0", "--out", str(run)]
    assert eval_main([*argv, "--no-progress", "--no-report"]) == 0
    results = json.loads((run / "results.json").read_text())
    assert results["guard"] == {"withheld_entries": 2, "items_with_withheld": 2}
    seeds = json.loads((run / "memory" / "seed.json").read_text())["memory"]["entries"]
    for record in _lines(run):
        own = [e["text"] for e in seeds if record["id"] in e["sources"]]
        assert record["withheld"] == len(own) and not any(text in record["memory"] for text in own)


def test_seed_and_test_streams_are_disjoint_and_test_items_distinct():
    repeats = GymData("number_sequence").items(seed=0, size=50)
    assert len({i.question for i in repeats}) < 50  # this generator repeats small problems
    distinct = GymData("number_sequence").items(seed=0, size=50, distinct=True)
    assert len({i.question for i in distinct}) == 50 and distinct[0] == repeats[0]
    data = GymData("puzzle24")
    tests = data.items(seed=0, size=40, distinct=True)
    seeds = data.seed_items(seed=0, size=20, avoid=tests)
    assert disjoint(seeds, tests) and len(seeds) == 20
    assert all(s.id.startswith("s") for s in seeds)
    # a drawn seed problem that repeats a test question is dropped, never kept
    drawn = data.items(seed_stream(0), 10, prefix="s")
    clash = [drawn[3], drawn[7]]
    seeds = data.seed_items(seed=0, size=20, avoid=[*tests, *clash])
    assert disjoint(seeds, [*tests, *clash]) and {s.id for s in seeds}.isdisjoint({"s3", "s7"})


def test_a_reference_answer_never_reaches_memory_before_its_item_is_scored(tmp_path, monkeypatch):
    _scripted(monkeypatch)
    events: list[tuple[str, str]] = []
    targets: dict[str, str] = {}
    learned = StreamRun._learn

    def learn(self, program, lesson, *, unit):
        events.append(("learn", lesson.item_id))
        if not lesson.item_id.startswith("s"):  # a test item: its lesson holds the model's solution, never the reference
            assert ("score", lesson.item_id) in events
            assert lesson.solution != targets[lesson.item_id] or lesson.verdict is not None
        return learned(self, program, lesson, unit=unit)

    task = get_task("rg:puzzle24")
    scored = type(task).score

    def score(self, data, item, answer):
        events.append(("score", item.id))
        targets[item.id] = item.answer
        return scored(self, data, item, answer)

    monkeypatch.setattr(StreamRun, "_learn", learn)
    monkeypatch.setattr(type(task), "score", score)
    run = tmp_path / "ref"
    argv = ["cheatsheet_cu", "--task", "rg:puzzle24", "--size", "6", "--seed-size", "2", "--batch", "3", "--learn-from"]
    assert eval_main([*argv, "reference", "--threads", "3", "--out", str(run), "--no-progress", "--no-report"]) == 0
    tests = [e for e in events if not e[1].startswith("s")]
    for item in {i for _, i in tests}:
        assert tests.index(("score", item)) < tests.index(("learn", item))
    # a batch is written only once every item of it was scored
    batches: dict[int, list[str]] = {}
    for record in _lines(run):
        batches.setdefault(record["batch"], []).append(record["id"])
    for ids in batches.values():
        first_write = min(tests.index(("learn", i)) for i in ids)
        assert all(tests.index(("score", i)) < first_write for i in ids)
    config = json.loads((run / "config.json").read_text())
    assert config["learn_from"] == "reference"
    sheet = json.loads((run / "memory" / "order0" / "batch0001.json").read_text())
    written = json.dumps(sheet["writes"])
    assert all(w["learned_from"] == "reference" for w in sheet["writes"]) and "target" not in written


def test_several_orders_report_mean_and_spread(tmp_path, monkeypatch):
    _scripted(monkeypatch)
    run = tmp_path / "orders"
    argv = ["arcmemo_ps_stream", "--task", "rg:puzzle24", "--size", "4", "--seed-size", "1", "--batch", "2"]
    assert eval_main([*argv, "--orders", "3", "--order-seed", "5", "--out", str(run), "--no-progress", "--no-report"]) == 0
    results = json.loads((run / "results.json").read_text())
    assert results["orders"] == 3 and len(results["accuracy"]["per_run"]) == 3 and results["order_seeds"] == [5, 6, 7]
    lines = _lines(run)
    orders = [[r["id"] for r in sorted((r for r in lines if r["run"] == o), key=lambda r: r["position"])] for o in range(3)]
    assert len({tuple(o) for o in orders}) > 1 and all(sorted(o) == ["0", "1", "2", "3"] for o in orders)


def test_answers_as_programs_run_in_the_sandbox(tmp_path, monkeypatch):
    engine = _scripted(monkeypatch)
    run = tmp_path / "program"
    argv = ["stream_baseline", "--task", "rg:puzzle24", "--size", "3", "--seed-size", "0", "--answer", "program"]
    assert eval_main([*argv, "--out", str(run), "--no-progress", "--no-report"]) == 0
    lines = _lines(run)
    assert all(r["solution"].startswith("print(") for r in lines)
    assert all(r["prediction"] == r["solution"][len("print('") : -len("')")] for r in lines)
    wrong = [r for r in lines if not r["checked"]]
    assert all(r["attempts"] == 3 and "fails the check" in r["feedback"][0] for r in wrong)  # retried on the check
    assert any("[[ ## feedback ## ]]" in c.user_text for c in engine.calls) == bool(wrong)


@pytest.mark.parametrize(
    "argv, said",
    [
        (["fewshot", "--task", "rg:no_such_dataset"], "unknown reasoning-gym dataset 'no_such_dataset'"),
        (["fewshot", "--task", "rg:puzzle24", "--task-config", '{"bogus": 1}'], "puzzle24 refuses the config"),
        (["fewshot", "--task", "rg:puzzle24", "--task-config", "[1]"], "--task-config must be a JSON object"),
        (["fewshot", "--task", "rg:puzzle24", "--task-config", "{"], "--task-config must be a JSON object"),
        (["fewshot", "--task", "rg:basic_arithmetic", "--learn-from", "check"], "has no check that needs no reference"),
        (["fewshot", "--task", "acre"], "acre is not a stream task"),
        (["fewshot"], "give --task rg:NAME"),
        (["hdr", "--task", "rg:puzzle24"], "hdr does not run on rg:puzzle24"),
        (["fewshot", "--task", "rg:puzzle24", "--size", "0"], "--size must be at least 1"),
        (["fewshot", "--task", "rg:puzzle24", "--answer", "poem"], "invalid choice"),
        (["stored_programs", "--task", "rg:puzzle24"], "give --answer function"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, said, tmp_path, monkeypatch, capsys):
    _scripted(monkeypatch)
    assert eval_main([*argv, "--out", str(tmp_path / "run"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert said in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_the_prefix_reuse_benchmark_runs_against_a_stand_in_server(monkeypatch, capsys):
    from memreason.eval.bench.prefix_memory import main as bench
    from memreason.lm.stub_server import StubServer

    monkeypatch.setenv("OPENAI_API_KEY", "stub-key")
    with StubServer(latency=0, fail_rate=0) as stub:
        argv = [
            "--program",
            "fewshot",
            "--task",
            "rg:puzzle24",
            "--size",
            "2",
            "--seed-size",
            "2",
            "--lm",
            "openai/stub",
            "--api-base",
            stub.url,
        ]
        assert bench(argv) == 0
        erased = [a for a in stub.stats()["slot_actions"] if a.endswith("action=erase")]
    out = capsys.readouterr().out
    assert "memory first" in out and "problem first" in out and "not reported" in out
    sent = [int(line.split("sent per item")[1].split(",")[0]) for line in out.splitlines() if "sent per item" in line]
    assert len(sent) == 2 and all(n > 0 for n in sent)
    assert len(erased) >= 2  # the slots were erased before each pass
    assert bench(["--program", "hdr", "--task", "rg:puzzle24"]) == 2 and "does not run on rg:puzzle24" in capsys.readouterr().out


@pytest.mark.parametrize("learn_from, verdicts", [("self", {"True"}), ("none", {"None"}), ("reference", {"True", "False"})])
def test_what_writes_learn_from_is_recorded(learn_from, verdicts, tmp_path, monkeypatch):
    engine = _scripted(monkeypatch)
    run = tmp_path / learn_from
    argv = ["fewshot", "--task", "rg:puzzle24", "--size", "4", "--seed-size", "1", "--batch", "4"]
    assert eval_main([*argv, "--learn-from", learn_from, "--out", str(run), "--no-progress", "--no-report"]) == 0
    results = json.loads((run / "results.json").read_text())
    assert results["learn_from"] == learn_from and results["config"]["learn_from"] == learn_from
    writes = json.loads((run / "memory" / "order0" / "batch0000.json").read_text())["writes"]
    assert {str(w["verdict"]) for w in writes} == verdicts and all(w["learned_from"] == learn_from for w in writes)
    judged = [c for c in engine.calls if "`correct`" in c.system.split("output fields")[-1]]
    assert len(judged) == (4 if learn_from == "self" else 0)  # the model's own judgement: one call a write
    assert (results["tokens"]["memory"]["calls"] > 0) == (learn_from == "self")


def test_runs_on_a_task_without_a_check_are_compared_item_by_item(tmp_path, monkeypatch):
    _scripted(monkeypatch)
    for program in ("stream_baseline", "fewshot"):
        argv = [program, "--task", "rg:basic_arithmetic", "--size", "4", "--seed-size", "2", "--batch", "2"]
        assert eval_main([*argv, "--out", str(tmp_path / program), "--no-progress", "--no-report"]) == 0
    results = json.loads((tmp_path / "fewshot" / "results.json").read_text())
    assert results["learn_from"] == "self" and results["checked_share"] is None  # no check: the model's own judgement
    out = tmp_path / "compare"
    assert eval_main(["report", str(tmp_path / "stream_baseline"), str(tmp_path / "fewshot"), "--out", str(out)]) == 0
    assert "McNemar" in (out / "report.md").read_text()
    task = get_task("rg:basic_arithmetic")
    assert task.checker is None and "fewshot" in task.programs()
    assert "ARC grids" in task.not_applicable()["arcmemo_ps"] and "episodes" in task.not_applicable()["hdr"]


def test_stored_programs_are_run_on_the_new_problem_and_the_working_one_kept(tmp_path, monkeypatch):
    engine = _scripted(monkeypatch)
    run = tmp_path / "stored"
    argv = ["stored_programs", "--task", "rg:puzzle24", "--size", "6", "--seed-size", "2", "--batch", "2"]
    assert eval_main([*argv, "--answer", "function", "--out", str(run), "--no-progress", "--no-report"]) == 0
    lines = sorted(_lines(run), key=lambda r: r["position"])
    stored = json.loads((run / "memory" / "order0" / "batch0002.json").read_text())["memory"]["entries"]
    assert stored and all("def solve" in e["text"] for e in stored)  # only functions judged right are kept
    later = [r for r in lines if r["read"]["shown"]]
    assert later and all(r["read"]["shown"][0]["passed"] for r in later)  # the working solver ranks first
    assert any("passes the check" in r["memory"] for r in later)
    assert any("passes the check" in c.user_text for c in engine.calls)  # and reaches the solver's prompt


def test_the_memory_by_task_table_pairs_each_cell_with_its_baseline(tmp_path, monkeypatch, capsys):
    _scripted(monkeypatch)
    runs = []
    for task in ("rg:puzzle24", "rg:basic_arithmetic"):
        for program in ("stream_baseline", "fewshot"):
            run = tmp_path / task.replace(":", "-") / program
            argv = [program, "--task", task, "--size", "4", "--seed-size", "2", "--batch", "2", "--learn-from", "reference"]
            assert eval_main([*argv, "--out", str(run), "--no-progress", "--no-report"]) == 0
            runs.append(str(run))
    out = tmp_path / "table"
    assert eval_main(["memory_table", *runs[::-1], "--baseline", "rg:puzzle24=stream_baseline", "--out", str(out)]) == 0
    table = json.loads((out / "table.json").read_text())
    assert table["columns"] == ["rg:basic_arithmetic", "rg:puzzle24"]
    assert table["baselines"] == {"rg:basic_arithmetic": "fewshot", "rg:puzzle24": "stream_baseline"}  # given, else first
    compared = [c for c in table["cells"] if c["gain"] is not None]
    assert len(compared) == 2 and all(c["paired_items"] == 4 and 0 <= c["p_value"] <= 1 for c in compared)
    assert (out / "gains.png").stat().st_size > 0 and "(baseline)" in (out / "table.md").read_text()
    assert eval_main(["memory_table", str(tmp_path), "--out", str(out)]) == 2  # not a run: one line
    assert eval_main(["memory_table", *runs, runs[0], "--out", str(out)]) == 0  # a directory given twice counts once
    assert len(json.loads((out / "table.json").read_text())["cells"]) == 4
    again = tmp_path / "again"
    shutil.copytree(runs[1], again)  # a second run of one program in one column: which to show is not the table's guess
    assert eval_main(["memory_table", *runs, str(again), "--out", str(out)]) == 2
    assert "two runs of fewshot in column rg:puzzle24" in capsys.readouterr().err


def test_writes_read_the_reasoning_or_the_answer_alone_as_the_run_says(tmp_path, monkeypatch, capsys):
    engine = _scripted(monkeypatch)
    argv = ["cheatsheet_cu", "--task", "rg:puzzle24", "--size", "4", "--seed-size", "1", "--batch", "2"]
    curated: dict[str, list[str]] = {}
    for lesson in ("reasoning", "answer"):
        start = len(engine.calls)
        run = tmp_path / lesson
        assert eval_main([*argv, "--lesson", lesson, "--out", str(run), "--no-progress", "--no-report"]) == 0
        results = json.loads((run / "results.json").read_text())
        assert results["lesson"] == results["config"]["lesson"] == lesson
        assert all(r["reasoning"] in ("worked it out", "fixed") for r in _lines(run))  # kept either way
        curated[lesson] = [c.user_text for c in engine.calls[start:] if outputs(c)[-1] == "updated_cheatsheet"]
    assert len(curated["reasoning"]) == len(curated["answer"]) == 1 + 4
    # the seed problem's write has a reference answer and no reasoning; each test item's write, the solver's reasoning
    assert sum("Reasoning: " in text for text in curated["reasoning"]) == 4
    assert not any("Reasoning: " in text for text in curated["answer"])
    # a run saved before writes could read reasoning read answers alone: it continues as that, and is not another run
    run = tmp_path / "answer"
    config = json.loads((run / "config.json").read_text())
    del config["lesson"]
    (run / "config.json").write_text(json.dumps(config))
    assert eval_main(["--resume", str(run), "--no-progress", "--no-report"]) == 0
    assert eval_main([*argv, "--out", str(run), "--no-progress", "--no-report"]) == 2  # the default reads reasoning
    assert "lesson 'answer' != 'reasoning'" in capsys.readouterr().err
    # in the table, the two are two rows of one program
    base = tmp_path / "base"
    assert eval_main(["stream_baseline", *argv[1:], "--out", str(base), "--no-progress", "--no-report"]) == 0
    out = tmp_path / "table"
    assert eval_main(["memory_table", str(base), str(tmp_path / "reasoning"), str(run), "--out", str(out)]) == 0
    table = json.loads((out / "table.json").read_text())
    assert table["rows"] == ["stream_baseline", "cheatsheet_cu", "cheatsheet_cu, answers only"]
    assert sum(c["gain"] is not None for c in table["cells"]) == 2
    # a baseline named by program is that program's own row, whichever run was given first
    argv = ["memory_table", str(run), str(tmp_path / "reasoning"), "--out", str(out)]
    for wanted in ("cheatsheet_cu", "cheatsheet_cu, answers only"):
        assert eval_main([*argv, "--baseline", f"rg:puzzle24={wanted}"]) == 0
        assert json.loads((out / "table.json").read_text())["baselines"] == {"rg:puzzle24": wanted}
