"""Bad input, command by command: one line on stderr starting with ``error: ``, exit code 2, nothing written.

Every case runs a command line in-process (``python -m eval`` or ``python -m optimize``) in the test's
own working directory, after writing the files it names (``FILES``), and checks that the command:

- returns 2, with exactly one non-empty line on stderr, starting with ``error: `` (no traceback);
- leaves the working directory as it found it (no run directory, no cache, no file of its own, no file changed in size).

Each must fail before any LM call or model load: the embedded model, a local GGUF and every LM call
raise :class:`ReachedTheModel` here, and a case that needs a remote LM names one that cannot answer
(``openai/x`` at ``http://127.0.0.1:9``). :data:`CASES` is the corpus: one entry per bad input.
"""

from __future__ import annotations

import json
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dspy
import pytest

from memreason.eval.cli import main as eval_main
from memreason.optimize.cli import main as optimize_main

SAVED = Path(__file__).resolve().parents[2] / "data" / "saved_runs"
LM = "--lm openai/x --api-base http://127.0.0.1:9"  # a remote model that never answers: nothing local starts

GRID = [[1, 2], [3, 4]]
TASK = {"train": [{"input": GRID, "output": GRID}], "test": [{"input": GRID, "output": GRID}]}
SPLIT = {f"split/{name}.json": TASK for name in ("a_flip", "b_recolor", "c_flip", "d_recolor")}  # the saved ARC run's tasks
PS_MEMORY = {"format": "ps", "concepts": []}
TRUNCATED = '{"format": "ps", "con'  # a memory file cut short
RULES = json.loads((Path(__file__).resolve().parents[3] / "datasets" / "experience_transfer" / "example_table.json").read_text())
DIR = object()  # a FILES value: an empty directory


def et_run(**config: Any) -> dict[str, Any]:
    """A FILES value: a copy of a saved Experience-Transfer run (``episodic_cot``, level 2) with these config.json values."""
    return {"copy": SAVED / "episodic_cot-L2", "config": config}


def arc_run(**config: Any) -> dict[str, Any]:
    """A FILES value: a copy of a saved ARC run (``arcmemo_ps`` on the four tasks of ``split/``) with these config values."""
    return {"copy": SAVED / "arcmemo_ps", "config": {"split": "split", **config}}


def bad_task(**pair: Any) -> dict[str, Any]:
    """FILES: a split ``bad/`` of one task whose one train pair is ``pair``."""
    return {"bad/t.json": {"train": [pair], "test": TASK["test"]}}


@dataclass(frozen=True)
class Case:
    """One bad input: the command line (after ``python -m eval``, or ``python -m optimize`` with ``cli="optimize"``)
    and the FILES written first (name -> text, bytes, a JSON object or list, DIR, et_run(...) or arc_run(...))."""

    id: str
    argv: str
    files: dict[str, Any] = field(default_factory=dict)
    cli: str = "eval"


CASES: list[Case] = [
    # -- Experience-Transfer programs: numbers ---------------------------------------------------------
    Case("hdr-runs-at-temperature-0", "hdr --level 1 --runs 3"),
    # -- inductive tasks (--task) --------------------------------------------------------------------------
    Case("task-unknown", "hdr --task nope --limit 2"),
    Case("task-empty", "hdr --task '' --limit 2"),
    Case("task-acre-limit-0", "hdr --task acre --limit 0"),
    Case("task-list-functions-limit-negative", "hdr_checked --task list_functions --limit -1"),
    Case("task-acre-program-without-it", "rule_learner --task acre --limit 2"),
    Case("task-list-functions-no-oracle", "episodic_semantic_oracle_cot --task list_functions --limit 2"),
    Case("task-checked-needs-a-task", "hdr_checked --limit 2"),
    Case("task-acre-with-level", "hdr --task acre --level 1"),
    Case("task-acre-with-per-object", "episodic_cot --task acre --per-object"),
    Case("task-acre-image", "hdr --task acre --modality image"),
    Case("task-config-unknown-knob", "hdr_checked --task acre --config k.json", files={"k.json": {"knobs": {"bogus": 1}}}),
    Case(
        "task-config-samples-0", "hdr_checked --task list_functions --config k.json", files={"k.json": {"knobs": {"samples": 0}}}
    ),
    Case("optimize-inductive-only-program", "hdr_checked --trials 1", cli="optimize"),
    Case("compile-inductive-only-program", "compile hdr_checked --level 1 --optimizer bootstrap", cli="optimize"),
    Case("baseline-runs-at-temperature-0", "baseline --split val100 --runs 2 --temperature 0"),
    Case("hdr-temperature-nan", "hdr --level 1 --temperature nan"),
    Case("hdr-temperature-inf", "hdr --level 1 --temperature inf"),
    Case("hdr-temperature-negative", "hdr --level 1 --temperature -0.5"),
    Case("hdr-temperature-above-2", "hdr --level 1 --temperature 3"),
    Case("episodic-lm-timeout-nan", "episodic --level 1 --lm-timeout nan"),
    Case("episodic-lm-timeout-inf", "episodic --level 1 --lm-timeout inf"),
    Case("episodic-lm-timeout-zero", "episodic --level 1 --lm-timeout 0"),
    Case("episodic-lm-timeout-negative", "episodic --level 1 --lm-timeout -1"),
    Case("episodic_cot-backoff-nan", "episodic_cot --level 1 --backoff nan"),
    Case("episodic_cot-backoff-negative", "episodic_cot --level 1 --backoff -1"),
    Case("hdr-seed-negative", "hdr --level 1 --seed -1"),
    # -- spending limits: positive and finite; dollars only for models LiteLLM has a price for ----------
    Case("hdr-budget-tokens-zero", "hdr --level 1 --budget-tokens 0"),
    Case("hdr-budget-tokens-negative", "hdr --level 1 --budget-tokens -10"),
    Case("hdr-budget-tokens-nan", "hdr --level 1 --budget-tokens nan"),
    Case("hdr-budget-tokens-fraction", "hdr --level 1 --budget-tokens 1.5"),
    Case("hdr-budget-usd-zero", "hdr --level 1 --budget-usd 0"),
    Case("hdr-budget-usd-negative", "hdr --level 1 --budget-usd -1"),
    Case("hdr-budget-usd-nan", "hdr --level 1 --budget-usd nan"),
    Case("hdr-budget-usd-inf", "hdr --level 1 --budget-usd inf"),
    Case("hdr-budget-usd-word", "hdr --level 1 --budget-usd five"),
    Case("hdr-budget-usd-embedded-model", "hdr --level 1 --budget-usd 1"),
    Case("episodic-budget-usd-unpriced-model", f"episodic --level 1 {LM} --budget-usd 1"),
    Case(
        "episodic-budget-usd-unpriced-memory-lm",
        "episodic --level 1 --lm openai/gpt-4o-mini --memory-lm openai/x --api-base http://127.0.0.1:9 --budget-usd 1",
    ),
    Case("hdr-limit-zero", "hdr --level 1 --limit 0"),
    Case("hdr-limit-word", "hdr --level 1 --limit ten"),
    Case("hdr-threads-zero", "hdr --level 1 --threads 0"),
    Case("hdr-runs-zero", "hdr --level 1 --runs 0"),
    Case("hdr-lm-retries-negative", "hdr --level 1 --lm-retries -1"),
    Case("hdr-max-errors-negative", "hdr --level 1 --max-errors -1"),
    Case("hdr-max-tokens-zero", "hdr --level 1 --max-tokens 0"),
    Case("hdr-level-missing", "hdr"),
    Case("hdr-level-4", "hdr --level 4"),
    Case("hdr-modality-unknown", "hdr --level 1 --modality video"),
    Case("rule_learner-modality-image", "rule_learner --level 1 --modality image"),
    Case("hdr-retrieve-k-without-per-object", "hdr --level 1 --retrieve-k 2"),
    Case("hdr-unknown-option", "hdr --level 1 --bogus"),
    # -- rate limits: whole numbers of at least 1, on every command that builds LMs ------------------------
    Case("hdr-rpm-zero", "hdr --level 1 --rpm 0"),
    Case("hdr-rpm-negative", "hdr --level 1 --rpm -5"),
    Case("hdr-rpm-fraction", "hdr --level 1 --rpm 1.5"),
    Case("hdr-tpm-word", "hdr --level 1 --tpm many"),
    Case("hdr-memory-rpm-zero", "hdr --level 1 --memory-rpm 0"),
    Case("hdr-memory-tpm-negative", "hdr --level 1 --memory-tpm -1"),
    Case("task-acre-rpm-zero", "hdr --task acre --rpm 0"),
    Case("arcmemo_ps-tpm-zero", "arcmemo_ps --split split --tpm 0", SPLIT),
    Case("build_memory-rpm-fraction", "build_memory --format ps --split split --out m.json --rpm 0.5", SPLIT),
    Case("stream-rpm-zero", "stream_baseline --task rg:acre --rpm 0"),
    Case("table3-memory-tpm-zero", "table3 --memory-tpm 0"),
    Case("demo-rpm-negative", "demo --rpm -1"),
    Case("resume-saved-rpm-zero", "--resume run", {"run": et_run(rpm=0)}),
    Case("optimize-hdr-rpm-zero", "hdr --level 1 --rpm 0", cli="optimize"),
    Case("compile-hdr-memory-tpm-fraction", "compile hdr --level 1 --optimizer bootstrap --memory-tpm 2.5", cli="optimize"),
    # -- Experience-Transfer programs: paths and files -------------------------------------------------
    Case("hdr-out-empty", "hdr --level 1 --out ''"),
    Case("hdr-out-a-file", "hdr --level 1 --out afile", {"afile": "x"}),
    Case("hdr-out-under-a-file", "hdr --level 1 --out afile/run", {"afile": "x"}),
    Case("hdr-out-in-proc", "hdr --level 1 --out /proc/memreason-run"),
    Case("hdr-cache-empty", "hdr --level 1 --cache ''"),
    Case("hdr-cache-a-file", "hdr --level 1 --cache afile", {"afile": "x"}),
    Case("hdr-rules-dev-zero", "hdr --level 1 --rules /dev/zero"),
    Case("hdr-rules-missing", "hdr --level 1 --rules missing.json"),
    Case("hdr-rules-generated-wrong-structure", "hdr --level 1 --rules 'hard-test-7-0 (pair_flip)'"),
    Case("hdr-rules-not-json", "hdr --level 1 --rules rules.json", {"rules.json": "{not json"}),
    Case("hdr-rules-a-list", "hdr --level 1 --rules rules.json", {"rules.json": [1, 2]}),
    Case("hdr-rules-a-directory", "hdr --level 1 --rules adir", {"adir": DIR}),
    Case("hdr-rules-empty", "hdr --level 1 --rules ''"),
    Case("hdr-config-a-memory-file", "hdr --level 1 --config mem.json", {"mem.json": PS_MEMORY}),
    Case("hdr-config-a-rules-table", "hdr --level 1 --config rules.json", {"rules.json": RULES}),
    Case("hdr-config-missing", "hdr --level 1 --config missing.json"),
    Case("hdr-config-of-another-program", "hdr --level 1 --config b.json", {"b.json": {"program": "episodic", "knobs": {}}}),
    Case("hdr-config-unknown-knob", "hdr --level 1 --config best.json", {"best.json": {"knobs": {"nonsense": 1}}}),
    Case("hdr-program-state-missing", "hdr --level 1 --program-state missing.json"),
    Case("hdr-program-state-dev-zero", "hdr --level 1 --program-state /dev/zero"),
    Case("hdr-program-state-not-a-state", "hdr --level 1 --program-state s.json", {"s.json": [1]}),
    Case("hdr-config-a-directory", "hdr --level 1 --config adir", {"adir": DIR}),
    Case("hdr-config-empty", "hdr --level 1 --config ''"),
    # -- Experience-Transfer programs: language models and tracking ------------------------------------
    Case("hdr-api-base-without-lm", "hdr --level 1 --api-base http://127.0.0.1:9"),
    Case("hdr-api-base-empty", "hdr --level 1 --lm openai/x --api-base ''"),
    Case("hdr-api-base-no-scheme", "hdr --level 1 --lm openai/x --api-base 127.0.0.1:9"),
    Case("hdr-api-base-no-host", "hdr --level 1 --lm openai/x --api-base http://"),
    Case("hdr-api-base-ftp", "hdr --level 1 --lm openai/x --api-base ftp://host/v1"),
    Case("hdr-lm-unknown-provider", "hdr --level 1 --lm nonsense"),
    Case("hdr-lm-local-missing", "hdr --level 1 --lm local:missing.gguf"),
    Case("hdr-lm-local-not-gguf", "hdr --level 1 --lm local:afile", {"afile": "x"}),
    Case("hdr-lm-empty", "hdr --level 1 --lm ''"),
    Case("hdr-memory-lm-empty", f"hdr --level 1 {LM} --memory-lm ''"),
    Case("hdr-api-base-with-a-local-lm", "hdr --level 1 --lm local:afile --api-base http://127.0.0.1:9", {"afile": "x"}),
    Case("hdr-mlflow-ftp", "hdr --level 1 --mlflow ftp://x"),
    Case("hdr-mlflow-text-file", "hdr --level 1 --mlflow notes.txt"),
    Case("hdr-mlflow-sqlite-without-path", "hdr --level 1 --mlflow sqlite://"),
    Case("hdr-mlflow-db-under-a-file", "hdr --level 1 --mlflow afile/mlflow.db", {"afile": "x"}),
    # -- --resume -------------------------------------------------------------------------------------
    Case("resume-missing-dir", "--resume missing"),
    Case("resume-no-dir-given", "--resume"),
    Case("resume-empty", "--resume ''"),
    Case("resume-dir-without-config", "--resume adir", {"adir": DIR}),
    Case("resume-saved-threads-0", "--resume run", {"run": et_run(threads=0)}),
    Case("resume-saved-limit-word", "--resume run", {"run": et_run(limit="ten")}),
    Case("resume-saved-level-7", "--resume run", {"run": et_run(level=7)}),
    Case("resume-saved-temperature-nan", "--resume run", {"run": et_run(temperature="nan")}),
    Case("resume-saved-cache-a-file", "--resume run", {"run": et_run(cache="afile"), "afile": "x"}),
    Case("resume-with-another-out", "--resume run --out elsewhere", {"run": et_run()}),
    Case("resume-with-another-level", "--resume run --level 1", {"run": et_run()}),
    Case("resume-api-base-without-lm", "--resume run --api-base http://127.0.0.1:9", {"run": et_run()}),
    Case("hdr-resume-an-arc-run", "hdr --resume run", {"run": arc_run()}),
    Case("resume-arc-saved-attempts-0", "--resume run", {"run": arc_run(attempts=0), **SPLIT}),
    Case("resume-arc-saved-write-gate-unknown", "--resume run", {"run": arc_run(write_gate="never"), **SPLIT}),
    Case(
        "resume-arc-saved-memory-truncated", "--resume run", {"run": arc_run(memory="mem.json"), "mem.json": TRUNCATED, **SPLIT}
    ),
    Case("resume-damaged-examples", "--resume run", {"run": et_run(), "run/examples.jsonl": "garbage\n{}\n"}),
    Case("resume-truncated-memory-record", "--resume run", {"run": et_run(), "run/memory-run0.json": '{"hypotheses": ['}),
    Case(
        "resume-arc-truncated-memory-snapshot",
        "--resume run",
        {"run": arc_run(), "run/memory/run0/step-0002.json": TRUNCATED, **SPLIT},
    ),
    Case("resume-saved-config-a-list", "--resume run", {"run": et_run(), "run/config.json": [1]}),
    Case("resume-results-a-directory", "--resume run", {"run": et_run(), "run/results.json": DIR}),
    Case("resume-examples-a-directory", "--resume run", {"run": et_run(), "run/examples.jsonl": DIR}),
    Case("resume-traces-a-file", "--resume run", {"run": et_run(), "run/traces": "x"}),
    Case("resume-dspy-cache-a-file", "--resume run", {"run": et_run(), "run/dspy_cache": "x"}),
    Case("resume-lock-a-directory", "--resume run", {"run": et_run(), "run/.lock": DIR}),
    Case("resume-processes-a-directory", "--resume run", {"run": et_run(), "run/processes.jsonl": DIR}),
    Case("resume-memory-record-a-directory", "--resume run", {"run": et_run(), "run/memory-run0.json": DIR}),
    Case("resume-arc-results-a-directory", "--resume run", {"run": arc_run(), "run/results.json": DIR, **SPLIT}),
    Case("resume-arc-memory-a-file", "--resume run", {"run": arc_run(), "run/memory": "x", **SPLIT}),
    Case("resume-saved-budget-tokens-zero", "--resume run", {"run": et_run(budget_tokens=0)}),
    Case("resume-saved-budget-usd-nan", "--resume run", {"run": et_run(budget_usd="nan")}),
    Case("resume-budget-usd-of-an-embedded-run", "--resume run --budget-usd 1", {"run": et_run()}),
    # -- ARC programs ---------------------------------------------------------------------------------
    Case("baseline-timeout-nan", "baseline --split split --timeout nan", SPLIT),
    Case("baseline-timeout-zero", "baseline --split split --timeout 0", SPLIT),
    Case("baseline-memory-temperature-nan", "baseline --split split --memory-temperature nan", SPLIT),
    Case("baseline-split-unknown", "baseline --split nosuch"),
    Case("baseline-split-empty", "baseline --split ''"),
    Case("baseline-split-empty-dir", "baseline --split adir", {"adir": DIR}),
    Case("baseline-tasks-empty", "baseline --tasks ''"),
    Case("baseline-tasks-unknown-id", "baseline --split split --tasks nosuch", SPLIT),
    Case("baseline-attempts-zero", "baseline --split split --attempts 0", SPLIT),
    Case("baseline-retries-negative", "baseline --split split --retries -1", SPLIT),
    Case("baseline-size-on-a-named-split", "baseline --split val100 --size 5"),
    Case("baseline-seed-on-a-named-split", "baseline --split val100 --seed 1"),
    Case("baseline-out-a-file", "baseline --split split --out afile", {"afile": "x", **SPLIT}),
    Case("baseline-memory-given", "baseline --split split --memory mem.json", {"mem.json": PS_MEMORY, **SPLIT}),
    Case("baseline-top-k-given", "baseline --split split --top-k 3", SPLIT),
    Case("baseline-api-base-without-lm", "baseline --split split --api-base http://127.0.0.1:9", SPLIT),
    Case("arc-task-train-output-null", "baseline --split bad", bad_task(input=GRID, output=None)),
    Case("arc-task-train-output-missing", "baseline --split bad", bad_task(input=GRID)),
    Case("arc-task-train-input-missing", "baseline --split bad", bad_task(output=GRID)),
    Case("arc-task-train-input-null", "baseline --split bad", bad_task(input=None, output=GRID)),
    Case("arc-task-not-rectangular", "baseline --split bad", bad_task(input=[[1, 2], [3]], output=GRID)),
    Case("arc-task-value-10", "baseline --split bad", bad_task(input=[[10]], output=GRID)),
    Case("arc-task-value-negative", "baseline --split bad", bad_task(input=GRID, output=[[-1]])),
    Case("arc-task-value-text", "baseline --split bad", bad_task(input=[["1"]], output=GRID)),
    Case("arc-task-empty-grid", "baseline --split bad", bad_task(input=[], output=GRID)),
    Case("arc-task-not-json", "baseline --split bad", {"bad/t.json": "{"}),
    Case("arc-task-no-test-output", "baseline --split bad", {"bad/t.json": {"train": TASK["train"], "test": [{"input": GRID}]}}),
    Case("arcmemo_ps-seed-negative", "arcmemo_ps --split arc1d --seed -1"),
    Case("arcmemo_ps-families-unknown", "arcmemo_ps --split arc1d --families nosuch_family"),
    Case("arcmemo_ps-families-empty", "arcmemo_ps --split arc1d --families ,"),
    Case("arcmemo_ps-size-zero", "arcmemo_ps --split arc1d --size 0"),
    Case("arcmemo_ps-difficulty-above-1", "arcmemo_ps --split rearc --difficulty 2"),
    Case("arcmemo_ps-difficulty-nan", "arcmemo_ps --split rearc --difficulty nan"),
    Case("arcmemo_ps-exclude-families-unknown", "arcmemo_ps --split arc1d --exclude-families nosuch_family"),
    Case("arcmemo_ps-top-k-zero", "arcmemo_ps --split split --top-k 0", SPLIT),
    Case("arcmemo_ps-memory-truncated", "arcmemo_ps --split split --memory mem.json", {"mem.json": TRUNCATED, **SPLIT}),
    Case("arcmemo_ps-memory-oe", "arcmemo_ps --split split --memory mem.json", {"mem.json": {"format": "oe"}, **SPLIT}),
    Case("arcmemo_ps-memory-no-format", "arcmemo_ps --split split --memory mem.json", {"mem.json": {"concepts": []}, **SPLIT}),
    Case("arcmemo_ps-memory-missing", "arcmemo_ps --split split --memory missing.json", SPLIT),
    Case("arcmemo_ps-memory-no-such-shipped-name", "arcmemo_ps --split split --memory arc1d_nosuch", SPLIT),
    Case("hdr-rules-no-such-shipped-table", "hdr --level 1 --rules example_nosuch"),
    Case("arcmemo_ps-memory-empty", "arcmemo_ps --split split --memory ''", SPLIT),
    Case("arcmemo_ps-memory-dev-zero", "arcmemo_ps --split split --memory /dev/zero", SPLIT),
    Case("arcmemo_ps-config-a-memory-file", "arcmemo_ps --split split --config mem.json", {"mem.json": PS_MEMORY, **SPLIT}),
    Case(
        "arcmemo_ps-config-knob-attempts-0",
        "arcmemo_ps --split split --config b.json",
        {"b.json": {"knobs": {"attempts": 0}}, **SPLIT},
    ),
    Case(
        "arcmemo_ps-config-knob-temperature-word",
        "arcmemo_ps --split split --config b.json",
        {"b.json": {"knobs": {"temperature": "hot"}}, **SPLIT},
    ),
    Case(
        "arcmemo_ps-config-knob-write-gate",
        "arcmemo_ps --split split --config b.json",
        {"b.json": {"knobs": {"write_gate": "x"}}, **SPLIT},
    ),
    Case("arcmemo_ps-write-gate-unknown", "arcmemo_ps --split split --write-gate never", SPLIT),
    Case("arcmemo_oe-reselect-k-without-reselect", "arcmemo_oe --split split --reselect-k 3", SPLIT),
    Case("cheatsheet-reselect", "cheatsheet --split split --reselect", SPLIT),
    Case("arcmemo_ps-resume-with-other-attempts", "arcmemo_ps --resume run --attempts 3", {"run": arc_run(), **SPLIT}),
    Case("arcmemo_ps-budget-usd-embedded-model", "arcmemo_ps --split split --budget-usd 1", SPLIT),
    Case("baseline-budget-tokens-zero", "baseline --split split --budget-tokens 0", SPLIT),
    Case("arcmemo_ps-resume-budget-usd", "arcmemo_ps --resume run --budget-usd 1", {"run": arc_run(), **SPLIT}),
    # -- build_memory ---------------------------------------------------------------------------------
    Case("build_memory-no-format", "build_memory --out m.json"),
    Case("build_memory-format-unknown", "build_memory --format xx --out m.json"),
    Case("build_memory-out-a-directory", "build_memory --format ps --split split --out adir", {"adir": DIR, **SPLIT}),
    Case("build_memory-out-empty", "build_memory --format ps --split split --out ''", SPLIT),
    Case("build_memory-out-under-a-file", "build_memory --format ps --split split --out afile/m.json", {"afile": "x", **SPLIT}),
    Case("build_memory-run-dir-a-file", "build_memory --format ps --split split --out m.json --run-dir f", {"f": "x", **SPLIT}),
    Case("build_memory-apart-oe", "build_memory --format oe --apart --split split --out m.json", SPLIT),
    Case(
        "build_memory-extend-other-format",
        "build_memory --format ps --extend --split split --out m.json",
        {"m.json": {"format": "oe", "concepts": []}, **SPLIT},
    ),
    Case(
        "build_memory-extend-damaged",
        "build_memory --format ps --extend --split split --out m.json",
        {"m.json": "{not json", **SPLIT},
    ),
    Case("build_memory-solutions-missing", "build_memory --format ps --split split --out m.json --solutions missing", SPLIT),
    Case(
        "build_memory-solutions-no-such-shipped-folder",
        "build_memory --format ps --split split --out m.json --solutions x_solutions",
        SPLIT,
    ),
    Case("build_memory-solutions-empty", "build_memory --format ps --split split --out m.json --solutions ''", SPLIT),
    Case("build_memory-out-in-proc", "build_memory --format ps --split split --out /proc/m.json", SPLIT),
    Case("build_memory-split-unknown", "build_memory --format ps --split nosuch --out m.json"),
    Case("build_memory-seed-negative", "build_memory --format ps --split arc1d-seeds --seed -1 --out m.json"),
    Case("build_memory-budget-usd-embedded-model", "build_memory --format ps --split split --out m.json --budget-usd 1", SPLIT),
    Case("build_memory-budget-tokens-negative", "build_memory --format ps --split split --out m.json --budget-tokens -1", SPLIT),
    # -- arc_table, submission, score_submission ------------------------------------------------------
    Case("arc_table-missing-run", "arc_table missing"),
    Case("arc_table-an-et-run", "arc_table run", {"run": et_run()}),
    Case("arc_table-common-without-compare", "arc_table run --common", {"run": arc_run()}),
    Case("arc_table-compare-one-run", "arc_table run --compare", {"run": arc_run()}),
    Case("arc_table-dev-zero", "arc_table /dev/zero"),
    Case("submission-missing-run", "submission missing --out s.json"),
    Case("submission-out-a-directory", "submission run --out adir", {"run": arc_run(), "adir": DIR}),
    Case("submission-out-empty", "submission run --out ''", {"run": arc_run()}),
    Case("submission-run-word", "submission run --out s.json --run x", {"run": arc_run()}),
    Case("submission-of-an-et-run", "submission run --out s.json", {"run": et_run()}),
    Case("submission-out-in-proc", "submission run --out /proc/s.json", {"run": arc_run()}),
    Case("score_submission-missing-file", "score_submission missing.json --split split", SPLIT),
    Case("score_submission-not-json", "score_submission s.json --split split", {"s.json": "{", **SPLIT}),
    Case("score_submission-dev-zero", "score_submission /dev/zero --split split", SPLIT),
    Case(
        "score_submission-wrong-number-of-test-inputs",
        "score_submission s.json --split split",
        {"s.json": {"t": []}, "split/t.json": TASK},
    ),
    Case("score_submission-another-task-set", "score_submission s.json --split split", {"s.json": {"zzz": []}, **SPLIT}),
    Case(
        "score_submission-like-and-split", "score_submission s.json --like run --split val100", {"s.json": {}, "run": arc_run()}
    ),
    # -- tables and demo ------------------------------------------------------------------------------
    Case("table3-rows-empty", "table3 --rows ''"),
    Case("table3-rows-unknown", "table3 --rows nosuch"),
    Case("table3-rows-arc-program", "table3 --rows baseline"),
    Case("table3-out-a-file", "table3 --out afile", {"afile": "x"}),
    Case("table3-temperature-nan", "table3 --temperature nan"),
    Case("table3-rules-dev-zero", "table3 --rules /dev/zero"),
    Case("table3-program-state-without-program", "table3 --program-state state.json", {"state.json": {}}),
    Case("table2-levels-4", "table2 --levels 4"),
    Case("table2-levels-empty", "table2 --levels ''"),
    Case("table2-api-base-without-lm", "table2 --api-base http://127.0.0.1:9"),
    Case("table2-seed-negative", "table2 --seed -1"),
    Case("table4-no-memory-lms", "table4"),
    Case("table4-memory-lms-empty", "table4 --memory-lms ''"),
    Case("table5-f1-unknown", "table5 --f1 nosuch"),
    Case("table5-out-empty", "table5 --out ''"),
    Case("table3-compare-unknown-row", "table3 --rows hdr,episodic_cot --compare hdr nosuch"),
    Case("table3-compare-one-row", "table3 --compare hdr"),
    Case("table5-compare", "table5 --compare hdr two_stage"),
    Case("demo-out-a-file", "demo --out afile", {"afile": "x"}),
    Case("demo-rows-empty", "demo --rows ''"),
    Case("demo-retrieve-k-negative", "demo --retrieve-k -1"),
    Case("demo-level-9", "demo --level 9"),
    Case("demo-api-base-without-lm", "demo --api-base http://127.0.0.1:9"),
    Case("demo-mlflow-ftp", "demo --mlflow ftp://x"),
    Case("table3-budget-usd-embedded-model", "table3 --budget-usd 1"),
    Case("table2-budget-tokens-zero", "table2 --budget-tokens 0"),
    Case(
        "table4-budget-usd-unpriced-memory-lm",
        "table4 --memory-lms openai/x --lm openai/gpt-4o-mini --api-base http://127.0.0.1:9 --budget-usd 1",
    ),
    Case(
        "table5-budget-usd-unpriced-judge",
        "table5 --memory-lm openai/gpt-4o-mini --api-base http://127.0.0.1:9 --f1 interpret --judge-lm openai/x --budget-usd 1",
    ),
    Case("demo-budget-usd-embedded-model", "demo --budget-usd 1"),
    Case("demo-budget-tokens-inf", "demo --budget-tokens inf"),
    # -- show, report ---------------------------------------------------------------------------------
    Case("show-missing-run", "show missing"),
    Case("show-a-file", "show afile", {"afile": "x"}),
    Case("show-damaged-examples", "show run", {"run": et_run(), "run/examples.jsonl": "garbage\n{}\n"}),
    Case("show-config-a-list", "show run", {"run": et_run(), "run/config.json": [1]}),
    Case("show-config-a-directory", "show adir", {"adir/config.json": DIR}),
    Case("show-unknown-id", "show run --id nosuch", {"run": et_run()}),
    Case("show-run-negative", "show run --run -1", {"run": et_run()}),
    Case("show-width-10", "show run --width 10", {"run": et_run()}),
    Case("report-missing-run", "report missing"),
    Case("report-out-a-file", "report run --out afile", {"run": et_run(), "afile": "x"}),
    Case("report-run-without-results", "report adir", {"adir/config.json": {"program": "hdr"}}),
    Case("report-compare-not-its-run", "report run --compare run other", {"run": et_run(), "other": et_run()}),
    Case("report-compare-a-run-with-itself", "report run other --compare run run", {"run": et_run(), "other": et_run()}),
    Case("report-compare-scenes-with-tasks", "report run arc --compare run arc", {"run": et_run(), "arc": arc_run()}),
    # -- no command, unknown command ------------------------------------------------------------------
    Case("eval-no-command", ""),
    Case("eval-unknown-command", "nosuch"),
    # -- python -m optimize: studies ------------------------------------------------------------------
    Case("optimize-unknown-program", "nosuch", cli="optimize"),
    Case("optimize-arcmemo_ps-memory-unknown-name", f"arcmemo_ps --memory nosuch --trials 1 {LM}", cli="optimize"),
    Case(
        "compile-arcmemo_ps-memory-unknown-name", f"compile arcmemo_ps --memory nosuch --optimizer bootstrap {LM}", cli="optimize"
    ),
    Case("optimize-no-command", "", cli="optimize"),
    Case("optimize-hdr-level-missing", "hdr", cli="optimize"),
    Case("optimize-hdr-trials-zero", "hdr --level 1 --trials 0", cli="optimize"),
    Case("optimize-rule_learner-modality-image", "rule_learner --level 1 --modality image", cli="optimize"),
    Case("optimize-hdr-seed-negative", "hdr --level 1 --seed -1", cli="optimize"),
    Case("optimize-hdr-temperature-nan", "hdr --level 1 --temperature nan", cli="optimize"),
    Case("optimize-hdr-backoff-nan", "hdr --level 1 --backoff nan", cli="optimize"),
    Case("optimize-hdr-out-a-file", "hdr --level 1 --out afile", {"afile": "x"}, cli="optimize"),
    Case("optimize-hdr-out-empty", "hdr --level 1 --out ''", cli="optimize"),
    Case("optimize-hdr-cache-a-file", "hdr --level 1 --cache afile", {"afile": "x"}, cli="optimize"),
    Case("optimize-hdr-param-bad", "hdr --level 1 --param K=bad", cli="optimize"),
    Case("optimize-hdr-storage-ftp", "hdr --level 1 --storage ftp://x", cli="optimize"),
    Case("optimize-hdr-storage-empty", "hdr --level 1 --storage ''", cli="optimize"),
    Case("optimize-hdr-lm-unknown", "hdr --level 1 --lm nonsense", cli="optimize"),
    Case("optimize-hdr-space-dev-zero", "hdr --level 1 --space /dev/zero", cli="optimize"),
    Case("optimize-hdr-space-missing", "hdr --level 1 --space missing.json", cli="optimize"),
    Case("optimize-hdr-api-base-without-lm", "hdr --level 1 --api-base http://127.0.0.1:9", cli="optimize"),
    Case("optimize-hdr-mlflow-ftp", "hdr --level 1 --mlflow ftp://x", cli="optimize"),
    Case("optimize-hdr-rules-dev-zero", "hdr --level 1 --rules /dev/zero", cli="optimize"),
    Case("optimize-hdr-sampler-seed-negative", "hdr --level 1 --sampler-seed -1", cli="optimize"),
    Case("optimize-arcmemo_ps-split-unknown", "arcmemo_ps --split nosuch", cli="optimize"),
    Case("optimize-arcmemo_ps-memory-truncated", "arcmemo_ps --memory mem.json", {"mem.json": TRUNCATED}, cli="optimize"),
    Case("optimize-hdr-budget-usd-embedded-model", "hdr --level 1 --budget-usd 1", cli="optimize"),
    Case("optimize-hdr-budget-tokens-zero", "hdr --level 1 --budget-tokens 0", cli="optimize"),
    Case("optimize-arcmemo_ps-budget-usd-unpriced-model", f"arcmemo_ps {LM} --budget-usd 1", cli="optimize"),
    # -- python -m optimize compile -------------------------------------------------------------------
    Case("compile-unknown-target", "compile nosuch", cli="optimize"),
    Case("compile-hdr-no-optimizer", "compile hdr --level 1", cli="optimize"),
    Case("compile-hdr-out-a-file", "compile hdr --level 1 --optimizer bootstrap --out afile", {"afile": "x"}, cli="optimize"),
    Case("compile-hdr-knob-without-value", "compile hdr --level 1 --optimizer bootstrap --knob K", cli="optimize"),
    Case(
        "compile-hdr-config-a-memory-file",
        "compile hdr --level 1 --optimizer bootstrap --config m.json",
        {"m.json": PS_MEMORY},
        cli="optimize",
    ),
    Case("compile-hdr-rules-dev-zero", "compile hdr --level 1 --optimizer bootstrap --rules /dev/zero", cli="optimize"),
    Case("compile-hdr-seed-negative", "compile hdr --level 1 --optimizer bootstrap --seed -1", cli="optimize"),
    Case("compile-hdr-optimizer-unknown", "compile hdr --level 1 --optimizer nosuch", cli="optimize"),
    Case(
        "compile-arcmemo_ps-memory-truncated",
        "compile arcmemo_ps --optimizer bootstrap --memory m.json",
        {"m.json": TRUNCATED},
        cli="optimize",
    ),
    Case("compile-arcmemo_ps-split-unknown", "compile arcmemo_ps --optimizer bootstrap --split nosuch", cli="optimize"),
    Case("compile-consolidator-threshold-nan", "compile consolidator --optimizer bootstrap --threshold nan", cli="optimize"),
    Case("compile-consolidator-threshold-2", "compile consolidator --optimizer bootstrap --threshold 2", cli="optimize"),
    Case("compile-consolidator-lm-timeout-inf", "compile consolidator --optimizer bootstrap --lm-timeout inf", cli="optimize"),
    Case("compile-consolidator-out-empty", "compile consolidator --optimizer bootstrap --out ''", cli="optimize"),
    Case("compile-hdr-budget-usd-embedded-model", "compile hdr --level 1 --optimizer bootstrap --budget-usd 1", cli="optimize"),
    Case("compile-hdr-budget-usd-negative", "compile hdr --level 1 --optimizer bootstrap --budget-usd -0.5", cli="optimize"),
    Case(
        "compile-consolidator-budget-usd-unpriced-model",
        f"compile consolidator --optimizer bootstrap {LM} --budget-usd 1",
        cli="optimize",
    ),
    Case(
        "compile-consolidator-budget-tokens-nan", "compile consolidator --optimizer bootstrap --budget-tokens nan", cli="optimize"
    ),
]


class ReachedTheModel(BaseException):
    """A bad input that got as far as loading a model or calling an LM (not an Exception: nothing swallows it)."""


@pytest.fixture(autouse=True)
def _no_model(monkeypatch):
    def refuse(*args, **kwargs):
        raise ReachedTheModel("a bad input reached a model")

    monkeypatch.setattr("memreason.lm.resolve.embedded_model_path", refuse)
    monkeypatch.setattr("memreason.lm.resolve._local_choice", refuse)
    monkeypatch.setattr(dspy.LM, "__call__", refuse)
    monkeypatch.setattr(dspy.LM, "acall", refuse)
    monkeypatch.setattr(dspy.LM, "forward", refuse)
    monkeypatch.setattr(dspy.LM, "aforward", refuse)


def _write(root: Path, files: dict[str, Any]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir() and content is not DIR:
            shutil.rmtree(path)  # a folder of a copied run, replaced by a file
        elif path.is_file() and content is DIR:
            path.unlink()  # a file of a copied run, replaced by a folder
        if content is DIR:
            path.mkdir(exist_ok=True)
        elif isinstance(content, dict) and "copy" in content:
            shutil.copytree(content["copy"], path)
            config = json.loads((path / "config.json").read_text())
            (path / "config.json").write_text(json.dumps({**config, "out": str(path), **content["config"]}))
        elif isinstance(content, (dict, list)):
            path.write_text(json.dumps(content))
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


def _tree(root: Path) -> dict[str, int]:
    """Every path under ``root`` with its size (-1 for a directory): a file made, cut or grown shows."""
    return {str(p.relative_to(root)): -1 if p.is_dir() else p.stat().st_size for p in root.rglob("*")}


def test_the_corpus_ids_are_unique():
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("bad", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_one_line_and_exit_2(bad: Case, tmp_path, capsys):
    _write(tmp_path, bad.files)
    before = _tree(tmp_path)
    main = eval_main if bad.cli == "eval" else optimize_main
    code = main(shlex.split(bad.argv))
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert code == 2, f"exit {code}; stderr: {err[-2000:]}"
    assert len(lines) == 1 and lines[0].startswith("error: ") and len(lines[0]) > len("error: "), err
    assert "Traceback" not in err + out
    after = _tree(tmp_path)
    assert after == before, f"wrote {sorted(k for k in after.keys() | before.keys() if after.get(k) != before.get(k))}"


# -- not bad input, but near it: show reads a damaged run as it is, says what is damaged, and writes nothing -----


def test_show_says_a_trace_is_damaged_instead_of_showing_no_calls(tmp_path, capsys):
    _write(tmp_path, {"run": et_run(), "run/traces/run0/L2-s000.json.gz": b"not gzip", "run/traces/memory-run0.json.gz": b""})
    assert eval_main(["show", "run", "--id", "L2-s000", "--width", "200"]) == 0
    out = capsys.readouterr().out
    assert "run/traces/run0/L2-s000.json.gz is damaged" in out and "LM calls (" not in out
    assert eval_main(["show", "run", "--width", "200"]) == 0
    assert "run/traces/memory-run0.json.gz is damaged" in capsys.readouterr().out


def test_a_studys_best_json_as_program_state_says_what_it_is_and_where_it_goes(tmp_path, capsys):
    _write(tmp_path, {"best.json": {"program": "hdr", "level": 1, "knobs": {"K": 2}, "value": 0.5, "trial": 3}})
    before = _tree(tmp_path)
    assert eval_main(["hdr", "--level", "1", "--program-state", "best.json"]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("error: --program-state best.json is not a saved program state") and "goes to --config" in line
    assert _tree(tmp_path) == before


def test_show_reads_a_run_it_cannot_write(tmp_path, monkeypatch, capsys):
    """A run directory someone else owns (or a read-only mount): shown in full, with no picture drawn into it."""
    import PIL.Image

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")  # what writing into a directory the user cannot write gives

    _write(tmp_path, {"run": et_run()})
    before = _tree(tmp_path)
    monkeypatch.setattr(PIL.Image.Image, "save", refuse)
    monkeypatch.setattr(Path, "mkdir", refuse)
    record = json.loads((tmp_path / "run" / "examples.jsonl").read_text().splitlines()[0])
    assert eval_main(["show", "run", "--id", str(record["id"]), "--width", "200"]) == 0
    out, err = capsys.readouterr()
    assert "image: not written (run cannot be written)" in out and "Traceback" not in out + err
    assert _tree(tmp_path) == before


def test_show_leaves_a_torn_last_line_for_the_run_to_repair(tmp_path, capsys):
    _write(tmp_path, {"run": et_run()})
    examples = tmp_path / "run" / "examples.jsonl"
    examples.write_bytes(examples.read_bytes() + b'{"run": 0, "id": "L2-s0')  # a crash mid-line
    before = examples.read_bytes()
    assert eval_main(["show", "run", "--width", "200"]) == 0
    assert examples.read_bytes() == before


# -- a path that is no regular file: refused at once, not read for ever --------------------------------


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    "argv",
    [
        "hdr --level 1 --rules pipe",
        "hdr --level 1 --config pipe",
        "hdr --level 1 --program-state pipe",
        "arcmemo_ps --split val100 --memory pipe",
        "score_submission pipe --split val100",
    ],
)
def test_a_fifo_is_refused_at_once(argv, tmp_path, monkeypatch, capsys):
    import os

    os.mkfifo(tmp_path / "pipe")  # no writer: reading it would wait for ever
    assert eval_main(shlex.split(argv)) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "pipe" in lines[0], lines
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]
