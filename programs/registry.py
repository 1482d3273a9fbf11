"""The names users type (``python -m eval <name>``) and the programs they build."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import dspy

from memreason.signatures import (
    ACRE_TASK,
    EXPERIENCE_TRANSFER_TASK,
    LIST_FUNCTIONS_TASK,
    AnswerDetector,
    ApplyListFunction,
    TaskDescription,
)

from .arcmemo import ArcMemoOE, ArcMemoPS, Baseline, Cheatsheet
from .hdr import (
    HDR,
    CheckedBlickets,
    CheckedListFunction,
    DirectHypothesis,
    EpisodicMemory,
    EpisodicSemanticOracle,
    HDRGrounded,
    ReflexionAll,
    ReflexionIndividual,
    RuleLearner,
    SemanticOracle,
    TwoStage,
)
from .shared import READER_KNOBS

__all__ = ["INDUCTIVE_TASKS", "PROGRAMS", "ProgramSpec", "build_program"]

# The inductive tasks whose problems give their true rule (``Problem.oracle``): ACRE's experiments settle its blickets.
ORACLE_TASKS = ("acre",)

ET = {"task_description": EXPERIENCE_TRANSFER_TASK}  # the consolidators' prompts as the paper's task has always had them

# The inductive tasks (memreason.datasets.inductive): the reader's task and the consolidator's words for each.
INDUCTIVE_TASKS: dict[str, tuple[type[dspy.Signature], TaskDescription]] = {
    "acre": (AnswerDetector, ACRE_TASK),
    "list_functions": (ApplyListFunction, LIST_FUNCTIONS_TASK),
}


@dataclass(frozen=True)
class ProgramSpec:
    """A registered program: its name, its task, the factory of its knobs, a one-line summary.

    ``reader_knobs`` names the knobs of its memory reader (:data:`READER_KNOBS`: ``cot``, ``signature``,
    ``per_object``, ``retrieve_k``) when it has one (every Experience-Transfer program); ARC programs have none.
    ``needs_attributes``: it builds memory from the episodes' structured attributes and perceives none, so it
    runs in text modality only. ``inductive``: the inductive tasks it also runs (``--task acre``), each with the
    factory that builds it for that task (:meth:`build_for`).
    """

    name: str
    task: str  # "experience_transfer", "arc", or "inductive" (a program for the inductive tasks only)
    build: Callable[..., dspy.Module]
    summary: str
    needs_attributes: bool = False
    inductive: Mapping[str, Callable[..., dspy.Module]] = field(default_factory=dict)

    def build_for(self, task: str, **knobs: Any) -> dspy.Module:
        """The program built for ``task`` (``experience_transfer`` or an inductive task it runs) with ``knobs``."""
        if task == self.task and task != "inductive":
            return self.build(**knobs)
        if task not in self.inductive:
            raise KeyError(f"{self.name} does not run on {task}; it runs on {', '.join(self.tasks)}")
        return self.inductive[task](**knobs)

    @property
    def tasks(self) -> tuple[str, ...]:
        """The tasks it runs on (``--task``)."""
        return (*((self.task,) if self.task != "inductive" else ()), *self.inductive)

    @property
    def reader_knobs(self) -> tuple[str, ...]:
        return READER_KNOBS if self.task == "experience_transfer" else ()


def _spec(
    name: str,
    task: str,
    cls: type,
    summary: str,
    *,
    needs_attributes: bool = False,
    inductive: Mapping[str, Callable[..., dspy.Module]] | None = None,
    **fixed: Any,
) -> ProgramSpec:
    return ProgramSpec(name, task, lambda **knobs: cls(**{**fixed, **knobs}), summary, needs_attributes, dict(inductive or {}))


def _on_tasks(cls: type, *, described: bool = False, **fixed: Any) -> dict[str, Callable[..., dspy.Module]]:
    """``cls`` built for each inductive task: the task's reader signature (and, ``described``, its task description)."""

    def build(task: str) -> Callable[..., dspy.Module]:
        signature, description = INDUCTIVE_TASKS[task]
        words = {"task_description": description} if described else {}
        return lambda **knobs: cls(**{**fixed, "signature": signature, **words, **knobs})

    return {task: build(task) for task in INDUCTIVE_TASKS}


def _with_oracle(cls: type, **fixed: Any) -> dict[str, Callable[..., dspy.Module]]:
    """``cls`` built for the inductive tasks whose problems give their true rule (:data:`ORACLE_TASKS`)."""
    return {task: build for task, build in _on_tasks(cls, **fixed).items() if task in ORACLE_TASKS}


PROGRAMS: dict[str, ProgramSpec] = {
    spec.name: spec
    for spec in [
        _spec("episodic", "experience_transfer", EpisodicMemory, "all raw episodes in context", cot=False),
        _spec(
            "episodic_cot",
            "experience_transfer",
            EpisodicMemory,
            "all raw episodes, chain of thought (on an inductive task: the examples only, no memory built)",
            inductive=_on_tasks(EpisodicMemory, cot=True),
            cot=True,
        ),
        _spec("semantic_oracle", "experience_transfer", SemanticOracle, "oracle hypotheses only", cot=False),
        _spec(
            "semantic_oracle_cot",
            "experience_transfer",
            SemanticOracle,
            "oracle hypotheses, chain of thought (on ACRE: the true blickets)",
            inductive=_with_oracle(SemanticOracle, cot=True),
            cot=True,
        ),
        _spec(
            "episodic_semantic_oracle", "experience_transfer", EpisodicSemanticOracle, "episodes and oracle hypotheses", cot=False
        ),
        _spec(
            "episodic_semantic_oracle_cot",
            "experience_transfer",
            EpisodicSemanticOracle,
            "episodes and oracle hypotheses, chain of thought (on ACRE: the examples and the true blickets)",
            inductive=_with_oracle(EpisodicSemanticOracle, cot=True),
            cot=True,
        ),
        _spec(
            "hdr",
            "experience_transfer",
            HDR,
            "episodes and verified hypotheses (knobs: K, N, cot, resample)",
            inductive=_on_tasks(HDR, described=True),
            **ET,
        ),
        _spec(
            "hdr_checked",
            "inductive",
            CheckedBlickets,
            "inductive tasks only: hypotheses proposed by the LM and checked in code against every example "
            "(ACRE: blickets and a rule; List Functions: a Python f(xs) run in the sandbox), counterexamples fed "
            "back for N rounds, the kept one applied in code (knobs: N, samples); not the paper's",
            inductive={"acre": CheckedBlickets, "list_functions": CheckedListFunction},
        ),
        _spec(
            "hdr_grounded",
            "experience_transfer",
            HDRGrounded,
            "episodes and rules checked by code against every episode, counterexamples fed back (knobs: K, N, cot, refine); "
            "not the paper's",
            **ET,
        ),
        _spec(
            "hdr_grounded_unrefined",
            "experience_transfer",
            HDRGrounded,
            "hdr_grounded with refine=False: refuted rules never narrowed, no stop when a round brings nothing new (the "
            "earlier loop); a comparison row",
            refine=False,
            **ET,
        ),
        _spec(
            "rule_learner",
            "experience_transfer",
            RuleLearner,
            "episodes and the fewest general rules consistent with every episode, found by a greedy set cover "
            "with no LM (knob: cot); a reference row, not HDR; text modality only",
            needs_attributes=True,
        ),
        _spec(
            "reflexion_individual",
            "experience_transfer",
            ReflexionIndividual,
            "episodes and one reflection per episode (knob: cot)",
        ),
        _spec("reflexion_all", "experience_transfer", ReflexionAll, "episodes and one reflection on all episodes (knob: cot)"),
        _spec(
            "direct_hypothesis",
            "experience_transfer",
            DirectHypothesis,
            "episodes and unverified hypotheses, no factors (knob: cot)",
            **ET,
        ),
        _spec(
            "two_stage", "experience_transfer", TwoStage, "episodes, factors, then unverified hypotheses (knobs: K, cot)", **ET
        ),
        _spec("baseline", "arc", Baseline, "program synthesis without memory (knobs: attempts, retries, cot)"),
        _spec(
            "cheatsheet",
            "arc",
            Cheatsheet,
            "Dynamic Cheatsheet (cumulative), whole cheatsheet in context, frozen unless continual_every",
        ),
        _spec(
            "arcmemo_oe", "arc", ArcMemoOE, "open-ended concepts, caption + top-k selection (knobs: top_k, continual_every, ...)"
        ),
        _spec(
            "arcmemo_ps",
            "arc",
            ArcMemoPS,
            "program-synthesis concepts, reasoning-based selection (knobs: top_k, continual_every, ...)",
        ),
        _spec(
            "arcmemo_ps_noselect",
            "arc",
            ArcMemoPS,
            "program-synthesis concepts, all of memory in context (ablation)",
            select=False,
        ),
        _spec(
            "arcmemo_ps_oracle",
            "arc",
            ArcMemoPS,
            "program-synthesis concepts, those abstracted from tasks of the task's own concept (reference, no selection LM)",
            select="oracle",
        ),
        _spec(
            "arcmemo_ps_exec",
            "arc",
            ArcMemoPS,
            "program-synthesis concepts ranked by running their stored programs on the task's train pairs, "
            "no LM call to select (knobs: top_k, default 3, continual_every, ...); not the paper's",
            select="execute",
        ),
        _spec(
            "arcmemo_ps_exec_solution",
            "arc",
            ArcMemoPS,
            "program-synthesis concepts: every concept abstracted with the stored program that comes closest on the "
            "task's train pairs, no LM call to select (knobs: top_k = programs, default 1, continual_every, ...); not the paper's",
            select="execute",
            read_by="solution",
        ),
    ]
}


def build_program(name: str, *, task: str | None = None, **knobs: Any) -> dspy.Module:
    """Build the registered program ``name`` with its knobs (constructor arguments), for ``task`` when given
    (an inductive task such as ``"acre"``; default: the program's own task)."""
    if name not in PROGRAMS:
        raise KeyError(f"unknown program {name!r}; known: {', '.join(PROGRAMS)}")
    return PROGRAMS[name].build(**knobs) if task is None else PROGRAMS[name].build_for(task, **knobs)
