"""Compile the memory writer, scored by hypothesis F1 on generated rule tables: what ``python -m optimize compile consolidator`` does.

    python -m optimize compile consolidator --program hdr --optimizer bootstrap --train-tables 8 --val-tables 4 --level 2
    python -m optimize compile consolidator --program hdr_grounded --optimizer gepa --budget 40 --level 2
    python -m optimize compile consolidator --program hdr --optimizer bootstrap --max-demos 0 --labeled-demos 1 --level 2
    python -m eval hdr --level 2 --program-state runs/compiled/consolidator-hdr-bootstrap-<time>/program.json

    outcome = compile_consolidator(ConsolidatorOptions(program="hdr", optimizer="bootstrap", level=2, lm="..."))
    print(outcome.summary, outcome.state)   # the same, from Python

The HDR paper's consolidator (factor extractor, hypothesis generator, verifier; for
``hdr_grounded`` the factor extractor and the rule generator) runs on hand-written
instructions. Hypothesis F1 scores what it writes against any rule table, and tables can be
generated without end (:mod:`memreason.datasets.experience_transfer.random_tables`), so
here the training signal is F1: one example per table (its level's episodes, text
modality), the metric the F1 of the memory written (parser-read; ``hdr_grounded``'s
structured rules read exactly), and for GEPA textual feedback naming the wrong hypotheses
and the combinations no right hypothesis covers. Training and validation tables come from
disjoint seed streams; the paper's Table 1 is in neither.

A generated table also knows its answer, so each training example carries a labelled
consolidation (:func:`labelled`): the attributes its rules read as the factors, its oracle
hypotheses as the hypotheses, and every one of them judged valid. ``--labeled-demos N`` lets
``bootstrap`` and ``mipro`` put N of these on each of ``hdr``'s predictors as DSPy's labelled demos, which
a consolidator that never reaches ``--threshold`` (so bootstraps nothing) can still learn from. ``--labeled-rules
specific`` states those rules one per combination shown (:func:`combination_rules`);
``--labeled-verdicts`` gives the verifier demos of its own with false rules to reject (:func:`judged`).

The optimizers (DSPy 3.4.1, on the memory LM, which is also GEPA's reflection LM and
MIPROv2's and SIMBA's proposer) see the consolidation's predictors only
(:class:`MemoryWriter`); bootstrapped demos come from tables whose memory reached
``--threshold`` F1. ``--out`` receives ``program.json`` (the DSPy state of the consolidator's predictors alone,
no reasoner and no memory: ``python -m eval <program> --program-state`` loads it into the
program whatever its reader's knobs, ``--per-object`` and ``--retrieve-k`` included), ``compile.json``
and ``summary.md``: the F1 of the uncompiled and the compiled consolidator on every
validation table (and the optimizer's own candidate scores where it keeps them), with the
calls, tokens and wall time. Every LM answer is kept in ``<out>/dspy_cache``: the same
command again replays what was done and goes on from there. ``--program-state`` starts from an
earlier compile's ``program.json`` instead of the hand-written consolidator (GEPA rewrites
instructions and keeps the demos; ``bootstrap`` starts its demos afresh, as DSPy's optimizers do).
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dspy
from dspy.utils.saving import get_dependency_versions

from memreason.datasets.experience_transfer import LEVELS, ExperienceTransferLevel, make_level
from memreason.datasets.experience_transfer.random_tables import random_tables
from memreason.datasets.experience_transfer.rules import article
from memreason.eval.experience_transfer.hypothesis_scoring import memory_score, scored_combinations
from memreason.eval.experience_transfer.run import level_episodes
from memreason.eval.harness.budget import capped, chars_to_tokens, check_prices, log_estimate
from memreason.eval.harness.errors import UsageError
from memreason.eval.harness.lms import resolve_lms, retry_policy
from memreason.eval.harness.runs import new_run_dir, use_response_cache, write_json
from memreason.eval.harness.session import RunSession
from memreason.eval.harness.tuned import TunedError, state_digest
from memreason.files import write_text
from memreason.lm import LMChoice
from memreason.lm.faults import RunAborted, failure_of
from memreason.lm.redact import redact
from memreason.lm.tokens import Meter, metering
from memreason.programs import build_program

from .choices import LABELLED_RULES, PROGRAMS_WITH_CONSOLIDATORS
from .compile import OPTIMIZERS, OptimizerOptions, make_optimizer, parse_knobs, run_optimizer, spending, stop_if_spent
from .lms import resolve
from .objective import build_memory

__all__ = [
    "LABELLED_RULES",
    "PROGRAMS_WITH_CONSOLIDATORS",
    "ConsolidatorOptions",
    "ConsolidatorOutcome",
    "F1Feedback",
    "MemoryWriter",
    "combination_rules",
    "compile_consolidator",
    "judged",
    "labelled",
    "specific_rule",
    "summary",
    "validation_f1",
]

log = logging.getLogger(__name__)


@dataclass(kw_only=True)
class ConsolidatorOptions(OptimizerOptions):
    """What compiling a consolidator asks for (``python -m optimize compile consolidator``)."""

    program: str = "hdr"  # whose consolidator: one of PROGRAMS_WITH_CONSOLIDATORS
    level: int = 2  # the Experience-Transfer level of every table
    train_tables: int = 8  # generated training tables
    val_tables: int = 4  # generated validation tables
    test_tables: int = 0  # generated test tables scored before and after compiling
    paper_levels: list[int] = field(default_factory=list)  # levels of the paper's Table 1 scored before and after
    program_state: Path | None = None  # start from this consolidator state instead of the hand-written one
    max_demos: int = 2
    labeled_demos: int = 0  # bootstrap and MIPROv2: labelled demos per predictor, from training tables' true rules
    labeled_rules: str = "general"  # one of LABELLED_RULES: how the labelled demos state their rules
    labeled_verdicts: bool = False  # the verifier's labelled demos judge specific rules, a third of them false
    threshold: float = 0.5  # bootstrap and MIPROv2: the F1 a table's memory must reach for its calls to become demos


@dataclass
class ConsolidatorOutcome:
    """A compiled consolidator: its directory, the state ``python -m eval --program-state`` loads, the report."""

    out: Path
    state: Path  # program.json
    config: Path  # config.json
    report: dict[str, Any]  # compile.json
    summary: str  # summary.md


class MemoryWriter(dspy.Module):
    """The consolidation of a memory program as a module DSPy optimizers compile: episodes in, memory record out.

    ``named_parameters`` are the consolidation's predictors only (the program keeps them out
    of reach of answer-level optimizers; here they are the point), so demos and instructions
    land on the factor extractor, the generator and the verifier, and never on the reasoner.
    """

    def __init__(self, program: dspy.Module):
        super().__init__()
        self.program = program

    def named_parameters(self) -> list[tuple[str, Any]]:
        return [(f"program.{name}", p) for name, p in self.program.consolidation_predictors()]

    def forward(self, episodes) -> dspy.Prediction:
        record = self.program.memorize(episodes)
        return dspy.Prediction(hypotheses=record.get("hypotheses", []), record=record)


def labelled(data: ExperienceTransferLevel, table: str, rules: str = "general") -> dspy.Example:
    """A training table's episodes (the input) with the consolidation its rule table implies, every field a
    consolidator predictor reads or writes: no factors yet, the attributes its rules read, no previous
    hypotheses, the table's true rules as the hypotheses, and each of them judged valid.

    ``rules="general"`` states the true rules as the table's oracle hypotheses (the fewest statements,
    with the background flip where it holds). ``"specific"`` states one rule per attribute
    combination the episodes show, in the order they first show it ("A blue circle on a black background
    is labelled anomaly."): every one true, none more general than an episode.
    """
    if rules not in LABELLED_RULES:
        raise ValueError(f"rules must be one of {', '.join(LABELLED_RULES)}, got {rules!r}")
    episodes = level_episodes(data.episodes, "text")
    truth = list(data.oracle_hypotheses) if rules == "general" else combination_rules(episodes)
    return dspy.Example(
        episodes=episodes,
        table=table,
        current_factors=[],
        factors=list(data.rules.attributes),
        previous_hypotheses=[],
        hypotheses=truth,
        verdicts=[_valid(h) for h in truth],
    ).with_inputs("episodes")


def combination_rules(episodes) -> list[str]:
    """One rule per attribute combination the episodes show, with the label it carries, in order of first showing."""
    return [specific_rule(episode.attributes, episode.label) for episode in _first_shown(episodes)]


def specific_rule(attributes: dict[str, str], label: str) -> str:
    """The rule for one combination, worded as the episodes word their objects ("A blue circle on a black
    background is labelled anomaly."), which the small model copies more faithfully than the oracle's wording."""
    if set(attributes) != {"color", "shape", "background"}:
        raise ValueError(f"a specific rule needs exactly a color, a shape and a background, got {dict(attributes)}")
    background = attributes["background"]
    return f"A {attributes['color']} {attributes['shape']} on {article(background)} {background} background is labelled {label}."


def judged(data: ExperienceTransferLevel, table: str) -> dspy.Example:
    """A verifier's labelled call on a training table: its specific rules (:func:`combination_rules`), every third
    stated with the other label, each judged: the true ones valid, the false ones invalid, naming the episode that
    contradicts them. Only the verifier reads it (its hypotheses are not a generator's answer)."""
    episodes = level_episodes(data.episodes, "text")
    hypotheses, verdicts = [], []
    for i, episode in enumerate(_first_shown(episodes)):
        label = episode.label if i % 3 else next(other for other in data.rules.labels if other != episode.label)
        rule = specific_rule(episode.attributes, label)
        hypotheses.append(rule)
        verdicts.append(
            _valid(rule)
            if label == episode.label
            else {
                "hypothesis": rule,
                "reason": f'the episode "{episode.observation}" is labelled {episode.label}',
                "verdict": "invalid",
            }
        )
    return dspy.Example(
        episodes=episodes, table=table, factors=list(data.rules.attributes), hypotheses=hypotheses, verdicts=verdicts
    ).with_inputs("episodes", "factors", "hypotheses")


def _valid(hypothesis: str) -> dict[str, str]:
    """A labelled verdict for a true rule."""
    return {"hypothesis": hypothesis, "reason": "no episode contradicts it", "verdict": "valid"}


def _first_shown(episodes) -> list:
    """The first episode of each attribute combination, in showing order; episodes that give one combination two
    labels are refused."""
    first: dict[tuple, Any] = {}
    for episode in episodes:
        key = tuple(sorted(episode.attributes.items()))
        if first.setdefault(key, episode).label != episode.label:
            raise ValueError(f"episodes give {dict(key)} two labels: {first[key].label!r} and {episode.label!r}")
    return list(first.values())


class F1Feedback:
    """Hypothesis F1 of the memory written for an example's table; for GEPA with feedback on what was wrong and missing."""

    def __init__(self, levels: dict[str, ExperienceTransferLevel]):
        self.levels = levels

    def __call__(self, example, prediction, trace=None, pred_name=None, pred_trace=None):
        data = self.levels[example.table]
        record = getattr(prediction, "record", None) or {"hypotheses": list(getattr(prediction, "hypotheses", []) or [])}
        score = memory_score(record, data)
        if pred_name is None and pred_trace is None:
            return score.f1
        return dspy.Prediction(score=score.f1, feedback=self.feedback(record, data, score))

    @staticmethod
    def feedback(record: dict[str, Any], data: ExperienceTransferLevel, score) -> str:
        hypotheses = list(record.get("hypotheses") or [])
        wrong = [h for h, ok in zip(hypotheses, score.correct) if not ok]
        combinations, truth = scored_combinations(data)
        missed = [
            f"{c.get('color')} {c.get('shape')} on {c.get('background', 'any')} background is {label}"
            for c, label, covered in zip(combinations, truth, score.covered)
            if not covered
        ]
        text = f"Hypothesis F1 {score.f1:.2f} against the true rules ({len(hypotheses)} hypotheses written)."
        if wrong:
            text += " Wrong or unreadable hypotheses: " + " | ".join(wrong) + "."
        if missed:
            text += " No correct hypothesis covers: " + "; ".join(missed) + "."
        return text


def compile_consolidator(options: ConsolidatorOptions) -> ConsolidatorOutcome:
    """Compile ``options.program``'s consolidator with ``options.optimizer`` into ``options.out`` (raises
    :class:`UsageError` on bad input, before any model loads); progress is logged, the summary returned."""
    check_options(options)
    knobs = parse_knobs(options)
    program, start_sha256 = starting_program(options, knobs)
    check_prices(options.budget_usd, [options.memory_lm or options.lm])
    _, memory = resolve_lms(options, resolve=resolve)
    spend = spending(options)
    memory = capped(memory, "memory", spend, retry_policy(options))
    out = options.out or new_run_dir(Path("runs") / "compiled", f"consolidator-{options.program}-{options.optimizer}")
    out.mkdir(parents=True, exist_ok=True)
    use_response_cache(options.cache or out / "dspy_cache")

    tables = Tables.drawn(options)
    if spend is not None:
        estimate_spend(spend, tables, knobs, memory.spec)
    before = validation_f1(program, tables.scored, memory, options, label="at start" if options.program_state else "uncompiled")
    stop_if_spent(spend, out)
    refuse_failed_memories(before, "before compiling, so nothing was compiled", out)
    compiled, compiling = optimize_consolidator(program, tables, memory, options)
    stop_if_spent(spend, out)
    after = validation_f1(compiled.program, tables.scored, memory, options, label="compiled")
    stop_if_spent(spend, out)

    report = {
        "program": options.program,
        "optimizer": options.optimizer,
        "level": options.level,
        "seed": options.seed,
        "knobs": knobs,
        "labeled_demos": options.labeled_demos,
        "labeled_rules": options.labeled_rules,
        "labeled_verdicts": options.labeled_verdicts,
        "memory_lm": memory.spec,
        "start_state": str(options.program_state) if options.program_state else None,
        "start_state_sha256": start_sha256,
        "train_tables": list(tables.train),
        "val_tables": list(tables.val),
        "test_tables": list(tables.held_out),
        "compile": compiling,
        "validation": {"uncompiled": _subset(before, tables.val), "compiled": _subset(after, tables.val)},
        "test": {"uncompiled": _subset(before, tables.held_out), "compiled": _subset(after, tables.held_out)},
        "optimizer_candidates": _candidate_scores(compiled),
        "demos": {name: len(p.demos) for name, p in compiled.named_predictors()},
        "instructions": {name: p.signature.instructions for name, p in compiled.named_predictors()},
    }
    text = save_compiled(out, compiled.program, report, options, knobs)
    refuse_failed_memories(after, f"after compiling; the report in {out} scores them F1 0", out)
    return ConsolidatorOutcome(out=out, state=out / "program.json", config=out / "config.json", report=report, summary=text)


# -- the steps ---------------------------------------------------------------------------------


def check_options(options: ConsolidatorOptions) -> None:
    """Refuse what cannot be compiled, in one line each, before anything loads."""
    if options.program not in PROGRAMS_WITH_CONSOLIDATORS:
        raise UsageError(f"--program must be one of {', '.join(PROGRAMS_WITH_CONSOLIDATORS)}, got {options.program!r}")
    if options.optimizer not in OPTIMIZERS:
        raise UsageError(f"unknown optimizer {options.optimizer!r}; choose from: {', '.join(OPTIMIZERS)}")
    if options.level not in LEVELS:
        raise UsageError(f"--level must be 1, 2 or 3, got {options.level}")
    if options.labeled_demos and options.optimizer not in ("bootstrap", "mipro"):
        raise UsageError(f"--labeled-demos is for bootstrap and mipro; {options.optimizer} takes no labelled demos")
    if options.labeled_demos and options.program != "hdr":
        raise UsageError(
            "--labeled-demos is for hdr's consolidator (its labels are factors, hypotheses and verdicts); "
            f"{options.program} writes other fields"
        )
    if options.labeled_rules != "general" and not options.labeled_demos:
        raise UsageError("--labeled-rules says how the labelled demos state their rules; give --labeled-demos N too")
    if options.labeled_verdicts and not options.labeled_demos:
        raise UsageError("--labeled-verdicts says what the verifier's labelled demos judge; give --labeled-demos N too")


def starting_program(options: ConsolidatorOptions, knobs: dict[str, Any]) -> tuple[Any, str | None]:
    """The program whose consolidator is compiled, from ``--program-state`` when given; that state's digest."""
    try:
        program = build_program(options.program, **knobs)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{options.program} does not take these knobs {knobs}: {exc}") from None
    try:
        digest = state_digest(program, f"{options.program}'s consolidator", options.program_state, load="load_consolidation")
    except TunedError as exc:
        raise UsageError(str(exc)) from None
    return program, digest


@dataclass
class Tables:
    """The generated rule tables: training, validation and held out (the paper's Table 1 levels among these)."""

    train: dict[str, ExperienceTransferLevel]
    val: dict[str, ExperienceTransferLevel]
    held_out: dict[str, ExperienceTransferLevel]

    @classmethod
    def drawn(cls, options: ConsolidatorOptions) -> "Tables":
        def tables(kind: str, count: int) -> dict[str, ExperienceTransferLevel]:
            drawn = random_tables(kind, count, seed=options.seed)
            return {t.name: make_level(options.level, seed=options.seed, rules=t) for t in drawn}

        held_out = tables("test", options.test_tables)
        held_out.update({f"paper Table 1, L{level}": make_level(level, seed=options.seed) for level in options.paper_levels})
        return cls(tables("train", options.train_tables), tables("validation", options.val_tables), held_out)

    @property
    def scored(self) -> dict[str, ExperienceTransferLevel]:
        """The tables scored before and after compiling."""
        return {**self.val, **self.held_out}

    def trainset(self, rules: str) -> list[dspy.Example]:
        return [labelled(d, name, rules) for name, d in self.train.items()]

    def valset(self) -> list[dspy.Example]:
        return [
            dspy.Example(episodes=level_episodes(d.episodes, "text"), table=name).with_inputs("episodes")
            for name, d in self.val.items()
        ]


def estimate_spend(spend: Any, tables: Tables, knobs: dict[str, Any], spec: str) -> None:
    """Log what compiling will cost: training tables once an optimizer pass; validation and held-out ones twice."""
    episodes = " ".join(e.text() for e in next(iter({**tables.train, **tables.val}.values())).episodes)
    log_estimate(
        spend,
        unit="consolidations",
        todo=len(tables.train) + 2 * len(tables.scored),
        done=0,
        calls=knobs.get("K", 2) + 2 * knobs.get("N", 3),
        prompt=chars_to_tokens([episodes]),
        basis="a table's episodes, 4 characters a token; K + 2N calls a consolidation, once per optimizer pass",
        spec=spec,
    )


def optimize_consolidator(program: Any, tables: Tables, memory: Any, options: ConsolidatorOptions) -> tuple[Any, dict]:
    """The optimizer run on the consolidator's predictors (:class:`MemoryWriter`), every call metered; the compiled
    writer and what compiling spent."""
    started = time.perf_counter()
    session = RunSession.start(memory, memory, policy=retry_policy(options))
    guarded = LMChoice(memory.spec, session.memory_lm, local=memory.local)  # faults retried, every call metered
    meter = Meter()
    examples = tables.trainset(options.labeled_rules)
    with session.memory_context(), metering(meter):
        optimizer = make_optimizer(
            options.optimizer,
            F1Feedback({**tables.train, **tables.val}),
            task=guarded,
            memory=guarded,
            options=options,
            trainset_size=len(examples),
            labeled_demos=options.labeled_demos,
            threshold=options.threshold,
        )
        compiled = run_optimizer(optimizer, options.optimizer, MemoryWriter(program), examples, tables.valset(), options)
        if options.labeled_verdicts:  # the verifier's demos from its own labelled calls, some rules false
            consolidator = compiled.program.consolidator
            consolidator.verify = dspy.LabeledFewShot(k=options.labeled_demos).compile(
                consolidator.verify, trainset=[judged(d, name) for name, d in tables.train.items()]
            )
    spent = meter.tokens()
    compiling = {
        "calls": spent.calls,
        "prompt_tokens": spent.prompt,
        "completion_tokens": spent.completion,
        "wall_seconds": round(time.perf_counter() - started, 2),
    }
    return compiled, compiling


def save_compiled(out: Path, program: Any, report: dict[str, Any], options: ConsolidatorOptions, knobs: dict) -> str:
    """Write ``program.json`` (the consolidator's predictors alone, no reasoner and no memory, so the state fits any
    reader's knobs), ``config.json``, ``compile.json`` and ``summary.md``; the summary."""
    write_json(
        out / "program.json", {**program.consolidation_state(), "metadata": {"dependency_versions": get_dependency_versions()}}
    )
    write_json(out / "config.json", {"program": options.program, "level": options.level, "knobs": knobs})
    write_json(out / "compile.json", report)
    text = summary(report)
    write_text(out / "summary.md", redact(text))
    return text


def validation_f1(
    program, levels: dict[str, ExperienceTransferLevel], memory: LMChoice, options: ConsolidatorOptions, *, label: str
) -> dict[str, Any]:
    """The memory ``program`` writes for every table in ``levels``, scored: F1 per table and the mean, with what it spent.

    ``options.threads`` tables are consolidated at once, each by its own copy of ``program``.
    """
    done = iter(range(1, len(levels) + 1))

    def score(name: str, data: ExperienceTransferLevel) -> dict[str, Any]:
        try:
            record = build_memory(program.deepcopy(), level_episodes(data.episodes, "text"), data, memory, retry_policy(options))
        except Exception as exc:  # a memory that could not be built (a call that failed for good) scores 0
            failure = failure_of(exc)
            log.warning(
                "[%s %d/%d] %s: F1 0.00 (no memory: %s: %s)",
                label,
                next(done),
                len(levels),
                name,
                failure["kind"],
                failure["reason"],
            )
            return {
                "f1": 0.0,
                "precision": 0.0,
                "recall": 0.0,
                "hypotheses": [],
                "failure": f"{failure['kind']}: {failure['reason']}",
            }
        found = memory_score(record, data)
        cut = sum((record.get("cut") or {}).values())
        log.info(
            "[%s %d/%d] %s: F1 %.2f (%d calls%s)",
            label,
            next(done),
            len(levels),
            name,
            found.f1,
            (record.get("tokens") or {}).get("calls", 0),
            f", {cut} cut at the token cap" if cut else "",
        )
        return {
            "f1": found.f1,
            "precision": found.precision,
            "recall": found.recall,
            "hypotheses": record.get("hypotheses", []),
            "tokens": record.get("tokens"),
            "cut": record.get("cut") or {},
            "wall_seconds": record.get("wall_seconds"),
        }

    with ThreadPoolExecutor(max(1, min(options.threads, len(levels)))) as pool:
        per_table = dict(zip(levels, pool.map(lambda item: score(*item), levels.items())))
    return _subset({"tables": per_table}, levels)


def refuse_failed_memories(scores: dict[str, Any], when: str, out: Path) -> None:
    """Stop the command (:class:`RunAborted`, exit 1, what was written kept) when a table's memory could not be built.

    An F1 of 0 for a memory the LM never wrote measures the LM's address, not the consolidator: a compile
    that reports it must not end as a success.
    """
    failed = [(name, table["failure"]) for name, table in scores["tables"].items() if table.get("failure")]
    if failed:
        name, failure = failed[0]
        raise RunAborted(
            f"{len(failed)} of {len(scores['tables'])} memories could not be built {when} "
            f"(first, {name}: {failure}); check --lm and --api-base, then run again"
        )


def _subset(scores: dict[str, Any], levels: dict[str, Any]) -> dict[str, Any]:
    """The per-table scores of ``levels`` only, with their mean F1."""
    tables = {name: scores["tables"][name] for name in levels}
    f1s = [t["f1"] for t in tables.values()]
    return {"mean_f1": sum(f1s) / len(f1s) if f1s else 0.0, "tables": tables}


def _candidate_scores(compiled) -> list[float]:
    """The scores the optimizer kept for its candidates (MIPROv2 and SIMBA keep ``candidate_programs``)."""
    candidates = getattr(compiled, "candidate_programs", None) or []
    return [round(float(c["score"]), 4) for c in candidates if isinstance(c, dict) and c.get("score") is not None]


def _labelled(report: dict[str, Any]) -> str:
    demos = report.get("labeled_demos")
    verdicts = ", the verifier's judging false rules too" if report.get("labeled_verdicts") else ""
    return f"; {demos} labelled demo(s) per predictor, {report['labeled_rules']} rules{verdicts}" if demos else ""


def _started(report: dict[str, Any]) -> list[str]:
    """The line naming the state the compile started from, if it did not start from the hand-written consolidator."""
    if not report.get("start_state"):
        return []
    return [
        f"Started from `{report['start_state']}` (sha256 {report['start_state_sha256'][:12]}): "
        '"at start" is that state, and the compiled program keeps what the optimizer did not change.',
        "",
    ]


def _cut_lines(report: dict[str, Any], start: str) -> list[str]:
    """How many scored answers stopped at the generation cap, before and after, by step (none: no line)."""
    parts = []
    for key, label in (("uncompiled", start), ("compiled", "compiled")):
        tables = [t for split in ("validation", "test") for t in report[split][key]["tables"].values()]
        by_step = sum((Counter(table.get("cut") or {}) for table in tables), Counter())
        if by_step:
            calls = sum((table.get("tokens") or {}).get("calls", 0) for table in tables)
            steps = ", ".join(f"{step} {n}" for step, n in sorted(by_step.items()))
            parts.append(f"{label} {by_step.total()} of {calls} ({steps})")
    if not parts:
        return []
    return ["", "Answers that stopped at the token cap (--max-tokens) instead of ending: " + "; ".join(parts) + "."]


def summary(report: dict[str, Any]) -> str:
    """``summary.md``: F1 before and after on every validation table, and what compiling cost."""
    before, after = report["validation"]["uncompiled"], report["validation"]["compiled"]
    start = "at start" if report.get("start_state") else "uncompiled"
    lines = [
        f"# Compiled consolidator: {report['program']} with {report['optimizer']}",
        "",
        f"Level {report['level']}, seed {report['seed']}, memory LM {report['memory_lm']}, knobs {json.dumps(report['knobs'])}; "
        f"{len(report['train_tables'])} training tables, {len(report['val_tables'])} validation tables{_labelled(report)}.",
        "",
        *_started(report),
        f"| validation table | F1 {start} | F1 compiled |",
        "|---|---|---|",
    ]
    for name in report["val_tables"]:
        lines.append(f"| {name} | {before['tables'][name]['f1']:.2f} | {after['tables'][name]['f1']:.2f} |")
    lines.append(f"| **mean** | **{before['mean_f1']:.2f}** | **{after['mean_f1']:.2f}** |")
    if report["test_tables"]:
        test_before, test_after = report["test"]["uncompiled"], report["test"]["compiled"]
        lines += ["", f"| held-out table (never trained or validated on) | F1 {start} | F1 compiled |", "|---|---|---|"]
        for name in report["test_tables"]:
            lines.append(f"| {name} | {test_before['tables'][name]['f1']:.2f} | {test_after['tables'][name]['f1']:.2f} |")
        lines.append(f"| **mean** | **{test_before['mean_f1']:.2f}** | **{test_after['mean_f1']:.2f}** |")
    lines += _cut_lines(report, start)
    spent = report["compile"]
    lines += [
        "",
        f"Compiling: {spent['calls']} LM calls, {spent['prompt_tokens']:,} + {spent['completion_tokens']:,} tokens "
        f"(prompt + completion), {spent['wall_seconds']:.0f} s.",
        f"Demos per predictor: {json.dumps(report['demos'])}.",
    ]
    if report["optimizer_candidates"]:
        lines.append(f"The optimizer's candidate scores (mean F1 on what it evaluated): {report['optimizer_candidates']}.")
    return "\n".join(lines) + "\n"
