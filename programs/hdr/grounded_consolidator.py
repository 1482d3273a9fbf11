"""The memory consolidator of ``hdr_grounded``: hypotheses written as rules and checked by code.

    Stage 1: F <- FactorExtractor(K)(M_episodic)                    # as HDR
             a_i <- attributes of episode i                         # given, or Perceive(o_i) once
    Stage 2: H_0 <- {}, rejected_0 <- {}
             for j = 1 to N:
                 R   <- RG(F, H_{j-1}, rejected_{j-1}, {(a_i, l_i) | episode i unexplained by H_{j-1}})
                 H_j <- H_{j-1} + {r in R | r matches an episode and every episode it matches carries r's label}
                 rejected_j <- rejected_{j-1} + {(r, its counterexamples) | r in R rejected}
                 if unexplained(H_j) = {}: stop
    M_semantic <- the statements of H_N

This is hypothesis refinement with feedback (Qiu et al. 2024): the paper's LM verifier HV is
replaced by an exact check of each rule against every labelled episode, and the episodes a
rejected rule gets wrong go back to the generator in the next round. Verified rules stay
verified (the episodes do not change), so the memory only grows; the generator sees only the
episodes still unexplained (all of them in round 1), and code checks its rules against all.
Rejections accumulate in the generator's prompt (the latest 12); a proposal that repeats a
rule already verified or rejected is recorded as repeated and not checked again. The record keeps every rule proposed with
its coverage and counterexamples (episode indices), each round, and the episodes left
unexplained at the end.

The prompts speak of the task as ``task_description`` does (any task by default), which also
names the attributes a perception call asks of an episode given without ``attributes``; with
none to ask (the neutral default), every episode must carry its attributes. Both are checked,
and an empty list of episodes refused, before any call.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from typing import Annotated, Any, Literal, Sequence

import dspy
from pydantic import BaseModel, Field, create_model

from memreason.signatures import NEUTRAL_TASK, Episode, GroundedRule, Rejection, TaskDescription

from ..shared.checks import some_episodes, whole_number
from ..shared.episodes import as_episodes
from ..shared.steps import StepModule, Steps, call
from .factor_extractor import FactorExtractor
from .rule_check import Check, LabelledEpisode, Rule, check, unexplained

__all__ = ["GroundedConsolidator"]

MAX_COUNTEREXAMPLES = 4  # per rejected rule, in the generator's next prompt
MAX_RULES = 8  # per generator call, and at least 1 (JSON-schema bounds): the rest comes in later rounds
MAX_REJECTED = 12  # rejected rules the generator is shown, the latest first kept
GENERATOR_MAX_TOKENS = 2048  # a round's rules, written as JSON, outgrow a 1,024-token default cap


class GroundedConsolidator(StepModule):
    """Build semantic memory from labelled episodes: K factor passes, then N rounds of generate-check."""

    def __init__(
        self, K: int = 2, N: int = 3, perceive: Sequence[str] | None = None, *, task_description: TaskDescription = NEUTRAL_TASK
    ):
        """
        Args:
            K: the most factor-extraction passes, a whole number (0 skips them: no factors).
            N: the most generate-check rounds, a whole number (at least 1); it stops early once every episode is explained.
            perceive: the attributes a perception call asks of an episode given without ``attributes``
                (default: the task description's ``perceived``; none: every episode must carry its attributes).
            task_description: how the prompts speak of the task's episodes and attributes (default: any task).
        """
        super().__init__()
        self.K, self.N = whole_number("K", K, minimum=0), whole_number("N", N, minimum=1)
        self.perceived = tuple(task_description.perceived if perceive is None else perceive)
        self.extract_factors = FactorExtractor(self.K, task_description=task_description)
        self.perceive = dspy.Predict(task_description.perception_signature())
        self.generate = dspy.Predict(task_description.grounded_generation_signature(), max_tokens=GENERATOR_MAX_TOKENS)

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
        verified: list[Rule] = []
        accepted: list[Check] = []  # the check of each verified rule (the episodes never change, so it stands)
        rejected: list[Rejection] = []  # every rejection so far (the latest MAX_REJECTED), shown to the generator
        known: set[tuple] = set()  # the structures proposed so far, verified or rejected
        rounds: list[dict[str, Any]] = []
        for j in range(1, self.N + 1):
            open_ = unexplained(verified, observations)
            out = yield call(
                self.generate,
                signature=signature,
                factors=list(factors),
                verified=[r.statement() for r in verified],
                rejected=rejected,
                to_explain=_distinct(open_),
            )
            checks, repeated = [], []
            for proposed in out.rules:
                rule = Rule.of(_plain(proposed.conditions), proposed.label, proposed.sentence)
                if rule.key() in known:  # verified or rejected before: the check would say the same
                    repeated.append(rule.statement())
                    continue
                known.add(rule.key())
                result = check(rule, observations)
                checks.append(result)
                if result.accepted:
                    verified.append(rule)
                    accepted.append(result)
                else:
                    bad = [observations[i].as_dict() for i in result.counterexamples[:MAX_COUNTEREXAMPLES]]
                    rejected.append(Rejection(rule=rule.statement(), reason=result.reason, counterexamples=bad))
            rejected = rejected[-MAX_REJECTED:]
            left = unexplained(verified, observations)
            rounds.append(
                {
                    "round": j,
                    "proposed": [c.as_dict() for c in checks],
                    "repeated": repeated,
                    "verified": [r.statement() for r in verified],
                    "unexplained": [o.index for o in left],
                }
            )
            if not left:
                break
        record = {
            "K": self.K,
            "N": self.N,
            "factors": factors,
            "attributes": [o.as_dict() for o in observations],
            "rules": [c.as_dict() for c in accepted],
            "rounds": rounds,
            "unexplained": [o.index for o in left],
            "explained_all": not left,
        }
        return dspy.Prediction(hypotheses=[r.statement() for r in verified], rules=verified, factors=factors, record=record)

    def _attributes(self, episode: Episode) -> Steps[dict[str, str]]:
        if episode.attributes is not None:
            return {str(k): str(v) for k, v in episode.attributes.items()}
        out = yield call(self.perceive, observation=episode.observation, attributes=list(self.perceived))
        values = {str(k).strip().lower(): str(v).strip().lower() for k, v in (out.attribute_values or {}).items()}
        return {name: values[name] for name in self.perceived if values.get(name)}


def _distinct(observations: Sequence[LabelledEpisode]) -> list[dict[str, str]]:
    """The observations as attribute-and-label records, each distinct record once (episodes repeat combinations)."""
    seen: dict[tuple, dict[str, str]] = {}
    for o in observations:
        record = o.as_dict()
        seen.setdefault(tuple(sorted(record.items())), record)
    return list(seen.values())


def _plain(conditions: Any) -> dict[str, list[str]]:
    data = conditions.model_dump() if isinstance(conditions, BaseModel) else dict(conditions or {})
    return {str(k): [str(v) for v in (values or [])] for k, values in data.items()}


def _bounded(signature: type[dspy.Signature], observations: Sequence[LabelledEpisode]) -> type[dspy.Signature]:
    """The generator's signature with conditions and labels narrowed to what the episodes show."""
    vocabulary: dict[str, list[str]] = {}
    for o in observations:
        for attr, value in o.attributes.items():
            values = vocabulary.setdefault(attr, [])
            if value not in values:
                values.append(value)
    labels = tuple(dict.fromkeys(o.label for o in observations))
    rule = _rule_model(tuple((a, tuple(v)) for a, v in vocabulary.items()), labels)
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
