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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import dspy

from memreason.datasets.arc import ArcTask

from .arc_solver import ArcSolver, Attempt, Runner, error_text
from .memory_parameter import fill_missing_memory

WRITE_GATES = ("train", "test")


@dataclass(frozen=True)
class Feedback:
    """GETFEEDBACK: whether the prediction holds a verified solution, and which program it is."""

    verified: bool
    solution: str | None = None
    reason: str = ""


class ArcProgram(dspy.Module):
    """Solve ARC tasks by program synthesis, reading (and optionally writing) a memory."""

    memory_format: str | None = None  # None: the program reads no memory

    def __init__(self, *, attempts: int = 2, retries: int = 0, cot: bool = False, temperature: float = 0.7,
                 seed: int = 0, continual_every: int | None = None, write_gate: str = "train",
                 sandbox: Runner | None = None):
        """
        Args:
            attempts: independent solving attempts per task (oracle@k draws from them).
            retries: retries per attempt, each with the execution feedback of the last program.
            cot: the solver thinks step by step before writing the program.
            temperature: sampling temperature of the attempts.
            seed: offsets the attempts' seeds and rollout ids (e.g. one per repeated run).
            continual_every: write verified solutions to memory after every k tasks (None: memory frozen).
            write_gate: which solutions count as verified, ``"train"`` or ``"test"`` (see the module docs).
            sandbox: where programs run (a :class:`memreason.sandbox.Sandbox`; default: one started on first use).
        """
        super().__init__()
        if continual_every is not None and continual_every < 1:
            raise ValueError(f"continual_every must be >= 1, got {continual_every}")
        if write_gate not in WRITE_GATES:
            raise ValueError(f"write_gate must be 'train' or 'test', got {write_gate!r}")
        if continual_every and self.memory_format is None:
            raise ValueError(f"{type(self).__name__} keeps no memory to update")
        self.continual_every, self.write_gate = continual_every, write_gate
        self.solver = ArcSolver(attempts=attempts, retries=retries, with_concepts=self.memory_format is not None,
                                cot=cot, temperature=temperature, seed=seed, sandbox=sandbox)
        self.memory = None

    # -- memory ----------------------------------------------------------------------

    def use_memory(self, memory) -> None:
        """Attach the memory this program reads and writes (a store of ``memory_format``)."""
        if self.memory_format is None:
            raise ValueError(f"{type(self).__name__} reads no memory")
        if memory.format != self.memory_format:
            raise ValueError(f"{type(self).__name__} needs a {self.memory_format} memory, got a {memory.format} one")
        self.memory = memory

    def read(self, task: ArcTask) -> tuple[str, dict[str, Any]]:
        """MEMREAD: the memory text for the solver, and a record of the read."""
        return "", {}

    def write(self, task: ArcTask, solution: str) -> dict[str, Any]:
        """MEMWRITE from one verified solution; returns a record (with ``tokens``)."""
        return {}

    def load_state(self, state: dict[str, Any], *, allow_unsafe_lm_state: bool = False) -> "ArcProgram":
        """DSPy's; a state saved before programs saved their memory leaves the memory as it is."""
        super().load_state(fill_missing_memory(self, state), allow_unsafe_lm_state=allow_unsafe_lm_state)
        return self

    def set_memory_lm(self, lm: dspy.LM | None) -> None:
        """Run memory reads and writes on ``lm`` (the solver keeps the context's task LM)."""
        for name, predictor in self.named_predictors():
            if not name.startswith("solver."):
                predictor.lm = lm

    # -- one iteration ------------------------------------------------------------------

    def forward(self, task: ArcTask) -> dspy.Prediction:
        """``attempts`` (list of :class:`Attempt`), ``read`` (what memory gave and how)."""
        concepts, read = self.read(task)
        if self.memory_format is not None and not concepts.strip():
            concepts = "(none)"
        return dspy.Prediction(attempts=self.solver(task=task, concepts=concepts).attempts, read=read)

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

    def solve_all(
        self,
        tasks: Sequence[ArcTask],
        *,
        solve_batch: Callable[[Sequence[ArcTask]], list[Any]] | None = None,
        on_write: Callable[[int, list[dict[str, Any]]], None] | None = None,
    ) -> list[Any]:
        """Algorithm 1 over ``tasks``; returns one prediction per task, in order.

        ``solve_batch`` maps ``self`` over a batch (a harness may parallelise; its results need an
        ``attempts`` attribute); ``on_write(i, records)`` is called after the write that follows problem i."""
        solve_batch = solve_batch or (lambda batch: [self(task=t) for t in batch])
        k = self.continual_every
        size = k or max(1, len(tasks))
        results: list[Any] = []
        for start in range(0, len(tasks), size):
            batch = list(tasks[start : start + size])
            predictions = solve_batch(batch)
            results.extend(predictions)
            if k and len(batch) == k:  # i mod k = 0
                records = []
                for task, prediction in zip(batch, predictions):
                    f = self.feedback(task, _attempts(prediction))
                    if f.verified:
                        try:
                            records.append({"task": task.id, "reason": f.reason, **self.write(task, f.solution)})
                        except Exception as exc:  # a failed write loses one solution, not the run
                            records.append({"task": task.id, "reason": f.reason, "error": error_text(exc)})
                if on_write:
                    on_write(start + len(batch), records)
        return results


def _attempts(prediction: Any) -> list[Attempt] | None:
    """The attempts of a prediction (None when the task failed before any)."""
    return getattr(prediction, "attempts", None)


class Baseline(ArcProgram):
    """No memory: the solver alone (the paper's o4-mini baseline)."""
