"""ArcMemo programs: concept memory read by selection, written by abstraction (paper sections 3.2-3.5).

    arcmemo_oe            s_i = OE selection (caption, then top-k lessons)    write: OE abstraction
    arcmemo_ps            s_i = PS reasoning-based selection                  write: PS abstraction
    arcmemo_ps_noselect   s_i = the whole PS memory, in full (the ablation)   write: PS abstraction
    arcmemo_ps_oracle     s_i = the concepts abstracted from tasks of the task's own concept, no LM
                                (a reference row: what selection could give at best)
    arcmemo_ps_exec       s_i = the concepts whose stored programs come closest to the train outputs, no LM
                                (execution-ranked, not the paper's: :mod:`.execution_ranking`)
    arcmemo_ps_exec_solution  s_i = every concept abstracted with the stored program that comes closest, no LM
                                (the same ranking, read by solution rather than by concept)

A memory read whose answer cannot be parsed (a small model looping until ``max_tokens``)
does not forfeit the puzzle: the solver goes on without concepts and the read records why.
A read records the concepts selected and, for each, the tasks it was abstracted from as the
memory holds them then (``selected_sources``: what :mod:`memreason.eval.arc.memory_measures` scores),
and what a read blind to the puzzle would have scored at the same k (``blind``: by chance, and by
naming the concepts with the most sources).
A write keeps the verified program it abstracts with each concept it adds or revises (what an
execution-ranked read runs; never shown to an LM).
The memory is fixed unless ``continual_every`` is set (Algorithm 1, see
:mod:`memreason.programs.arcmemo.arc_program`). Knobs: the solver's (attempts, retries, cot,
temperature), ``top_k``, ``continual_every``, ``write_gate``, ``retry_mode``, ``reselect``
and ``reselect_k`` (selecting programs only), ``demos``, ``modality``, ``freeze_memory_writers``
(the abstractor kept out of optimizers' reach; default True).

The selector and the abstractor know nothing of ARC: ``read`` and ``write`` state the task
to them (:mod:`memreason.programs.arcmemo.arc_problem`) and give the abstractor its ARC demos.
"""

from __future__ import annotations

from math import comb
from typing import Any, Sequence

from dspy.utils.exceptions import AdapterParseError, LMError

from memreason.datasets.arc import ArcDataError, ArcTask, concept_of, parts_of
from memreason.lm.faults import LMFailure, context_exceeded

from ..registry import register_program
from ..shared.steps import Steps, call
from .abstraction_demos import use_arc_demos
from .arc_problem import arc_problem, arc_problem_image
from .arc_program import ArcProgram
from .arc_solver import Attempt, shared_sandbox
from .concept_abstractor import ConceptAbstractor
from .concept_memory import ConceptMemory
from .concept_selector import ConceptSelector
from .execution_ranking import rank_concepts

__all__ = ["EXECUTE_TOP_K", "RANKED_SHOWN", "ArcMemo", "ArcMemoOE", "ArcMemoPS"]

EXECUTE_TOP_K = 3  # the concepts an execution-ranked read keeps when top_k is not given
EXECUTE_SOLUTIONS = 1  # the programs whose concepts a read by solution keeps when top_k is not given
RANKED_SHOWN = 2  # its record also scores this many concepts ranked after the selected ones
NO_TOKENS = {"prompt": 0, "completion": 0, "calls": 0}


class ArcMemo(ArcProgram):
    """Read selected (or all) concepts before solving; abstract verified solutions into concepts."""

    space = {"top_k": ("int", 1, 10), "attempts": ("int", 1, 3), "retries": ("int", 0, 2)}  # ... and the concepts it selects

    memory_writer_names = ("abstractor",)

    def __init__(
        self,
        *,
        format: str = "ps",
        select: bool | str = True,
        top_k: int | None = None,
        revise: bool = True,
        reasoning_selection: bool = True,
        modality: str = "text",
        demos: bool = True,
        read_by: str = "concept",
        **solver_knobs: Any,
    ):
        """
        Args:
            format: concept format, ``"oe"`` or ``"ps"``.
            select: read selected concepts (``False``: the whole memory, the ablation; ``"oracle"``: the
                concepts whose sources are tasks of the task's own concept, ``concept_of(task.id)``, with no
                LM call, a reference for what selection could give; never a label in a prompt;
                ``"execute"``: the concepts whose stored programs, run on the task's train inputs, come
                closest to its train outputs, with no LM call; see :mod:`.execution_ranking`).
            top_k: the most concepts a read keeps (OE default 5, PS no cap; ``"execute"``: :data:`EXECUTE_TOP_K`);
                read by solution, the most programs whose concepts it keeps (:data:`EXECUTE_SOLUTIONS`).
            revise: PS writes may revise a concept by title (the paper's); False keeps each solution's
                concepts apart (see :class:`ConceptAbstractor`).
            reasoning_selection: PS selection thinks step by step first.
            modality: ``"text"`` (grids as digits) or ``"image"`` (OE captions read the task drawn as an image;
                PS selection reads text either way).
            demos: the abstractor's steps carry one hand-written ARC demonstration each.
            read_by: with ``select="execute"``, ``"concept"`` keeps the ``top_k`` best-scoring concepts;
                ``"solution"`` keeps every concept kept with the ``top_k`` best-scoring programs: all that was
                abstracted from the closest solutions, whole rather than in fragments.
            **solver_knobs: :class:`ArcProgram`'s (attempts, retries, cot, temperature, seed,
                continual_every, write_gate, retry_mode, reselect, reselect_k, sandbox, and
                freeze_memory_writers, which keeps the abstractor out of optimizers' reach; default True).
        """
        if modality not in ("text", "image"):
            raise ValueError(f"modality must be 'text' or 'image', got {modality!r}")
        if select not in (True, False, "oracle", "execute"):
            raise ValueError(f"select must be True, False, 'oracle' or 'execute', got {select!r}")
        if read_by not in ("concept", "solution"):
            raise ValueError(f"read_by must be 'concept' or 'solution', got {read_by!r}")
        if read_by == "solution" and select != "execute":
            raise ValueError(f"read_by='solution' needs select='execute', got select={select!r}")
        self.memory_format, self.read_by = format, read_by
        self.selects = select in (True, "execute")  # an execution-ranked read takes reselect, keeping its first concepts
        if select == "execute" and top_k is None:
            top_k = EXECUTE_SOLUTIONS if read_by == "solution" else EXECUTE_TOP_K
        super().__init__(**solver_knobs)
        self.select_concepts, self.modality, self.top_k = select, modality, top_k
        self.selector = (
            ConceptSelector(format, top_k=top_k, reasoning=reasoning_selection, reselect=bool(solver_knobs.get("reselect")))
            if select is True
            else None
        )
        self.abstractor = ConceptAbstractor(format, revise=revise)
        if demos:
            use_arc_demos(self.abstractor)
        self.memory = ConceptMemory(format)

    memory_chars: int | None = None  # set by show_memory_within: the concepts a read gives the solver, too

    def show_memory_within(self, chars: int | None) -> None:
        self.memory_chars = chars
        for module in (self.selector, self.abstractor):
            if module is not None:
                module.memory_chars = chars

    def _rendered(self, names: list[str] | None, record: dict[str, Any], ranked: bool = False) -> str:
        """The concepts ``names`` (all: ``None``) in full for the solver, within :attr:`memory_chars`; the record says
        how they were shortened, if they were (``concepts_shown``)."""
        text, how = self.memory.render_within(names, self.memory_chars, ranked=ranked)
        if how != "whole":
            record["concepts_shown"] = how
        return text

    def read_steps(self, task: ArcTask) -> Steps[tuple[str, dict[str, Any]]]:
        concepts, record = yield from self._select_steps(task)
        if isinstance(record.get("selected"), list):  # whether a hit was possible: memory held the task's own concept
            label = concept_of(task.id)
            entries = list(self.memory.entries)
            own = [any(concept_of(s) == label for s in entry.sources) for entry in entries]
            record["label_held"] = any(own)
            record["blind"] = blind_reference(own, [len(entry.sources) for entry in entries], len(record["selected"]))
        return concepts, record

    def _select_steps(self, task: ArcTask) -> Steps[tuple[str, dict[str, Any]]]:
        if not self.select_concepts:
            record = {"selected": "all", "concepts": len(self.memory)}
            return self._rendered(None, record), record
        if self.select_concepts == "oracle":
            return self.oracle_read(task)
        if self.select_concepts == "execute":
            return self.execute_read(task)
        image = self.modality == "image" and self.memory_format == "oe"  # PS selection reads the grids as text
        problem = arc_problem_image(task) if image else arc_problem(task)
        try:
            out = yield call(self.selector, problem=problem, memory=self.memory)
        except (AdapterParseError, RuntimeError, LMError) as exc:
            if not (_unreadable_answer(exc) or context_exceeded(exc)):  # a large puzzle and the memory did not fit
                raise
            return "", {"selected": [], "selected_sources": {}, "failed": str(exc).splitlines()[0][:300]}
        return out.concepts, _with_sources(self.memory, out.record)

    def oracle_read(self, task: ArcTask) -> tuple[str, dict[str, Any]]:
        """The concepts abstracted from a task of ``task``'s own concept (at most ``top_k``), in memory order.

        A 1D-ARC family that no concept came from (the recombination split) gets the concepts of the
        families that cover its building blocks (:func:`covering_families`), the pieces a recombination
        would put together; the record says which basis the read had (``"own"`` or ``"parts"``)."""
        own = concept_of(task.id)
        entries = list(zip(self.memory.names(), self.memory.entries))
        names = [n for n, e in entries if any(concept_of(s) == own for s in e.sources)]
        basis = "own"
        if not names:
            families = covering_families(own, {concept_of(s) for _, e in entries for s in e.sources})
            names = [n for n, e in entries if any(concept_of(s) in families for s in e.sources)]
            basis = "parts" if names else None
        names = names[: self.top_k] if self.top_k else names
        self.memory.use(names)
        record = {"selected": names, "oracle": basis or True, "tokens": dict(NO_TOKENS)}
        return self._rendered(names, record), _with_sources(self.memory, record)

    def execute_read(self, task: ArcTask) -> tuple[str, dict[str, Any]]:
        """The ``top_k`` concepts whose stored programs score best on ``task``'s train pairs (above 0), best first.

        Every program a concept keeps runs in the solver's sandbox on the train inputs (never the test
        pairs): :func:`rank_concepts`. The record scores the selected concepts and the
        :data:`RANKED_SHOWN` ranked next (``scores``, rounded) and counts the programs run. Read by solution
        (``read_by="solution"``), it keeps every concept kept with the ``top_k`` best programs, shown in memory
        order, and records the best programs' scores (``solution_scores``)."""
        ranking = rank_concepts(self.memory, task.train, self.solver.sandbox or shared_sandbox())
        by_solution = self.read_by == "solution"
        names = ranking.selected_by_solution(self.top_k) if by_solution else ranking.selected(self.top_k)
        self.memory.use(names)
        scores = {name: round(score, 4) for name, score in ranking.scores[: len(names) + RANKED_SHOWN]}
        record = {"selected": names, "scores": scores, "programs_run": ranking.runs, "tokens": dict(NO_TOKENS)}
        if by_solution:  # the concepts of one program together, in memory order (as the oracle read shows them)
            record["solution_scores"] = [round(score, 4) for score, _ in ranking.solutions[: self.top_k + RANKED_SHOWN]]
            return self._rendered(names, record), _with_sources(self.memory, record)
        return self._rendered(names, record, ranked=True), _with_sources(self.memory, record)

    def reread(self, task: ArcTask, read: dict[str, Any], attempt: Attempt) -> tuple[str, dict[str, Any]]:
        """A retry's re-selection: the concepts an LM chooses in view of the last program and its feedback, less
        the first read's. An execution-ranked read keeps its first concepts (the train pairs it ranks on are
        the same for every retry) and adds none."""
        if self.select_concepts == "execute":
            return "", {"selected": [], "selected_sources": {}, "kept_first": True, "tokens": dict(NO_TOKENS)}
        first = read.get("selected")
        out = self.selector.reselect(
            arc_problem(task),
            self.memory,
            previous_program=attempt.final.program,
            feedback=attempt.final.feedback,
            top_k=self.reselect_k,
            exclude=first if isinstance(first, list) else (),
        )
        return out.concepts, _with_sources(self.memory, out.record)

    def draft(self, task: ArcTask, solution: str) -> dict[str, Any]:
        """What of ``solution``'s write reads no memory (:meth:`ConceptAbstractor.draft`), for :meth:`write` later."""
        return self.abstractor.draft(problem=arc_problem(task, test_inputs=False), solution=solution)

    def write(
        self, task: ArcTask, solution: str, program: str | None = None, draft: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Abstract ``solution`` into concepts; each concept added or revised keeps ``program`` (the verified code).
        ``draft``: its :meth:`draft`, made earlier."""
        out = self.abstractor(
            problem=arc_problem(task, test_inputs=False),
            solution=solution,
            memory=self.memory,
            source=task.id,
            program=program,
            draft=draft,
        )
        return {"task": task.id, **{k: v for k, v in out.record.items() if k != "source"}}


def covering_families(family: str, held: set[str]) -> list[str]:
    """Families of ``held`` that between them hold ``family``'s building blocks (:func:`parts_of`), chosen greedily:
    each next one covers the most blocks not yet covered, ties going to the one with the fewest blocks the task lacks,
    then to the first by name. [] for a family that is not 1D-ARC's or shares no block with any held family."""
    try:
        wanted = set(parts_of(family))
        parts = {h: set(parts_of(h)) for h in held}
    except ArcDataError:
        return []
    chosen: list[str] = []
    left = set(wanted)
    while left:
        ranked = sorted((-len(p & left), len(p - wanted), h) for h, p in parts.items() if h not in chosen)
        if not ranked or ranked[0][0] == 0:
            break
        best = ranked[0][2]
        chosen.append(best)
        left -= parts[best]
    return chosen


def blind_reference(own: Sequence[bool], sources: Sequence[int], k: int) -> dict[str, Any]:
    """What a read blind to the puzzle would score at the same k, given for each concept in memory order whether it
    was abstracted from a task of the task's own concept (``own``) and how many sources it has: ``chance``, the
    probability that k concepts drawn at random include an own one, and ``most_sourced``, whether the k concepts
    with the most sources (memory order on ties) do."""
    n, k = len(own), min(k, len(own))
    chance = 1 - comb(n - sum(own), k) / comb(n, k) if n else 0.0
    most = sorted(range(n), key=lambda i: -sources[i])[:k]
    return {"chance": chance, "most_sourced": any(own[i] for i in most)}


def _with_sources(memory: ConceptMemory, record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with ``selected_sources``: for each selected concept, the tasks it was abstracted from, as the
    memory holds them at read time (what :mod:`memreason.eval.arc.memory_measures` scores a read by)."""
    selected = record.get("selected")
    if not isinstance(selected, list):
        return record
    entries = dict(zip(memory.names(), memory.entries))
    return {**record, "selected_sources": {name: list(entries[name].sources) for name in selected if name in entries}}


def _unreadable_answer(error: Exception) -> bool:
    """DSPy's parse error, or an :class:`LMFailure` of kind unparseable or empty (the LM guard gave up)."""
    return isinstance(error, AdapterParseError) or (isinstance(error, LMFailure) and error.kind in ("unparseable", "empty"))


@register_program(
    name="arcmemo_oe",
    memory_format="oe",
    selects=True,
    summary="open-ended concepts, caption + top-k selection (knobs: top_k, continual_every, ...)",
)
class ArcMemoOE(ArcMemo):
    def __init__(self, **knobs: Any):
        """:class:`ArcMemo` with open-ended concepts; ``knobs`` as there, except ``format``."""
        super().__init__(format="oe", **knobs)


@register_program(
    name="arcmemo_ps_exec_solution",
    knobs={"select": "execute", "read_by": "solution"},
    memory_format="ps",
    summary=(
        "program-synthesis concepts: every concept abstracted with the stored program that comes closest on "
        "the task's train pairs, no LM call to select (knobs: top_k = programs, default 1, continual_every, "
        "...); not the paper's"
    ),
)
@register_program(
    name="arcmemo_ps_exec",
    knobs={"select": "execute"},
    memory_format="ps",
    summary=(
        "program-synthesis concepts ranked by running their stored programs on the task's train pairs, no LM "
        "call to select (knobs: top_k, default 3, continual_every, ...); not the paper's"
    ),
)
@register_program(
    name="arcmemo_ps_oracle",
    knobs={"select": "oracle"},
    memory_format="ps",
    space={"attempts": ("int", 1, 3), "retries": ("int", 0, 2)},
    summary="program-synthesis concepts, those abstracted from tasks of the task's own concept (reference, no selection LM)",
)
@register_program(
    name="arcmemo_ps_noselect",
    knobs={"select": False},
    memory_format="ps",
    space={"attempts": ("int", 1, 3), "retries": ("int", 0, 2)},
    summary="program-synthesis concepts, all of memory in context (ablation)",
)
@register_program(
    name="arcmemo_ps",
    memory_format="ps",
    selects=True,
    summary="program-synthesis concepts, reasoning-based selection (knobs: top_k, continual_every, ...)",
)
class ArcMemoPS(ArcMemo):
    def __init__(self, **knobs: Any):
        """:class:`ArcMemo` with program-synthesis concepts; ``knobs`` as there, except ``format``."""
        super().__init__(format="ps", **knobs)
