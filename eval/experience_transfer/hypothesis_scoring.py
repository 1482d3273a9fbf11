"""Score the semantic memory a run built against its level's rule table (``hypothesis_f1``).

An automatic stand-in for the HDR paper's manual assessment (Table 5): every statement is
judged on its own, by the labels it implies for the combinations it speaks of (silent
elsewhere). A statement is correct when all it implies is true; precision is the share of
correct statements among the distinct ones that imply something (statements with the same
implications count once; statements that imply nothing are left out); recall is the share of
the scored combinations whose label some correct statement states. See
:func:`memreason.eval.metrics.hypothesis_f1`.

Three ways to read a hypothesis, named by ``mode``:

- ``parse``: the deterministic parser (:func:`memreason.programs.parse_implications`). Free, exact, and
  strict: a hypothesis it cannot read implies nothing, so it is never correct (and is left out of
  precision). It reads each statement on its own: negations, and the background flip (correct on its
  own when the table flips; it covers the twins of what correct label statements cover).
- ``interpret``: an interpreter LM states the label each hypothesis implies per combination; the same
  per-statement arithmetic. It answers in labels only, so it reads a relative statement such as the
  flip against the other hypotheses of the set, and such a statement can inherit their errors.
- ``judge``: an LM judge matches hypotheses to the level's oracle hypotheses (HypoBench-style).

A memory that keeps structured rules (``hdr_grounded``'s ``rules``) is scored from them
exactly, whatever the mode: each rule implies its label wherever its conditions match.

The combinations scored are the ones the level's test scenes draw from, so at Level 3 the
masked combinations count for recall although no episode shows them; :func:`masked_coverage`
says, for each of them, which true rules cover it and whether the memory holds a right one.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from memreason.datasets.experience_transfer import ExperienceTransferLevel

from ..metrics import HypothesisScore, hypothesis_f1, hypothesis_match_f1

F1_MODES = ("parse", "interpret", "judge")


def scored_combinations(data: ExperienceTransferLevel) -> tuple[list[dict[str, str]], list[str]]:
    """The level's attribute combinations (visible and masked) and the table's label for each."""
    combos = sorted(data.visible + data.masked, key=data.rules.combinations().index)
    return [data.rules.as_dict(c) for c in combos], [data.rules.label_of(c) for c in combos]


def score_hypotheses(
    hypotheses: Sequence[str], data: ExperienceTransferLevel, mode: str = "parse", lm: Any = None
) -> HypothesisScore:
    """``hypothesis_f1`` of ``hypotheses`` on ``data``; ``lm`` (an ``LMChoice``) for the LM modes."""
    if mode not in F1_MODES:
        raise ValueError(f"unknown F1 mode {mode!r}; choose from {', '.join(F1_MODES)}")
    from memreason.programs import HypothesisInterpreter, HypothesisJudge, parse_implications

    combinations, truth = scored_combinations(data)
    if mode == "parse":
        return hypothesis_f1(parse_implications(list(hypotheses), combinations, data.rules.labels), truth)
    if lm is None:
        raise ValueError(f"F1 mode {mode!r} needs an LM")
    import dspy  # here: the table command names F1_MODES as it starts

    with dspy.context(lm=lm.lm, adapter=lm.adapter()):
        if mode == "interpret":
            rows = HypothesisInterpreter()(hypotheses=list(hypotheses), combinations=combinations, labels=data.rules.labels)
            return hypothesis_f1(rows.implications, truth)
        matches = HypothesisJudge()(hypotheses=list(hypotheses), rules=data.oracle_hypotheses).matches
        return hypothesis_match_f1(matches, len(data.oracle_hypotheses))


def score_rules(rules: Sequence[Any], data: ExperienceTransferLevel) -> HypothesisScore:
    """``hypothesis_f1`` of structured rules (``hdr_grounded``'s), read exactly: no parser, no LM."""
    from memreason.programs.hdr.rule_check import implications

    combinations, truth = scored_combinations(data)
    return hypothesis_f1(implications(list(rules), combinations), truth)


def score_mode(record: dict[str, Any], mode: str = "parse") -> str:
    """How :func:`memory_score` reads ``record``: ``rules`` when it keeps structured rules, else ``mode``."""
    return "rules" if "rules" in record else mode


def memory_score(record: dict[str, Any], data: ExperienceTransferLevel, mode: str = "parse", lm: Any = None) -> HypothesisScore:
    """The F1 of one memory record: its structured ``rules`` when it keeps them (any mode), else its hypotheses read by ``mode``."""
    if score_mode(record) == "rules":
        from memreason.programs.hdr.rule_check import rules_from_record

        return score_rules(rules_from_record(record), data)
    return score_hypotheses(list(record.get("hypotheses", [])), data, mode, lm)


def masked_coverage(record: Mapping[str, Any], data: ExperienceTransferLevel) -> list[dict[str, Any]]:
    """For each masked combination: its label, the true rules that cover it, and what the memory implies for it.

    The true rules are the table's fewest statements over every combination of the level
    (:meth:`RuleTable.oracle_rules`) whose conditions the combination meets. ``memory`` is
    ``right`` when some statement of the memory implies the table's label and none another,
    ``wrong`` when all that imply a label imply another, ``conflict`` when both, ``none`` when
    nothing in memory speaks of it; ``holds`` is whether the memory holds a rule that covers it
    with the right label. Structured rules are read exactly, free text by the parser.
    """
    combos = [data.rules.as_dict(c) for c in data.masked]
    if not combos:
        return []
    truth = [data.rules.label_of(c) for c in data.masked]
    oracle = data.rules.oracle_rules(sorted(data.visible + data.masked, key=data.rules.combinations().index))
    if "rules" in record:
        from memreason.programs.hdr.rule_check import implications, rules_from_record

        statements = [r.statement() for r in rules_from_record(record)]
        rows = implications(rules_from_record(record), combos)
    else:
        from memreason.programs import parse_implications

        statements = list(record.get("hypotheses", []))
        rows = parse_implications(statements, combos, data.rules.labels) if statements else []
    out = []
    for j, (combo, label) in enumerate(zip(combos, truth)):
        said = [(s, row[j]) for s, row in zip(statements, rows) if isinstance(row[j], str) and row[j] in data.rules.labels]
        right = [s for s, implied in said if implied == label]
        wrong = [s for s, implied in said if implied != label]
        verdict = "none" if not said else "conflict" if right and wrong else "right" if right else "wrong"
        out.append(
            {
                "combination": combo,
                "label": label,
                "true_rules": [r.text() for r in oracle if all(combo.get(k) == v for k, v in r.conditions.items())],
                "memory": verdict,
                "holds": bool(right),
                "memory_rules": {"right": right, "wrong": wrong},
            }
        )
    return out


def memory_f1(record: dict[str, Any], data: ExperienceTransferLevel, mode: str = "parse", lm: Any = None) -> dict[str, Any]:
    """The score of one memory record (``memory-run<r>.json``), with the hypotheses it judged and how it read them."""
    hypotheses = list(record.get("hypotheses", []))
    score = memory_score(record, data, mode, lm)
    masked = {"masked": masked_coverage(record, data)} if data.masked else {}
    return {"mode": score_mode(record, mode), **score.as_dict(), "hypotheses": hypotheses, **masked}


def statement_verdicts(items: Sequence[dict[str, Any]], mode: str = "parse", lm: Any = None) -> list[bool]:
    """Each labelled statement's ``correct`` in ``mode``, scored within its set as a run would score it.

    ``items`` are records of ``tests/data/hypotheses_labelled.json``: ``text``, ``level`` and
    ``set`` (the memory a statement came from; the statements of one set are scored together,
    which matters to the LM modes, who read them side by side). Tables other than the paper's
    Table 1 are refused.
    """
    from memreason.datasets.experience_transfer import make_level

    groups: dict[tuple[str, int], list[int]] = {}
    for i, item in enumerate(items):
        if item.get("table", "paper") != "paper":
            raise ValueError(f"statement {i} is about table {item['table']!r}; only the paper's Table 1 is scored")
        groups.setdefault((item["set"], item["level"]), []).append(i)
    out = [False] * len(items)
    for (_, level), members in groups.items():
        score = score_hypotheses([items[i]["text"] for i in members], make_level(level), mode=mode, lm=lm)
        for i, ok in zip(members, score.correct):
            out[i] = bool(ok)
    return out


def agreement(predicted: Sequence[bool], gold: Sequence[bool]) -> tuple[float, float]:
    """Accuracy and Cohen's kappa of two binary verdict lists of the same length."""
    if len(predicted) != len(gold) or not gold:
        raise ValueError(f"agreement needs two verdict lists of one non-zero length, got {len(predicted)} and {len(gold)}")
    n = len(gold)
    observed = sum(p == g for p, g in zip(predicted, gold)) / n
    p_pred, p_gold = sum(predicted) / n, sum(gold) / n
    chance = p_pred * p_gold + (1 - p_pred) * (1 - p_gold)
    return observed, (observed - chance) / (1 - chance) if chance < 1 else 1.0
