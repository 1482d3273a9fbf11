"""The memory consolidator of ``hdr_grounded``: hypotheses written as rules and checked by code.

    Stage 1: F <- FactorExtractor(K)(M_episodic)                    # as HDR
             a_i <- attributes of episode i                         # given, or Perceive(o_i) once
    Stage 2: H_0 <- {}, rejected_0 <- {}, known_0 <- {}
             for j = 1 to N:
                 R   <- RG(F, H_{j-1}, rejected_{j-1}, groups({(a_i, l_i) | episode i unexplained by H_{j-1}}))
                 R   <- {r in R | r not in known_{j-1}}                           # repeats dropped, never checked
                 H_j <- H_{j-1} + {r in R | r matches an episode and every episode it matches carries r's label}
                 for r in R rejected: rejected_j += (r, its counterexamples)
                                      H_j += narrow(r) when it keeps some of r's support  # see rule_narrowing
                 known_j <- known_{j-1} + R + the narrowed rules
                 if unexplained(H_j) = {}: stop ("all_explained")
                 if R = {} and nothing was narrowed: stop ("nothing_new")
    M_semantic <- the statements of H_N

  with generalise (off by default):
                 RG asks for general rules first, then exceptions
                 for r in R verified:  keep(generalise(r))                        # see rule_generality
                 for r in R rejected:  keep(generalise(repair(r) or narrow(r)))   # when it keeps some support
    keep(r): H_j += r unless a kept rule with r's label covers it; kept rules r covers leave H_j
    undecidable(H_N) recorded                                                     # see rule_application

This is hypothesis refinement with feedback (Qiu et al. 2024): the paper's LM verifier HV is
replaced by an exact check of each rule against every labelled episode, and the episodes a
rejected rule gets wrong go back to the generator in the next round. Verified rules stay
verified (the episodes do not change); the generator sees only the episodes still unexplained
(all of them in round 1; grouped, :func:`group_episodes`, with ``group_unexplained``), and
code checks its rules against all. Each round makes progress or ends the loop:

- a proposal that repeats a rule already checked (the same conditions, as sets, and label),
  verified or refuted, is dropped before the check and counted (``repeats``);
- with ``generalise``, among the rules no episode contradicts, the most general is kept (a
  version-space choice with an Occam preference): a verified rule is widened to the form with
  the fewest conditions that still passes (:func:`.rule_generality.generalise`, recorded as
  ``generalised_from``), a kept rule that one with its label covers is dropped (``covered``);
  only a rule general enough reaches a combination no episode shows (Level 3);
- a refuted rule is narrowed in code by its counterexamples (:func:`.rule_narrowing.narrow`);
  with ``generalise``, it is first repaired by adding the one condition that removes its
  counterexamples (:func:`.rule_generality.repair`, ``"repair": "condition"``, else
  ``"repair": "values"``). The repaired rule is kept when it passes the check, recorded as
  ``narrowed_from`` the generator's rule (code only widens or specialises a proposed rule, it
  never invents one);
- the rounds stop early when every episode is explained (``all_explained``), or when a round
  proposes nothing new and repairs nothing (``nothing_new``); otherwise after N rounds
  (``max_rounds``).

With ``generalise``, the record's ``undecidable`` lists the combinations no episode shows on
which two rules no episode contradicts disagree (:func:`.rule_application.undecidable`): the
episodes cannot decide them, and the memory says so. ``generalise`` is off by default (not yet
measured on a model): the loop, its record and the generator's instructions are then those
of Stage 2 above. ``refine=False`` gives the earlier loop (no narrowing, no early stop but when
every episode is explained).

Rejections accumulate in the generator's prompt (the latest 12). The record keeps every rule
checked with its coverage and counterexamples (episode indices), and per round what was
proposed, repeated, verified, refuted, repaired and covered, the episodes left unexplained,
and why the rounds stopped.

The prompts speak of the task as ``task_description`` does (any task by default), which also
names the attributes a perception call asks of an episode given without ``attributes``; with
none to ask (the neutral default), every episode must carry its attributes. Both are checked,
and an empty list of episodes refused, before any call.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Annotated, Any, Literal, Sequence

import dspy
from pydantic import BaseModel, Field, create_model

from memreason.signatures import NEUTRAL_TASK, Episode, EpisodeGroup, GroundedRule, Rejection, TaskDescription

from ..shared.checks import some_episodes, whole_number
from ..shared.episodes import as_episodes
from ..shared.steps import StepModule, Steps, call
from .factor_extractor import FactorExtractor
from .rule_application import undecidable
from .rule_check import Check, LabelledEpisode, Rule, check, unexplained, vocabulary
from .rule_generality import entails, generalise, repair
from .rule_narrowing import narrow

__all__ = ["GroundedConsolidator", "STOP_REASONS", "group_episodes"]

MAX_COUNTEREXAMPLES = 4  # per rejected rule, in the generator's next prompt
MAX_RULES = 8  # per generator call, and at least 1 (JSON-schema bounds): the rest comes in later rounds
MAX_REJECTED = 12  # rejected rules the generator is shown, the latest first kept
GENERATOR_MAX_TOKENS = 2048  # a round's rules, written as JSON, outgrow a 1,024-token default cap
STOP_REASONS = {
    "all_explained": "every episode is explained",
    "nothing_new": "a round proposed nothing new and narrowed nothing",
    "max_rounds": "N rounds ran",
}


class GroundedConsolidator(StepModule):
    """Build semantic memory from labelled episodes: K factor passes, then N rounds of generate-check."""

    def __init__(
        self,
        K: int = 2,
        N: int = 3,
        perceive: Sequence[str] | None = None,
        *,
        task_description: TaskDescription = NEUTRAL_TASK,
        group_unexplained: bool = False,
        refine: bool = True,
        generalise: bool = False,
    ):
        """
        Args:
            K: the most factor-extraction passes, a whole number (0 skips them: no factors).
            N: the most generate-check rounds, a whole number (at least 1); it stops early once every episode is
                explained, or once a round proposes nothing new and narrows nothing.
            perceive: the attributes a perception call asks of an episode given without ``attributes``
                (default: the task description's ``perceived``; none: every episode must carry its attributes).
            task_description: how the prompts speak of the task's episodes and attributes (default: any task).
            group_unexplained: show the generator the unexplained episodes grouped (:func:`group_episodes`) instead
                of as a flat list of distinct records (the default: on the embedded model the grouped prompt wrote
                6 of Table 1's 8 Level-1 rules in three rounds where the flat one wrote all 8).
            refine: narrow a refuted rule by its counterexamples, and stop once a round brings nothing new (the
                default); False checks the generator's rules alone and runs the N rounds unless every episode is
                explained (the loop before 2026-11-26, for comparison; repeats are dropped either way).
            generalise: keep the most general form of each rule that passes the check (:func:`.rule_generality.generalise`),
                drop a kept rule a more general one with its label covers, repair a refuted rule by one added condition
                before narrowing it value by value (with ``refine``), record the unseen combinations the episodes leave
                open, and ask the generator for general rules first, then exceptions
                (:class:`~memreason.signatures.GeneralFirstRuleGeneration`). Off by default: not yet measured on a model.
        """
        super().__init__()
        self.K, self.N = whole_number("K", K, minimum=0), whole_number("N", N, minimum=1)
        self.perceived = tuple(task_description.perceived if perceive is None else perceive)
        self.extract_factors = FactorExtractor(self.K, task_description=task_description)
        self.perceive = dspy.Predict(task_description.perception_signature())
        self.group_unexplained = bool(group_unexplained)
        self.refine = bool(refine)
        self.generalise = bool(generalise)
        signature = task_description.grounded_generation_signature(general_first=self.generalise)
        if self.group_unexplained:
            signature = signature.with_updated_fields(
                "to_explain",
                type_=list[EpisodeGroup],
                desc="the labelled episodes no verified rule matches yet (all of them at first), grouped by label and by "
                "the attribute values they share",
            )
        self.generate = dspy.Predict(signature, max_tokens=GENERATOR_MAX_TOKENS)

    def steps(self, episodes) -> Steps[dspy.Prediction]:
        """``hypotheses``: the verified rules' statements; ``rules``: the rules; ``record``: how they were found."""
        episodes = as_episodes(episodes)
        some_episodes(episodes, "GroundedConsolidator")
        unlabelled = [i for i, e in enumerate(episodes) if not e.label]
        if unlabelled:
            raise ValueError(f"grounded refinement checks rules against labels; episode(s) {unlabelled[:5]} have none")
        undescribed = [i for i, e in enumerate(episodes) if e.attributes is None]
        if undescribed and not self.perceived:
            raise ValueError(
                f"grounded refinement checks rules against attributes; episode(s) {undescribed[:5]} have "
                "none and there are none to perceive: give perceive=[...] or a task description with "
                "perceived attributes"
            )
        factors = (yield call(self.extract_factors, episodes=episodes)).factors
        observations = []
        for i, episode in enumerate(episodes):
            attributes = yield from self._attributes(episode)
            observations.append(LabelledEpisode(i, attributes, episode.label))
        signature = _bounded(self.generate.signature, observations)
        memory = _Refinement(observations, narrowing=self.refine, generalising=self.generalise)
        rounds: list[dict[str, Any]] = []
        stopped = "max_rounds"
        for j in range(1, self.N + 1):
            out = yield call(
                self.generate,
                signature=signature,
                factors=list(factors),
                verified=[r.statement() for r in memory.verified],
                rejected=memory.rejected,
                to_explain=(group_episodes if self.group_unexplained else _distinct)(unexplained(memory.verified, observations)),
            )
            covered = len(memory.dropped)
            checks, repeated, narrowed = memory.take([Rule.of(_plain(r.conditions), r.label, r.sentence) for r in out.rules])
            left = unexplained(memory.verified, observations)
            if not left:
                stopped = "all_explained"
            elif not checks and not narrowed and self.refine:
                stopped = "nothing_new"
            refuted = sum(not c.accepted for c in checks)
            rounds.append(
                {
                    "round": j,
                    "proposed": [c.as_dict() for c in checks],
                    "repeated": repeated,
                    "narrowed": narrowed,
                    "counts": {
                        "proposed": len(out.rules),
                        "repeats": len(repeated),
                        "new": len(checks),
                        "verified": len(checks) - refuted,
                        "refuted": refuted,
                        "narrowed": len(narrowed),
                    },
                    "verified": [r.statement() for r in memory.verified],
                    **({"covered": memory.dropped[covered:]} if self.generalise else {}),
                    "unexplained": [o.index for o in left],
                    "stopped": stopped if stopped != "max_rounds" or j == self.N else None,
                }
            )
            if stopped != "max_rounds":
                break
        record = {
            "K": self.K,
            "N": self.N,
            **({} if self.refine else {"refine": False}),
            **({"generalise": True} if self.generalise else {}),
            "factors": factors,
            "attributes": [o.as_dict() for o in observations],
            "rules": memory.accepted,
            "rounds": rounds,
            "unexplained": [o.index for o in left],
            "explained_all": not left,
            "stopped": stopped,
            **({"undecidable": undecidable(memory.verified, observations)} if self.generalise else {}),
        }
        statements = [r.statement() for r in memory.verified]
        return dspy.Prediction(hypotheses=statements, rules=memory.verified, factors=factors, record=record)

    def _attributes(self, episode: Episode) -> Steps[dict[str, str]]:
        if episode.attributes is not None:
            return {str(k): str(v) for k, v in episode.attributes.items()}
        out = yield call(self.perceive, observation=episode.observation, attributes=list(self.perceived))
        values = {str(k).strip().lower(): str(v).strip().lower() for k, v in (out.attribute_values or {}).items()}
        return {name: values[name] for name in self.perceived if values.get(name)}


@dataclass
class _Refinement:
    """What the rounds have found so far, and how one round's proposals change it."""

    observations: Sequence[LabelledEpisode]
    narrowing: bool = True  # repair, else narrow, a refuted rule by its counterexamples
    generalising: bool = False  # keep the most general consistent form of each rule, and drop rules it covers
    verified: list[Rule] = field(default_factory=list)
    accepted: list[dict[str, Any]] = field(default_factory=list)  # each verified rule's check (the episodes never change)
    rejected: list[Rejection] = field(default_factory=list)  # the latest MAX_REJECTED, shown to the generator
    known: set[tuple] = field(default_factory=set)  # every rule checked (proposed, generalised or repaired)
    dropped: list[dict[str, Any]] = field(default_factory=list)  # verified rules a more general one made redundant

    def take(self, proposals: Sequence[Rule]) -> tuple[list[Check], list[str], list[dict[str, Any]]]:
        """Check the new proposals, repair the refuted ones; the checks, the repeats dropped and the repaired rules."""
        values = vocabulary(self.observations)
        checks: list[Check] = []
        repeated: list[str] = []
        narrowed: list[dict[str, Any]] = []
        for rule in proposals:
            if rule.key() in self.known:  # checked before: the check would say the same
                repeated.append(rule.statement())
                continue
            self.known.add(rule.key())
            result = check(rule, self.observations)
            checks.append(result)
            if result.accepted:
                self._keep(rule, result, {})
                continue
            bad = [self.observations[i].as_dict() for i in result.counterexamples[:MAX_COUNTEREXAMPLES]]
            self.rejected.append(Rejection(rule=rule.statement(), reason=result.reason, counterexamples=bad))
            if not self.narrowing:
                continue
            fixed, how = (repair(rule, self.observations, values), "condition") if self.generalising else (None, "values")
            if fixed is None:
                fixed, how = narrow(rule, self.observations, values), "values"
            if fixed is None or fixed.key() in self.known:
                continue
            self.known.add(fixed.key())
            kept = check(fixed, self.observations)
            if kept.accepted:  # always, by construction; the check has the last word all the same
                origin = {"narrowed_from": {"statement": rule.statement(), **rule.as_dict()}}
                if self.generalising:
                    origin["repair"] = how
                entry = self._keep(fixed, kept, origin)
                if entry is not None:
                    narrowed.append(entry)
        self.rejected = self.rejected[-MAX_REJECTED:]
        return checks, repeated, narrowed

    def _keep(self, rule: Rule, result: Check, origin: dict[str, Any]) -> dict[str, Any] | None:
        """Keep a rule that passed the check (its most general form when generalising); the entry kept, or ``None``
        when a rule already kept covers it."""
        if self.generalising:
            proposed = rule
            general = generalise(rule, self.observations)
            if general.key() != rule.key():
                origin = {**origin, "generalised_from": {"statement": rule.statement(), **rule.as_dict()}}
                self.known.add(general.key())
                rule, result = general, check(general, self.observations)
            covering = next((v for v in self.verified if v.label == rule.label and entails(rule, v)), None)
            if covering is not None:  # as general a rule is kept already
                self.dropped.append({"statement": proposed.statement(), "covered_by": covering.statement(), **origin})
                return None
            for i in reversed(range(len(self.verified))):  # rules the new one covers: it keeps what they say
                old = self.verified[i]
                if old.label == rule.label and entails(old, rule):
                    self.dropped.append({"statement": old.statement(), "covered_by": rule.statement()})
                    del self.verified[i], self.accepted[i]
        entry = {**result.as_dict(), **origin}
        self.verified.append(rule)
        self.accepted.append(entry)
        return entry


def group_episodes(observations: Sequence[LabelledEpisode]) -> list[EpisodeGroup]:
    """The episodes as the generator is given them: grouped by label, and within a label by the values they share.

    Each distinct combination of attributes and label counts once (episodes repeat combinations).
    Labels come in the order the episodes first show them. Within a label, as long as
    combinations remain: the attribute value most of them have (ties: the attribute the
    episodes name first, then the value seen first) makes a group of the combinations that
    have it; when no value is shared by two, each combination left is a group of its own. A
    group's ``shared`` is every attribute value all its combinations have.
    """
    distinct: dict[tuple, LabelledEpisode] = {}
    for o in observations:
        distinct.setdefault((o.label, tuple(sorted(o.attributes.items()))), o)
    values = vocabulary(observations)
    order = {(attr, value): (i, j) for i, (attr, vs) in enumerate(values.items()) for j, value in enumerate(vs)}
    groups: list[EpisodeGroup] = []
    for label in dict.fromkeys(o.label for o in distinct.values()):
        left = [o.attributes for o in distinct.values() if o.label == label]
        while left:
            counts: dict[tuple[str, str], int] = {}
            for attributes in left:
                for pair in attributes.items():
                    counts[pair] = counts.get(pair, 0) + 1
            pair, n = min(counts.items(), key=lambda item: (-item[1], order[item[0]]))
            members = [a for a in left if a.get(pair[0]) == pair[1]] if n > 1 else left
            for group in [members] if n > 1 else [[a] for a in left]:
                shared = {attr: value for attr, value in group[0].items() if all(a.get(attr) == value for a in group)}
                groups.append(EpisodeGroup(label=label, shared=shared, episodes=[dict(a) for a in group]))
            left = [a for a in left if a not in members]
    return groups


def _plain(conditions: Any) -> dict[str, list[str]]:
    data = conditions.model_dump() if isinstance(conditions, BaseModel) else dict(conditions or {})
    return {str(k): [str(v) for v in (values or [])] for k, values in data.items()}


def _bounded(signature: type[dspy.Signature], observations: Sequence[LabelledEpisode]) -> type[dspy.Signature]:
    """The generator's signature with conditions and labels narrowed to what the episodes show."""
    labels = tuple(dict.fromkeys(o.label for o in observations))
    rule = _rule_model(tuple((a, tuple(v)) for a, v in vocabulary(observations).items()), labels)
    return signature.with_updated_fields("rules", type_=Annotated[list[rule], Field(min_length=1, max_length=MAX_RULES)])


@lru_cache(maxsize=32)
def _rule_model(vocabulary: tuple[tuple[str, tuple[str, ...]], ...], labels: tuple[str, ...]) -> type[GroundedRule]:
    fields = {
        attr: (list[Literal[values]], Field(default_factory=list, description=f"the {attr} values allowed; empty: any {attr}"))
        for attr, values in vocabulary
    }
    conditions = _importable(create_model("Conditions", **fields), vocabulary, labels)
    described = GroundedRule.model_fields
    return _importable(
        create_model(
            "GroundedRule",
            __base__=GroundedRule,
            conditions=(conditions, Field(description=described["conditions"].description)),
            label=(Literal[labels], Field(description=described["label"].description)),
        ),
        vocabulary,
        labels,
    )


def _importable(model: type[BaseModel], *key) -> type[BaseModel]:
    """``model`` reachable by its qualified name in this module, so its instances pickle (DSPy's optimizers hash
    demos with pickle); its ``__name__``, which prompts and schemas show, stays as it was."""
    model.__qualname__ = f"_{model.__name__}_{hashlib.sha256(repr(key).encode()).hexdigest()[:16]}"
    model.__module__ = __name__
    globals()[model.__qualname__] = model
    return model


def _distinct(observations: Sequence[LabelledEpisode]) -> list[dict[str, str]]:
    """The observations as attribute-and-label records, each distinct record once (episodes repeat combinations)."""
    seen: dict[tuple, dict[str, str]] = {}
    for o in observations:
        record = o.as_dict()
        seen.setdefault(tuple(sorted(record.items())), record)
    return list(seen.values())
