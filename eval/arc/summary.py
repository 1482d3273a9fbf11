"""The results of an ARC run, from its task records and memory writes alone (a resumed run reports the same)."""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

from memreason.datasets.arc import ArcTask
from memreason.lm import LMChoice
from memreason.programs.arcmemo.arc_solver import Attempt

from ..harness.usage import UsageTally
from ..metrics import oracle_at_k, strict_at_k
from ..stats import ci_method, intervals
from .config import ArcConfig
from .memory_measures import memory_measures
from .scoring import KS, aggregate_runs, sample_pool, sampling, scores_of_run, verify_matrix


def summarise(
    config: ArcConfig,
    tasks: Sequence[ArcTask],
    per_run: list[list[dict[str, Any]]],
    writes: list[list[dict[str, Any]]],
    task: LMChoice,
    memory: LMChoice,
) -> dict[str, Any]:
    """The results of a run from its task records and memory writes (per run) alone.

    ``sampling`` follows the paper's sampling protocol (Appendix B) over every attempt of every run
    (run r's attempt a is sample ``r * attempts + a``): each sample's score and oracle@k with its std
    over k-subsets; ``--runs 3 --attempts 1`` gives Table 4's columns run0..run2, k = 1, 2 (std), 3.
    ``oracle_at_k_pooled`` (the sampling means), ``strict_at_k_pooled`` and ``sampling`` are given for
    the run as it ended and, in ``by_retries[r]``, had every attempt stopped after r retries.

    Every score has a 95% bootstrap CI over the tasks (each task's score averaged over the runs) in a key
    beside it named ``<score>_ci`` (``official_score_ci``, ``oracle_at_k_ci[k]``, ``score_by_retries_ci[r]``,
    ``by_retries[r]["official_score_ci"]``, ...): ``[low, high]``, or None where the score is; ``ci_method``
    says how (:mod:`memreason.eval.stats`)."""
    run_scores = [scores_of_run(records, config.retries) for records in per_run]
    cis = _intervals(per_run, config.retries)
    by_retries = {}
    for r in range(config.retries + 1):
        by_retries[str(r)] = aggregate_runs(
            [{**s["by_retries"][str(r)], "score_by_retries": {}, "passed_train": 0.0} for s in run_scores]
        )
        for key in ("score_by_retries", "score_by_retries_std", "passed_train", "passed_train_std"):
            by_retries[str(r)].pop(key)
        by_retries[str(r)].update(cis[str(r)])
        by_retries[str(r)].update(_pooled(config, tasks, per_run, r))
    errors, program_failures, failures = Counter(), Counter(), Counter()
    tally = UsageTally()
    hallucinated = selected = 0
    fared = ProgramTally()
    for records in per_run:
        for r in records:
            if r.get("failure"):
                failures[r["failure"]["kind"]] += 1
            if r["error"]:
                errors[r["error"].split(":")[0]] += 1
            for attempt in r["attempts"]:
                for step in attempt["steps"]:
                    if step["error"]:
                        errors["LM: " + step["error"].split(":")[0]] += 1
                    elif step.get("program"):
                        fared.add(step["program"], step["train"])
                    for check in step["train"] + step["test"]:
                        if check["failure"]:
                            program_failures[check["failure"]] += 1
            hallucinated += len(r["read"].get("hallucinated", []))
            picked = r["read"].get("selected")
            selected += len(picked) if isinstance(picked, list) else 0
            tally.add(r, role="task")
    written = 0
    for entry in (e for run_writes in writes for e in run_writes):
        for record in entry["records"]:
            if record.get("error"):
                errors["write: " + record["error"].split(":")[0]] += 1
            else:
                written += 1
        tally.add(entry, role="memory")
    return {
        "task": "arc",
        "program": config.program,
        "split": config.split,
        "lm": task.spec,
        "memory_lm": memory.spec,
        "examples": len(tasks),
        "runs": config.runs,
        "attempts": config.attempts,
        "retries": config.retries,
        **aggregate_runs(run_scores),
        **cis[None],  # 95% bootstrap CIs over tasks of the scores above
        "score_by_retries_ci": {r: cis[r]["official_score_ci"] for r in by_retries},
        **_pooled(config, tasks, per_run),  # oracle@k and strict@k over every attempt of every run; the sampling protocol
        "ci_method": ci_method("tasks"),
        "by_retries": by_retries,
        "per_run": run_scores,
        "failures": dict(sorted(failures.items())),  # tasks scored 0 because their LM calls failed, by kind
        "faults": dict(sorted(tally.faults.items())),  # every failed LM answer, by kind
        "lm_retries": dict(sorted(tally.retries.items())),  # the faults asked again (``retries`` is the solver's depth)
        "errors": dict(sorted(errors.items())),
        "program_failures": dict(sorted(program_failures.items())),
        "selection": {"selected": selected, "hallucinated": hallucinated},
        "unchanged_tests": unchanged_tests(tasks, per_run),  # tasks a program that returns its input solves
        "programs": fared.results(),  # how every program written (first tries and retries) fared on the train inputs
        "memory_measures": memory_measures(per_run),  # selection quality and concept reuse (None: no selection)
        "memory_writes": sum(len(w) for w in writes),  # write points (every k problems), with or without a verified solution
        "memory_solutions_written": written,
        **tally.results(task.spec, memory.spec),
        "config": {k: v for k, v in asdict(config).items() if k != "threads"},
    }


def unchanged_tests(tasks: Sequence[ArcTask], per_run: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """The tasks whose every test output equals its input (a program that returns its input solves them), and
    those of them some run solved: ``{"tasks": [ids], "solved": [ids]}``."""
    ids = [t.id for t in tasks if all(p.input == p.output for p in t.test)]
    solved = {
        tasks[i].id
        for records in per_run
        for i, r in enumerate(records)
        if tasks[i].id in ids and ((r.get("scores") or {}).get("official_score") or 0) > 0
    }
    return {"tasks": ids, "solved": [i for i in ids if i in solved]}


def _pooled(
    config: ArcConfig, tasks: Sequence[ArcTask], per_run: list[list[dict[str, Any]]], retries: int | None = None
) -> dict[str, Any]:
    """``oracle_at_k_pooled``, ``strict_at_k_pooled`` and ``sampling`` over the pool of every attempt of every run
    (:func:`sample_pool`), each attempt stopped after ``retries`` retries (None: as it ended)."""
    n = config.attempts * config.runs
    pools, strict = [], []
    for i, item in enumerate(tasks):
        matrices = [_verify(item, records[i], retries) for records in per_run]
        pools.append(sample_pool([m for m, _ in matrices], attempts=config.attempts, tests=len(item.test)))
        strict.append(sample_pool([m for _, m in matrices], attempts=config.attempts, tests=len(item.test)))

    def mean(score, pool_list, k: int) -> float | None:
        return sum(score(pool, k) for pool in pool_list) / len(pool_list) if k <= n and pool_list else None

    def per_task(score, pool_list, k: int) -> list[float | None]:
        return [score(pool, k) if k <= n else None for pool in pool_list]

    cis = intervals(
        {("oracle", str(k)): per_task(oracle_at_k, pools, k) for k in KS}
        | {("strict", str(k)): per_task(strict_at_k, strict, k) for k in KS}
    )
    return {
        "oracle_at_k_pooled": {str(k): mean(oracle_at_k, pools, k) for k in KS},
        "strict_at_k_pooled": {str(k): mean(strict_at_k, strict, k) for k in KS},  # one program passes every pair
        "oracle_at_k_pooled_ci": {str(k): cis[("oracle", str(k))] for k in KS},  # 95% bootstrap CIs over tasks
        "strict_at_k_pooled_ci": {str(k): cis[("strict", str(k))] for k in KS},
        "sampling": sampling(pools, pool=n),  # per-sample scores, oracle@k with std over k-subsets
    }


def _intervals(per_run: list[list[dict[str, Any]]], retries: int) -> dict[str | None, dict[str, Any]]:
    """95% bootstrap CIs over tasks of each score, each task's score the mean over its runs: by retry depth
    (``"0"``, ``"1"``, ...) and for the run as it ended (``None``), as ``official_score_ci``, ``strict_score_ci``,
    ``oracle_at_k_ci`` and ``strict_at_k_ci``."""
    depths: list[str | None] = [None, *(str(r) for r in range(retries + 1))]
    fields = [
        ("official_score", None),
        ("strict_score", None),
        *((key, str(k)) for key in ("oracle_at_k", "strict_at_k") for k in KS),
    ]

    def value(record: dict[str, Any], depth: str | None, key: str, k: str | None) -> float | None:
        scores = record["scores"] if depth is None else record["scores"]["by_retries"][depth]
        return scores[key] if k is None else scores[key][k]

    def task_mean(records: Sequence[dict[str, Any]], depth: str | None, key: str, k: str | None) -> float | None:
        values = [value(r, depth, key, k) for r in records]
        return None if any(v is None for v in values) else sum(values) / len(values)

    tasks = list(zip(*per_run))  # each task's records, one per run
    found = intervals(
        {(depth, key, k): [task_mean(records, depth, key, k) for records in tasks] for depth in depths for key, k in fields}
    )
    out: dict[str | None, dict[str, Any]] = {}
    for depth in depths:
        out[depth] = {
            "official_score_ci": found[(depth, "official_score", None)],
            "strict_score_ci": found[(depth, "strict_score", None)],
            "oracle_at_k_ci": {str(k): found[(depth, "oracle_at_k", str(k))] for k in KS},
            "strict_at_k_ci": {str(k): found[(depth, "strict_at_k", str(k))] for k in KS},
        }
    return out


def _verify(task: ArcTask, record: dict[str, Any], retries: int | None) -> tuple[list[list[bool]], list[list[bool]]]:
    """A task record's verify matrices after ``retries`` retries (None: as it ended): some program of each attempt
    so far gets the test pair, and the program it stops on does. Read from its attempts; a record without any
    (the task failed before them) has its ``verify``."""
    if not record.get("attempts"):
        return record["verify"], record["verify"]
    attempts = [Attempt.from_json(a) for a in record["attempts"]]
    any_step = record["verify"] if retries is None else verify_matrix(task, attempts, retries)
    return any_step, verify_matrix(task, attempts, retries, step="last")


UNDEFINED = re.compile(r"NameError: name '(\w+)' is not defined")
NAMES_KEPT = 10  # the undefined names results.json lists, most called first


@dataclass
class ProgramTally:
    """How the programs a run wrote fared on their task's train inputs, each counted once by its first failure.

    ``did_not_parse``, ``no_transform``, ``raised`` (by exception class), ``timed_out``, ``bad_output`` (not a
    grid), else ``ran`` (a grid for every train input), of which ``some_right`` and ``all_right``; ``stubs``: a
    transform that does nothing; ``undefined_names``: the names whose NameError stopped a program (a concept's
    title called as a function, say), most frequent first."""

    written: int = 0
    stubs: int = 0
    counts: Counter = field(default_factory=Counter)
    raised: Counter = field(default_factory=Counter)
    undefined: Counter = field(default_factory=Counter)

    def add(self, program: str, train: list[dict[str, Any]]) -> None:
        self.written += 1
        self.stubs += is_stub(program)
        failures = [check for check in train if check.get("failure")]
        kinds = {check["failure"] for check in failures}
        for kind, key in (("SYNTAX_ERROR", "did_not_parse"), ("NO_TRANSFORM", "no_transform")):
            if kind in kinds:
                self.counts[key] += 1
                return
        raised = next((check for check in failures if check["failure"] == "EXCEPTION"), None)
        if raised is not None:
            detail = str(raised.get("detail") or "")
            self.raised[detail.split(":")[0].strip() or "unknown"] += 1
            name = UNDEFINED.search(detail)
            if name:
                self.undefined[name.group(1)] += 1
            return
        for kind, key in (("TIMEOUT", "timed_out"), ("BAD_OUTPUT", "bad_output")):
            if kind in kinds:
                self.counts[key] += 1
                return
        if failures:  # a kind this tally does not know
            self.counts["other"] += 1
            return
        self.counts["ran"] += 1
        right = sum(bool(check.get("correct")) for check in train)
        self.counts["some_right"] += right > 0
        self.counts["all_right"] += bool(train) and right == len(train)

    def results(self) -> dict[str, Any]:
        keys = ("did_not_parse", "no_transform", "timed_out", "bad_output", "ran", "some_right", "all_right")
        return {
            "written": self.written,
            "stubs": self.stubs,
            **{key: self.counts[key] for key in keys},
            **({"other": self.counts["other"]} if self.counts["other"] else {}),
            "raised": dict(self.raised.most_common()),
            "undefined_names": [[name, n] for name, n in self.undefined.most_common(NAMES_KEPT)],
        }


def is_stub(program: str) -> bool:
    """Whether ``program``'s ``transform`` does nothing: its body only ``pass``, ``...``, a docstring, a comment,
    ``return``, ``return None`` or ``return grid`` (a program that does not parse or has no transform is no stub)."""
    try:
        tree = ast.parse(program)
    except SyntaxError:
        return False
    function = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "transform"), None)
    if function is None:
        return False
    argument = function.args.args[0].arg if function.args.args else None

    def idle(node: ast.stmt) -> bool:
        if isinstance(node, ast.Pass):
            return True
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):  # a docstring or ...
            return True
        if isinstance(node, ast.Return):
            value = node.value
            return (
                value is None
                or (isinstance(value, ast.Constant) and value.value is None)
                or (isinstance(value, ast.Name) and value.id == argument)
            )
        return False

    return all(idle(node) for node in function.body)
