"""Level 3: accuracy on the objects of masked combinations apart from the rest, in results, tables and ``show``."""

import json

from memreason.datasets.experience_transfer import make_level
from memreason.eval.cli import main as eval_main
from memreason.eval.experience_transfer import run as run_module
from memreason.eval.experience_transfer.hypothesis_scoring import masked_coverage
from memreason.eval.experience_transfer.masked import align_objects, masked_results, object_masks
from memreason.lm import LMChoice, ScriptedEngine
from tests.helpers.scripted_answers import Script, perceiver
from tests.programs.test_rule_reader import TABLE, exact_rules, first_rule_labeller


def record_of(scene, labels):
    objects = [
        {"object_and_background": f"{o.color} {o.shape} on a {scene.background} background", "label": label}
        for o, label in zip(scene.objects, labels)
    ]
    count = sum(label == "anomaly" for label in labels)
    return {
        "id": scene.id,
        "objects": len(scene.objects),
        "target": scene.target,
        "prediction": count,
        "correct": count == scene.target,
        "object_labels": objects,
        "true_labels": scene.labels,
    }


def test_masked_objects_are_scored_apart_from_the_rest_and_undecidable_ones_counted():
    data = make_level(3, rules=TABLE)
    scenes = data.test[:30]
    # a reader right on every visible object and wrong on every masked one
    flip = {"anomaly": "normal", "normal": "anomaly"}
    recs = [record_of(s, [flip[t] if m else t for t, m in zip(s.labels, object_masks(s, data))]) for s in scenes]
    hidden = sum(sum(object_masks(s, data)) for s in scenes)
    shown = sum(len(s.objects) for s in scenes) - hidden
    assert 0 < hidden < shown
    open_ = {"combination": {"shape": "square", "color": "red", "background": "black"}, "labels": {}, "memory_label": None}
    result = masked_results([recs], [{"undecidable": [open_]}], data)
    assert result["objects"]["masked"] == {"n": hidden, "accuracy": 0.0, "ci": result["objects"]["masked"]["ci"]}
    assert result["objects"]["visible"]["n"] == shown and result["objects"]["visible"]["accuracy"] == 1.0
    assert result["objects"]["masked"]["ci"][1] < 0.5 < result["objects"]["visible"]["ci"][0]  # Wilson, over objects
    with_masked = [s for s in scenes if any(object_masks(s, data))]
    assert result["scenes"]["with_masked"]["n"] == len(with_masked) and result["scenes"]["with_masked"]["accuracy"] == 0.0
    assert result["scenes"]["without_masked"]["accuracy"] == 1.0
    assert result["undecidable"]["objects"] == [hidden] and result["undecidable"]["accuracy"]["accuracy"] == 0.0
    # without per-object labels, scenes alone; a level with no mask has no entry
    plain = [{k: v for k, v in r.items() if k not in ("object_labels", "true_labels")} for r in recs]
    assert masked_results([plain], [{}], data)["objects"] is None
    # a memory that records no undecidable combinations (hdr_grounded without generalise, every other row): no count
    assert masked_results([recs], [{}], data)["undecidable"] is None
    assert masked_results([recs], [{"undecidable": []}], data)["undecidable"]["objects"] == [0]
    assert masked_results([recs], [{}], make_level(2, rules=TABLE)) is None
    # a scene that failed has no object labels: its objects count wrong, the others are still scored
    failed = [{k: v for k, v in r.items() if k != "object_labels"} if i == 0 else r for i, r in enumerate(recs)]
    visible = masked_results([failed], [{}], data)["objects"]["visible"]
    first_visible = sum(not m for m in object_masks(scenes[0], data))
    assert visible["n"] == shown and visible["accuracy"] == (shown - first_visible) / shown


def test_objects_are_matched_by_their_words_before_their_position():
    scene = next(s for s in make_level(3, rules=TABLE).test if len({(o.color, o.shape) for o in s.objects}) == len(s.objects))
    described = [{"object_and_background": f"{o.color} {o.shape}s"} for o in reversed(scene.objects)]
    n = len(scene.objects)
    assert align_objects(scene, described) == list(reversed(range(n)))
    assert align_objects(scene, [{"object_and_background": "a thing"}] * n) == list(range(n))  # by position
    assert align_objects(scene, []) == [None] * n


def test_hypothesis_scoring_names_the_true_rules_over_a_masked_combination_and_whether_memory_holds_one():
    data = make_level(3, rules=TABLE)
    general = {"rules": [{"conditions": {"color": ["red"]}, "label": "anomaly"}]}
    exact = {"rules": [{"conditions": {"color": ["red"], "shape": ["square"], "background": ["white"]}, "label": "anomaly"}]}
    wrong = {"hypotheses": ["On a black background, square objects are labelled normal."]}
    (entry,) = masked_coverage(general, data)
    assert entry["combination"] == {"shape": "square", "color": "red", "background": "black"} and entry["label"] == "anomaly"
    assert entry["true_rules"] and all("red" in t for t in entry["true_rules"])
    assert entry["memory"] == "right" and entry["holds"]
    assert masked_coverage(exact, data)[0]["memory"] == "none" and not masked_coverage(exact, data)[0]["holds"]
    assert masked_coverage(wrong, data)[0]["memory"] == "wrong"


def test_a_level_3_table_reports_masked_objects_per_row_and_show_marks_them(tmp_path, monkeypatch, capsys):
    table_path = tmp_path / "red.json"
    table_path.write_text(json.dumps(TABLE.to_dict()))
    engine = ScriptedEngine(Script(factors={"factors": []}, rules=exact_rules, objects=perceiver, label=first_rule_labeller))
    resolve = lambda spec, **kw: LMChoice("embedded", engine.lm(), local=False)  # noqa: E731
    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", resolve)
    monkeypatch.setattr("memreason.eval.experience_transfer.table_cells.resolve_lm", resolve)
    build = run_module.build_program  # hdr_grounded with the knobs that reach masked combinations, set explicitly
    knobs = {"generalise": True, "apply_rules": True}
    monkeypatch.setattr(
        run_module, "build_program", lambda name, **kw: build(name, **(knobs if name == "hdr_grounded" else {}), **kw)
    )
    out = tmp_path / "tables"
    argv = ["table3", "--rows", "hdr_grounded,semantic_oracle_cot", "--per-object", "--retrieve-k", "3", "--levels", "3"]
    assert eval_main([*argv, "--rules", str(table_path), "--limit", "12", "--out", str(out), "--no-progress"]) == 0
    cells = {c.name.split("-L3")[0]: c for c in (out / "cells").iterdir()}
    results = json.loads((cells["hdr_grounded"] / "results.json").read_text())
    masked = results["masked"]
    assert masked["objects"]["masked"]["n"] > 0 and masked["objects"]["masked"]["accuracy"] == 1.0
    assert masked["undecidable"]["objects"] == [0]
    (coverage,) = results["hypothesis_f1"]["per_run"][0]["masked"]
    assert coverage["holds"] and coverage["memory"] == "right"
    oracle = json.loads((cells["semantic_oracle_cot"] / "results.json").read_text())["masked"]
    assert oracle["objects"]["masked"]["n"] == masked["objects"]["masked"]["n"]  # every row, the same objects
    table = json.loads((out / "table3.json").read_text())
    assert all(
        c["masked"]["objects"]["masked"]["n"] == masked["objects"]["masked"]["n"] for r in table["rows"] for c in r["cells"]
    )
    markdown = (out / "table3.md").read_text()
    assert "Objects of the masked combinations" in markdown
    line = next(x for x in markdown.splitlines() if x.startswith("| HDR, rules checked by code") and "(" in x and "Lv. 3" in x)
    assert "100.0 [" in line and f"({masked['objects']['masked']['n']})" in line
    capsys.readouterr()
    assert eval_main(["show", str(cells["hdr_grounded"]), "--width", "250"]) == 0
    assert "masked)" in capsys.readouterr().out  # the scene lines count the masked objects
    oracle_line = next(x for x in markdown.splitlines() if x.startswith("| Semantic memory (CoT)") and "Lv. 3" in x)
    assert oracle_line.endswith("|  |")  # the oracle's memory records no undecidable combinations: an empty cell


def test_a_level_2_table_writes_no_masked_section_and_show_marks_nothing(tmp_path, monkeypatch, capsys):
    """No combination is masked below Level 3: no ``masked`` entry, no Markdown section, no column in ``show``."""
    table_path = tmp_path / "red.json"
    table_path.write_text(json.dumps(TABLE.to_dict()))
    engine = ScriptedEngine(Script(factors={"factors": []}, rules=exact_rules, objects=perceiver, label=first_rule_labeller))
    resolve = lambda spec, **kw: LMChoice("embedded", engine.lm(), local=False)  # noqa: E731
    monkeypatch.setattr("memreason.eval.harness.lms.resolve_lm", resolve)
    monkeypatch.setattr("memreason.eval.experience_transfer.table_cells.resolve_lm", resolve)
    out = tmp_path / "tables"
    argv = ["table3", "--rows", "hdr_grounded", "--per-object", "--retrieve-k", "3", "--levels", "2", "--rules", str(table_path)]
    assert eval_main([*argv, "--limit", "4", "--out", str(out), "--no-progress"]) == 0
    (cell,) = (out / "cells").iterdir()
    results = json.loads((cell / "results.json").read_text())
    assert "masked" not in results and all("masked" not in r for r in results["hypothesis_f1"]["per_run"])
    table = json.loads((out / "table3.json").read_text())
    assert not [c for r in table["rows"] for c in r["cells"] if "masked" in c]
    markdown = (out / "table3.md").read_text()
    assert "masked" not in markdown.lower() and "undecidable" not in markdown.lower()
    capsys.readouterr()
    assert eval_main(["show", str(cell), "--width", "250"]) == 0
    assert eval_main(["show", str(cell), "--id", "L2-s000", "--width", "250"]) == 0
    shown = capsys.readouterr().out.replace(str(tmp_path), "")  # the folder is named after this test
    assert "masked" not in shown and "per-object labels" in shown
