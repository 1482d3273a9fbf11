"""``--task et:LN``: Experience-Transfer's scenes as a stream task, its labelled episodes the seed problems."""

from __future__ import annotations

import json

import pytest

from memreason.datasets.experience_transfer import make_level
from memreason.datasets.experience_transfer.stream import SceneStream, SceneStreamError
from memreason.eval.cli import main as eval_main
from memreason.eval.harness.errors import UsageError
from memreason.eval.stream.table import memory_table
from memreason.eval.tasks import get_task
from memreason.lm import LMChoice, ScriptedEngine
from memreason.programs.registry import PROGRAMS, STREAM
from tests.helpers.stream_answers import respond


def _scripted(monkeypatch) -> ScriptedEngine:
    engine = ScriptedEngine(respond)
    monkeypatch.setattr(
        "memreason.eval.harness.lms.resolve_lm", lambda spec, **kw: LMChoice(spec or "embedded", engine.lm(), local=False)
    )
    return engine


def test_scenes_are_drawn_by_seed_and_scored_by_their_count():
    data = SceneStream(2)
    tests = data.items(seed=7, size=40)
    level = make_level(2, seed=7)
    by_id = {scene.id: scene for scene in level.test}
    assert [t.id for t in tests] == [t.id for t in SceneStream(2).items(seed=7, size=40)]  # seeded
    assert len({t.id for t in tests}) == 40 and {t.id for t in tests} <= set(by_id)
    assert len({t.answer for t in tests}) > 1  # the level lists scenes by count; the draw mixes them
    first = tests[0]
    assert by_id[first.id].text() in first.question and level.query in first.question
    assert first.answer == str(by_id[first.id].target)
    assert data.score(first, f"There are {first.answer} of them.") == 1.0
    assert data.score(first, str(int(first.answer) + 1)) == 0.0 and data.score(first, None) == 0.0
    assert [t.id for t in data.items(seed=8, size=5)] != [t.id for t in tests[:5]]


def test_seed_problems_are_the_levels_labelled_episodes():
    data = SceneStream(2)
    level = make_level(2, seed=7)
    seeds = data.seed_items(seed=7, size=len(level.episodes))
    with pytest.raises(SceneStreamError, match=f"level 2 has {len(level.episodes)} labelled episodes"):
        data.seed_items(seed=7, size=len(level.episodes) + 1)  # never fewer than asked for, silently
    assert len(seeds) == len(level.episodes) and {s.answer for s in seeds} == set(level.rules.labels)
    episode = {e.id: e for e in level.episodes}[seeds[0].id[1:]]
    assert episode.text() in seeds[0].question and seeds[0].answer == episode.label
    assert len(data.seed_items(seed=7, size=5)) == 5 and data.seed_items(seed=7, size=0) == []
    assert not {s.question for s in seeds} & {t.question for t in data.items(seed=7, size=40)}


def test_bad_levels_and_configs_are_refused():
    with pytest.raises(SceneStreamError, match="levels 1, 2, 3"):
        SceneStream(4)
    with pytest.raises(SceneStreamError, match="takes no config"):
        SceneStream(2, {"rules": "x"})
    with pytest.raises(SceneStreamError, match="has 150 test scenes"):
        SceneStream(1).items(seed=0, size=1000)
    with pytest.raises(UsageError, match="et:L1, et:L2 or et:L3"):
        get_task("et:L9")
    assert get_task("et:L2").name == "et:L2" and get_task("et:L2").checker is None


@pytest.mark.parametrize(
    "program", [name for name, spec in PROGRAMS.items() if spec.kind == STREAM and name != "stored_programs"]
)
def test_each_stream_program_runs_on_experience_transfer_scenes(program, tmp_path, monkeypatch):
    _scripted(monkeypatch)
    run = tmp_path / program
    argv = [program, "--task", "et:L2", "--size", "4", "--seed-size", "3", "--batch", "2", "--learn-from", "reference"]
    assert eval_main([*argv, "--out", str(run), "--no-progress", "--no-report"]) == 0
    results = json.loads((run / "results.json").read_text())
    assert results["task"] == "et:L2" and results["examples"] == 4 and results["seed_problems"] == 3
    data = SceneStream(2)
    expected = {t.id: t for t in data.items(seed=0, size=4)}
    for line in (run / "examples.jsonl").read_text().splitlines():
        record = json.loads(line)
        assert record["correct"] == (data.score(expected[record["id"]], record["prediction"]) == 1.0)
    cell = memory_table([run])["cells"][0]
    assert cell["column"] == "et:L2" and cell["program"] == program


def test_programs_of_other_kinds_say_why_not(tmp_path, monkeypatch, capsys):
    _scripted(monkeypatch)
    assert eval_main(["hdr", "--task", "et:L2", "--out", str(tmp_path / "r"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "hdr does not run on et:L2" in err and len(err.splitlines()) == 1
    assert eval_main(["fewshot", "--task", "et:L2", "--task-config", '{"level": 3}', "--out", str(tmp_path / "s")]) == 2
    assert "takes no config" in capsys.readouterr().err


def test_the_table_says_why_a_program_cannot_run_on_a_column(tmp_path, monkeypatch):
    from memreason.eval.stream.table import write_table

    _scripted(monkeypatch)
    runs = []
    for task, program in (("et:L2", "stream_baseline"), ("et:L2", "fewshot"), ("rg:basic_arithmetic", "stream_baseline")):
        run = tmp_path / f"{task.replace(':', '-')}-{program}"
        argv = [program, "--task", task, "--size", "3", "--seed-size", "2", "--batch", "3", "--learn-from", "reference"]
        assert eval_main([*argv, "--out", str(run), "--no-progress", "--no-report"]) == 0
        runs.append(run)
    from tests.helpers.scripted_answers import oracle_counter

    engine = ScriptedEngine(oracle_counter())
    monkeypatch.setattr(
        "memreason.eval.harness.lms.resolve_lm", lambda spec, **kw: LMChoice(spec or "embedded", engine.lm(), local=False)
    )
    episodic = tmp_path / "episodic"
    assert eval_main(["episodic", "--level", "1", "--limit", "2", "--out", str(episodic), "--no-progress", "--no-report"]) == 0
    table = memory_table([*runs, episodic])
    cannot = table["cannot_run"]
    assert "episodes" in cannot["et:L2"]["episodic"] and "episodes" in cannot["rg:basic_arithmetic"]["episodic"]
    assert "fewshot" not in cannot.get("rg:basic_arithmetic", {})  # it could run there: not run, not impossible
    assert set(cannot["experience_transfer L1"]) == {"stream_baseline", "fewshot"}
    text = write_table(table, tmp_path / "out")[1].read_text()
    assert "cannot run [1]" in text and "not run" in text and "\n[1] " in text
