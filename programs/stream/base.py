"""What every memory program over a stream of problems is: a read, a solver, a write, a memory saved as JSON.

    program = build_program("fewshot", k=3)                      # any program registered for stream tasks
    read = program.read(problem, item_id="7")                    # memory for this problem (never an entry from item 7)
    out = program.solve(problem, read.text, check=check)         # the answer (StreamSolver)
    program.learn(Lesson("7", problem, out.solution, verdict=True, learned_from="check"))   # the write
    state = program.memory_state(); program.load_memory(state)   # snapshots

``forward(problem, item_id, check)`` is read then solve, for use in a pipeline of your own. The harness
(:mod:`memreason.eval.stream`) calls the three steps apart: the read and write under the memory LM, the
solve under the task LM, each write only after the items it learns from were scored.

A :class:`Lesson` holds the attempt a write reads (:meth:`Lesson.attempt`: the solver's reasoning, where the
harness kept it, then its solution) and says what the write may learn from (``learned_from``): ``"reference"``
(a seed problem's reference answer, or a test item's score once it was scored), ``"check"`` (a check that
needs no reference), ``"self"`` (the model's own judgement) or ``"none"`` (nothing: ``verdict`` is None).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Callable, ClassVar, Mapping

import dspy

from ..registry import STREAM
from ..shared.memory_parameter import MemoryParameter, fill_missing_memory
from .choices import LEARN_FROM, LESSONS  # re-exported: the protocol's choices
from .entries import EntryMemory
from .solver import StreamSolver

__all__ = ["LEARN_FROM", "LESSONS", "Lesson", "Read", "StreamProgram"]


@dataclass(frozen=True)
class Lesson:
    """One write's material: the item, its problem, the solution (answer or program), what is known of it, and
    the reasoning the solver gave before that solution ("" where none was kept: a seed problem's reference answer,
    a run whose writes read answers alone)."""

    item_id: str
    problem: str
    solution: str
    verdict: bool | None = None  # right, wrong, or not judged
    why: str = ""  # the check's words, where there are some
    learned_from: str = "none"
    reasoning: str = ""

    def attempt(self) -> str:
        """The attempt as the LM writers read it: the solution alone, or the reasoning then the solution."""
        if not self.reasoning.strip():
            return self.solution
        return f"Reasoning: {self.reasoning.strip()}\nAnswer: {self.solution.strip()}"

    def outcome(self) -> str:
        """What is known of the solution, in words."""
        if self.verdict is None:
            return "not judged"
        how = {"reference": "by the reference answer", "check": "by a check", "self": "by the solver's own judgement"}
        said = f" ({self.why})" if self.why else ""
        return f"{'right' if self.verdict else 'wrong'} {how.get(self.learned_from, '')}".strip() + said

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Read:
    """What memory gave a problem: the text the solver reads, and a record (what was shown, withheld, asked)."""

    text: str = ""
    record: dict[str, Any] = field(default_factory=dict)

    @property
    def withheld(self) -> int:
        return int(self.record.get("withheld", 0))


class StreamMemory(MemoryParameter):
    """A stream program's memory as a DSPy parameter: saved and loaded (``save``/``load``, also inside a pipeline of
    your own), copied and pickled with whatever program holds it; its state is the program's :meth:`memory_state`."""

    def __init__(self, owner: "StreamProgram"):
        self.owner = owner

    def dump_state(self, json_mode: bool = True) -> Any:
        return self.owner.memory_state()

    def load_state(self, state: Any) -> "StreamMemory":
        if state is not None:
            self.owner.load_memory(state)
        return self


class StreamProgram(dspy.Module):
    """Base of the stream programs: no memory (subclasses override :meth:`read`, :meth:`learn` and the state)."""

    #: The kind of task it runs on (``register_program`` reads it): a stream of problems.
    kind: ClassVar[str] = STREAM
    #: The memory it keeps, for listings (None: none).
    memory_format: ClassVar[str | None] = None
    #: Its writes read :meth:`Lesson.attempt` (the reasoning, where kept), not the solution alone.
    reads_attempts: ClassVar[bool] = False
    #: The solver it answers with (a subclass of :class:`StreamSolver` where a program asks with its own signatures).
    solver_class: ClassVar[type[StreamSolver]] = StreamSolver

    def __init__(self, *, answer: str = "text", retries: int = 2, cot: bool = True, memory_first: bool = True):
        """
        Args:
            answer: ``"text"``, ``"program"`` or ``"function"`` (:class:`StreamSolver`).
            retries: the most retries after feedback that needs no reference.
            cot: reason step by step before answering.
            memory_first: memory before the problem in the prompt (a server then reuses its prefix).
        """
        super().__init__()
        self.solver = self.solver_class(answer, retries=retries, cot=cot, memory_first=memory_first)
        self.stream_memory = StreamMemory(self)  # the memory, saved, loaded and copied as a DSPy parameter

    def load_state(self, state: dict[str, Any], **kwargs: Any) -> "StreamProgram":
        """DSPy's ``load_state``; a state saved before stream programs saved their memory keeps the memory as it is."""
        super().load_state(fill_missing_memory(self, state), **kwargs)
        return self

    def read(self, problem: str, item_id: str = "", check: Any = None) -> Read:
        """Memory for ``problem`` (item ``item_id``): never an entry written from that item. ``check``: the task's
        reference-free check of an answer to this problem, for reads that run stored programs on it (None: none)."""
        return Read()

    def solve(self, problem: str, memory: str, check: Callable[[str], Any] | None = None) -> dspy.Prediction:
        return self.solver(memory=memory, problem=problem, check=check)

    def learn(self, lesson: Lesson) -> dict[str, Any]:
        """Write what ``lesson`` teaches; a record of the write."""
        return {}

    def forward(self, problem: str, item_id: str = "", check: Callable[[str], Any] | None = None) -> dspy.Prediction:
        read = self.read(problem, item_id, check)
        out = self.solve(problem, read.text, check)
        return dspy.Prediction(**{k: out[k] for k in out.keys()}, read=read.record, memory=read.text)

    async def aforward(self, problem: str, item_id: str = "", check: Callable[[str], Any] | None = None) -> dspy.Prediction:
        """:meth:`forward` off the event loop (in a worker thread that carries the caller's DSPy context)."""
        import asyncio

        return await asyncio.to_thread(self.__call__, problem=problem, item_id=item_id, check=check)

    def memory_state(self) -> dict[str, Any]:
        return {}

    def load_memory(self, state: dict[str, Any]) -> None:
        """Put back a :meth:`memory_state`."""

    def memory_size(self) -> int:
        return 0

    # -- what verified writes need (memreason.eval.stream.verify) ---------------------------------------

    def entry_memory(self) -> EntryMemory | None:
        """The entries whose measured records verified writes keep and reads rank by (None: a memory without such
        entries, e.g. one sheet; its writes are still verified whole)."""
        return None

    def fit_budget(self, tokens: int) -> list[str]:
        """Make memory fit in ``tokens`` (estimated as characters / 4), the least useful first; what went. A memory
        that cannot be cut raises NotImplementedError."""
        memory = self.entry_memory()
        if memory is None:
            raise NotImplementedError(f"{type(self).__name__} keeps no memory a token budget can cut")
        return memory.fit(tokens)

    def note_use(self, read: dict[str, Any], *, right: bool, expected: float | Mapping[str, float]) -> list[str]:
        """Count one scored item on the entries its read showed (``read["ids"]``); the ids retired for harm.
        ``expected``: how often items are right without the entry, one figure for all or one per entry id."""
        memory = self.entry_memory()
        if memory is None:
            return []
        retired = []
        for entry_id in read.get("ids") or []:
            entry = memory.find(entry_id)
            if entry is None or entry.record is None or entry.retired:
                continue
            base = expected.get(entry_id, 0.0) if isinstance(expected, Mapping) else expected
            entry.record = entry.record.used(right=right, expected=base)
            if entry.retired:
                retired.append(entry_id)
        return retired
