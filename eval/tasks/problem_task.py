"""A task of problems, each showing its own labelled episodes and asking its own queries (ACRE, List Functions,
and any rule-induction benchmark of your own).

    @register_task
    class Parity(ProblemTask):
        name = "parity"
        signature = SayParity                      # the reader's task: the query's inputs, one output "answer"
        description = NEUTRAL_TASK                 # how the consolidator speaks of the episodes

        def problems(self, seed=0, limit=None): ...   # seeded: the same seed, the same problems
        def score(self, query, answer): ...           # 1.0 right, 0.0 wrong

Every program registered for :data:`memreason.programs.registry.PROBLEMS` runs on it (those that need a true
rule, only where ``has_oracle``; ``hdr_checked`` only where ``checked_program`` is given). A problem's
memory is built from its episodes alone, then its queries are answered (:mod:`memreason.eval.inductive`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, ClassVar

from memreason.datasets.inductive import InductiveTask, Problem, Query
from memreason.lazy import Imported
from memreason.programs.registry import PROBLEMS

from ..report_parts import Section
from .report import checked
from .task import Task

if TYPE_CHECKING:
    import dspy

    from memreason.signatures import TaskDescription

__all__ = ["ProblemTask"]


class ProblemTask(Task):
    """A :class:`Task` of problems with episodes and queries. Give ``data`` (any
    :class:`memreason.datasets.inductive.InductiveTask`) or override :meth:`problems`, :meth:`answer_text` and
    :meth:`score`.

    ``signature``: the reader's signature (its input fields are filled from a query's ``input``:
    :meth:`query_inputs`; its output field ``answer`` is the answer); ``description``: the consolidator's words
    for the task; ``has_oracle``: its problems give their true rule (``Problem.oracle["hypotheses"]``);
    ``checked_program``: a factory of knobs to the task's hypothesis-checked program, or None.
    """

    kind: ClassVar[str] = PROBLEMS
    unit: ClassVar[str] = "queries"
    item: ClassVar[str] = "query"
    right: ClassVar[str] = "answer right"
    signature: type[dspy.Signature]
    description: TaskDescription = Imported("memreason.signatures:NEUTRAL_TASK")  # imported when first read
    has_oracle: bool = False
    checked_program: Callable[..., dspy.Module] | None = None

    def __init__(
        self,
        data: InductiveTask | None = None,
        *,
        name: str | None = None,
        signature: type[dspy.Signature] | None = None,
        description: TaskDescription | None = None,
        has_oracle: bool | None = None,
        checked_program: Callable[..., dspy.Module] | None = None,
        summary: str | None = None,
    ):
        self.data = data
        for key, value in dict(
            name=name or (data.name if data is not None else None),
            signature=signature,
            description=description,
            has_oracle=has_oracle,
            checked_program=checked_program,
            summary=summary,
        ).items():
            if value is not None:
                setattr(self, key, value)

    # -- the data --------------------------------------------------------------------------------

    @property
    def answer_type(self) -> Any:
        """What an answer is: a tuple of labels, or ``"int_list"`` (the data's, where it has one)."""
        return getattr(self.data, "answer_type", None)

    def problems(self, seed: int = 0, limit: int | None = None) -> list[Problem]:
        """The first ``limit`` problems (all: None) of the seeded problem set."""
        if self.data is None:
            raise NotImplementedError(f"{type(self).__name__} gives no problems: override problems()")
        return self.data.problems(seed=seed, limit=limit)

    def answer_text(self, answer: Any) -> str:
        """An answer as :meth:`score` reads it (default: its text, stripped)."""
        return self.data.answer_text(answer) if self.data is not None else str(answer).strip()

    def score(self, query: Query, answer: str) -> float:
        """The score of ``answer`` to ``query``: 1.0 right, 0.0 wrong (default: the same text as the reference)."""
        if self.data is not None:
            return self.data.score(query, answer)
        return float(answer.strip().lower() == query.answer.strip().lower())

    def query_inputs(self, query: Query) -> dict[str, Any]:
        """A query as the reader's inputs: ``query.input`` in the signature's one input field."""
        names = list(self.signature.input_fields)
        if len(names) != 1:
            raise NotImplementedError(f"{type(self).__name__}: the signature has {len(names)} inputs; override query_inputs()")
        value = query.input
        return {names[0]: list(value) if isinstance(value, tuple) else value}

    # -- running ---------------------------------------------------------------------------------

    def run(self, options: Any, *, spend: Any = None) -> Any:
        from ..inductive.evaluate import run_inductive_cell

        options = replace(options, task=self.name) if options.task != self.name else options
        return run_inductive_cell(options, benchmark=self, spend=spend)

    def report_sections(self) -> tuple[Section, ...]:
        return (checked,)
