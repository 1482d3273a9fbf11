"""The shape of every ARC program, and ArcMemo's Algorithm 1 (inference with continually updating memory).

    for i <- 1 to n:
        s_i <- MEMREAD(M, x_i)                  # program.read(task)
        y_i <- LLM_GENERATE(x_i, s_i)           # program.solver(task, s_i): attempts and retries
        if i mod k = 0:
            f_i <- GETFEEDBACK(y_i, y_i*)       # program.feedback(task, y_i): is a solution verified?
            MEMWRITE(M, x_i, y_i, f_i)          # program.write(verified solutions)

``forward(task)`` is one iteration's read and generate. :meth:`ArcProgram.solve_all`
is the loop. Problems are solved in batches of k (all at once when memory is frozen),
so a harness may solve a batch in parallel; after each full batch of k, the verified
solutions of that batch are written (a trailing partial batch is not: no later
problem would read it). Which solutions count as verified is the ``write_gate``:
``"train"`` (default) -- a program reproduces every train output, no test label is
read; ``"test"`` -- it also matches every test output, as the paper's released code requires.

Retries (``retries`` R, each with the execution feedback of the last program) run in one
of two ways, the ``retry_mode``:

``"inline"``   each attempt retries up to R times before the next problem starts.
``"passes"``   as the paper's release runs them: pass 0 is the loop above with no retries;
               pass p = 1..R runs the loop again over the problems that have an attempt
               not yet done (its last program fails a train pair), giving each such
               attempt one retry (``retry_pass``). With continual updates, memory is written
               after every k problems of every pass, and at the end of each pass but the
               last the verified solutions of its trailing partial batch too (a later pass
               reads them). A problem's solution is written once, when first verified.

An inline retry sees the concepts its problem's read gave; a retry pass reads memory again
(MEMREAD, once per problem and pass, as Algorithm 1 does on each pass). With ``reselect``
(programs that select concepts), a retry instead keeps the first read's concepts and adds
those a re-selection chooses with the previous program and its feedback in view, over the
memory as it is then (at most ``reselect_k``); each retry step records the read it got.
So, with passes and continual updates, a concept written in pass p from one problem's
solution can reach another problem's retry in pass p + 1 -- the mechanism behind the
paper's continual-learning gain at later retry depths (its Table 3).

``program(task=...)`` and ``await program.acall(task=...)`` run the same steps
(:class:`memreason.programs.shared.steps.StepModule`): MEMREAD's calls through ``acall``, then
the solver, which is synchronous, in a worker thread. The memory writers (the abstractor, the
cheatsheet's curator) run between problems, never on an optimizer's examples, so with
``freeze_memory_writers`` (the default) they are kept out of optimizers' reach
(:mod:`memreason.programs.shared.memory_writers`); ``save``, ``load`` and ``set_memory_lm`` still
cover them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import dspy

from memreason.datasets.arc import ArcTask

from ..registry import GRIDS, register_program
from ..shared.memory_writers import MemoryWriters
from ..shared.steps import StepModule, Steps, as_steps, call, run
from .arc_solver import ArcSolver, Attempt, Reselect, Runner, error_text

__all__ = ["ArcProgram", "Baseline", "Feedback", "PassesDone", "RESELECTED", "RETRY_MODES", "WRITE_GATES", "unfinished"]

WRITE_GATES = ("train", "test")
RETRY_MODES = ("inline", "passes")
RESELECTED = "Concepts re-selected after your last program:"


@dataclass(frozen=True)
class Feedback:
    """GETFEEDBACK: whether the prediction holds a verified solution, and which program it is."""

    verified: bool
    solution: str | None = None
    reason: str = ""


class ArcProgram(MemoryWriters, StepModule):
    """Solve ARC tasks by program synthesis, reading (and optionally writing) a memory."""

    kind = GRIDS  # the kind of task its subclasses register for (register_program reads it)
    space = {
        "attempts": ("int", 1, 3),
        "retries": ("int", 0, 2),
    }  # an ARC solver's tries at a task: its knobs' Optuna search space

    memory_format: str | None = None  # None: the program reads no memory
    selects = False  # it reads a selection of its memory, so a retry can re-select (``reread``)

    def __init__(
        self,
        *,
        attempts: int = 2,
        retries: int = 0,
        cot: bool = False,
        temperature: float | None = None,
        seed: int = 0,
        continual_every: int | None = None,
        write_gate: str = "train",
        retry_mode: str = "inline",
        reselect: bool = False,
        reselect_k: int | None = None,
        sandbox: Runner | None = None,
        freeze_memory_writers: bool = True,
        one_prefill: bool = False,
        answer: str = "code",
    ):
        """
        Args:
            attempts: independent solving attempts per task (oracle@k draws from them).
            retries: retries per attempt, each with the execution feedback of the last program.
            cot: the solver thinks step by step before writing the program.
            temperature: sampling temperature of the attempts, sent in place of the LM's own (the log says so
                once where they differ); None (the default): the LM's own temperature.
            seed: offsets the attempts' seeds and rollout ids (e.g. one per repeated run).
            continual_every: write verified solutions to memory after every k tasks (None: memory frozen).
            write_gate: which solutions count as verified, ``"train"`` or ``"test"`` (see the module docs).
            retry_mode: ``"inline"`` or ``"passes"`` (see the module docs).
            reselect: a retry re-selects concepts with the previous program and its feedback in view.
            reselect_k: the most concepts a re-selection adds (default: the program's ``top_k``).
            sandbox: where programs run (a :class:`memreason.sandbox.Sandbox`; default: one started on first use). A
                copy or pickle of the program holds a copy of it: the same settings, workers of its own.
            one_prefill: draw a task's first programs from one call with n = ``attempts`` (one prompt
                evaluation per task on the embedded model; see :class:`ArcSolver`).
            answer: how the solver's programs come back: ``"code"`` (a fenced code block) or ``"fields"``
                (the session adapter's format; see :class:`ArcSolver`).
            freeze_memory_writers: keep the predictors that write memory (the abstractor, the curator) out of
                optimizers' reach: they run between problems, never on an optimizer's examples; ``save``,
                ``load`` and ``set_memory_lm`` still cover them.
        """
        super().__init__()
        self.freeze_memory_writers = freeze_memory_writers  # before the writers are built: they are frozen as assigned
        if continual_every is not None and continual_every < 1:
            raise ValueError(f"continual_every must be >= 1, got {continual_every}")
        if write_gate not in WRITE_GATES:
            raise ValueError(f"write_gate must be 'train' or 'test', got {write_gate!r}")
        if continual_every and self.memory_format is None:
            raise ValueError(f"{type(self).__name__} keeps no memory to update")
        if retry_mode not in RETRY_MODES:
            raise ValueError(f"retry_mode must be 'inline' or 'passes', got {retry_mode!r}")
        if reselect and not self.selects:
            raise ValueError(f"{type(self).__name__} does not select concepts, so it cannot re-select them")
        if reselect_k is not None and reselect_k < 1:
            raise ValueError(f"reselect_k must be >= 1, got {reselect_k}")
        self.continual_every, self.write_gate = continual_every, write_gate
        self.retry_mode, self.reselect, self.reselect_k = retry_mode, reselect, reselect_k
        self.pass_index = 0  # the pass solve_all is in
        self.solver = ArcSolver(
            attempts=attempts,
            retries=retries,
            with_concepts=self.memory_format is not None,
            cot=cot,
            temperature=temperature,
            seed=seed,
            sandbox=sandbox,
            one_prefill=one_prefill,
            answer=answer,
        )
        self.memory = None

    # -- memory ----------------------------------------------------------------------

    def use_memory(self, memory) -> None:
        """Attach the memory this program reads and writes (a store of ``memory_format``)."""
        if self.memory_format is None:
            raise ValueError(f"{type(self).__name__} reads no memory")
        if memory is None or not hasattr(memory, "format"):
            raise TypeError(
                f"{type(self).__name__} needs a {self.memory_format} memory, got "
                f"{'None' if memory is None else type(memory).__name__}"
            )
        if memory.format != self.memory_format:
            raise ValueError(f"{type(self).__name__} needs a {self.memory_format} memory, got a {memory.format} one")
        self.memory = memory

    def read(self, task: ArcTask) -> tuple[str, dict[str, Any]]:
        """MEMREAD: the memory text for the solver, and a record of the read (:meth:`read_steps`, run)."""
        return run(as_steps(self.read_steps(task)))

    def read_steps(self, task: ArcTask) -> Steps[tuple[str, dict[str, Any]]] | tuple[str, dict[str, Any]]:
        """MEMREAD as a step function (what a program overrides): a read that calls LMs yields its calls, so
        ``acall`` makes them with ``acall``; one that makes none returns ``(text, record)``. None by default."""
        return "", {}

    def draft(self, task: ArcTask, solution: str) -> Any:
        """What of MEMWRITE reads no memory, made ahead so that writes in order can draft side by side; passed
        back to :meth:`write`. ``None``: nothing to draft (the write does everything)."""
        return None

    def write(self, task: ArcTask, solution: str, program: str | None = None, draft: Any = None) -> dict[str, Any]:
        """MEMWRITE from one solution; returns a record (with ``tokens``). ``program``: the verified program
        behind ``solution`` (what a concept memory keeps with the concepts it gives; ``None``: not verified).
        ``draft``: what :meth:`draft` made of ``solution``, if it was asked."""
        return {}

    def reread(self, task: ArcTask, read: dict[str, Any], attempt: Attempt) -> tuple[str, dict[str, Any]]:
        """MEMREAD again for a retry, in view of ``attempt``'s last program and its feedback: the concepts
        not already in the first ``read``, and a record (programs that select concepts define it)."""
        raise NotImplementedError(f"{type(self).__name__} does not re-select concepts")

    def show_memory_within(self, chars: int | None) -> None:
        """Memory reads and writes show at most ``chars`` characters of the memory (``None``: all of it), so a
        growing memory fits a small model's context; programs with no memory to show ignore it."""

    def set_memory_lm(self, lm: dspy.LM | None) -> None:
        """Run memory reads and writes on ``lm`` (the solver keeps the context's task LM); frozen writers too."""
        for name, predictor in [*self.named_predictors(), *self.memory_writer_predictors()]:
            if not name.startswith("solver."):
                predictor.lm = lm

    # -- one iteration ------------------------------------------------------------------

    def steps(self, task: ArcTask) -> Steps[dspy.Prediction]:
        """``attempts`` (list of :class:`Attempt`), ``read`` (what memory gave and how), ``concepts`` (the text
        the solver read). In ``passes`` mode the attempts are not retried here (see :meth:`retry_pass`)."""
        concepts, read = yield from as_steps(self.read_steps(task))
        if self.memory_format is not None and not concepts.strip():
            concepts = "(none)"
        inline = self.retry_mode == "inline"
        out = yield call(
            self.solver,
            task=task,
            concepts=concepts,
            retries=None if inline else 0,
            reselect=self._reselect(task, concepts, read) if inline else None,
        )
        return dspy.Prediction(attempts=out.attempts, read=read, concepts=concepts)

    def retry_pass(self, task: ArcTask, prediction: Any) -> dspy.Prediction:
        """One retry pass over one problem (``passes`` mode): one more step for each of ``prediction``'s
        attempts not yet done (``prediction`` as :meth:`forward` returned it, or a harness's record of it).

        The retries read memory again, as Algorithm 1 does on every pass: MEMREAD once for the
        problem, or, with ``reselect``, a re-selection per attempt in view of its last program."""
        concepts, read = getattr(prediction, "concepts", "") or "", getattr(prediction, "read", None) or {}
        reselect = self._reselect(task, concepts, read)
        if reselect is None:
            fresh, fresh_read = self.read(task)
            if self.memory_format is not None and not fresh.strip():
                fresh = "(none)"
            reselect = lambda attempt: (fresh, fresh_read)  # noqa: E731
        out = self.solver.retry_pass(task, prediction.attempts, concepts, reselect=reselect)
        return dspy.Prediction(attempts=out.attempts, read=read, concepts=concepts)

    def _reselect(self, task: ArcTask, concepts: str, read: dict[str, Any]) -> Reselect | None:
        """What gives a retry its concepts when ``reselect`` is on: the first read's, and the re-selected ones."""
        if not self.reselect:
            return None

        def reselect(attempt: Attempt) -> tuple[str, dict[str, Any]]:
            try:
                extra, record = self.reread(task, read, attempt)
            except Exception as exc:  # a failed re-selection leaves the retry its first concepts
                return concepts, {"reselected": True, "failed": error_text(exc)}
            text = f"{concepts}\n\n{RESELECTED}\n{extra}" if extra.strip() else concepts
            return text, {"reselected": True, **record}

        return reselect

    def feedback(self, task: ArcTask, attempts: Sequence[Attempt] | None) -> Feedback:
        """GETFEEDBACK by the write gate: the first attempt whose final program qualifies.

        ``train``: it passes every train pair. ``test``: it passes every train pair and gets
        every test output right (as the paper's released code requires)."""
        gate = "train" if self.write_gate == "train" else "train and test"
        for attempt in attempts or []:
            step = attempt.final
            ok = step.passed_train
            if self.write_gate == "test":
                ok = ok and task.labelled and step.test_outputs == [p.output for p in task.test]
            if ok:
                return Feedback(True, step.program, f"attempt {attempt.index} passes the {gate} pairs")
        return Feedback(False, None, f"no attempt passes the {gate} pairs")

    # -- Algorithm 1 -------------------------------------------------------------------

    @property
    def passes(self) -> int:
        """Retry passes after pass 0 (``retries`` in ``passes`` mode; none inline)."""
        return self.solver.retries if self.retry_mode == "passes" else 0

    def solve_all(
        self,
        tasks: Sequence[ArcTask],
        *,
        solve_batch: Callable[[Sequence[ArcTask]], list[Any]] | None = None,
        on_write: Callable[[int, list[dict[str, Any]]], None] | None = None,
        retry_batch: Callable[[int, Sequence[tuple[ArcTask, Any]]], list[Any]] | None = None,
        on_pass: Callable[[int, list[Any]], None] | None = None,
        resume: "PassesDone | None" = None,
    ) -> list[Any]:
        """Algorithm 1 over ``tasks``, then the retry passes (``passes`` mode); one prediction per task, in order.

        ``solve_batch`` maps ``self`` over a batch (a harness may parallelise; its results need an
        ``attempts`` attribute); ``retry_batch(p, [(task, prediction), ...])`` maps :meth:`retry_pass` over
        a batch of pass p; ``on_write(i, records)`` is called after the write that follows the i-th
        problem of a pass (``self.pass_index`` tells which pass); ``on_pass(p, predictions)`` after
        pass p (with its trailing write). ``resume`` continues where a harness stood: after its
        finished passes, or, in pass 0, after the problems it has predictions for (a batch boundary)."""
        solve_batch = solve_batch or (lambda batch: [self(task=t) for t in batch])
        retry_batch = retry_batch or (lambda p, batch: [self.retry_pass(t, prediction) for t, prediction in batch])
        resume = resume or PassesDone()
        written = set(resume.written)
        results = list(resume.predictions)
        for p in range(resume.passes, self.passes + 1):
            self.pass_index = p
            before = len(results) if p == 0 else 0  # problems of pass 0 a harness finished before
            todo = (
                list(range(before, len(tasks)))
                if p == 0
                else [i for i, prediction in enumerate(results) if unfinished(prediction)]
            )
            k = self.continual_every
            size = k or max(1, len(todo))
            for start in range(0, len(todo), size):
                batch = todo[start : start + size]
                if p == 0:
                    predictions = solve_batch([tasks[i] for i in batch])
                    results.extend(predictions)
                else:
                    predictions = retry_batch(p, [(tasks[i], results[i]) for i in batch])
                    for i, prediction in zip(batch, predictions):
                        results[i] = prediction
                trailing = start + size >= len(todo) and p < self.passes  # a later pass reads this write
                if k and (len(batch) == k or trailing):  # i mod k = 0
                    records = self._write_verified([(tasks[i], results[i]) for i in batch], written)
                    if on_write:
                        on_write(before + start + len(batch), records)
            if on_pass:
                on_pass(p, results)
        return results

    def _write_verified(self, batch: Sequence[tuple[ArcTask, Any]], written: set[str]) -> list[dict[str, Any]]:
        """MEMWRITE from the verified solutions of ``batch`` not written before; their records."""
        records = []
        for task, prediction in batch:
            if task.id in written:
                continue
            f = self.feedback(task, _attempts(prediction))
            if f.verified:
                written.add(task.id)
                try:
                    records.append({"task": task.id, "reason": f.reason, **self.write(task, f.solution, program=f.solution)})
                except Exception as exc:  # a failed write loses one solution, not the run
                    records.append({"task": task.id, "reason": f.reason, "error": error_text(exc)})
        return records


@dataclass
class PassesDone:
    """Where a harness stands when it continues :meth:`ArcProgram.solve_all` at a pass boundary: the
    passes finished (``passes`` = the next pass), the predictions after them, the tasks written."""

    passes: int = 0
    predictions: list[Any] = field(default_factory=list)
    written: set[str] = field(default_factory=set)


def unfinished(prediction: Any) -> bool:
    """A problem a retry pass visits: some attempt is not done (a task that failed before any attempt is not)."""
    return any(not a.done for a in _attempts(prediction) or [])


def _attempts(prediction: Any) -> list[Attempt] | None:
    """The attempts of a prediction (None when the task failed before any)."""
    return getattr(prediction, "attempts", None)


@register_program
class Baseline(ArcProgram):
    """No memory: the solver alone (the paper's o4-mini baseline)."""

    name = "baseline"
    summary = "program synthesis without memory (knobs: attempts, retries, cot)"
