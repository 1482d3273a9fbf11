"""The ARC program-synthesis solver: n independent attempts, each with up to R retries on execution feedback.

    for a = 1 .. n:                                         # independent attempts
        program = Solve(concepts, puzzle)
        for r = 1 .. R while program fails an example:      # retries
            feedback = run(program, train inputs) vs train outputs
            program  = Retry(concepts', puzzle, program, feedback)

Every program runs in the sandbox on the train inputs and the test inputs in one
call; test outputs never reach it (nor the prompts). An attempt stops retrying once
its program reproduces every train output and runs on every test input. Each step
(first program or retry) is recorded with its program, outputs, failures, the
feedback it produced and its tokens. Attempts are sampled at the LM's own temperature, or at
``temperature`` where the program is given one (sent with each attempt in place of the LM's, as the log says
once), with a distinct ``rollout_id`` and ``seed`` each (so DSPy's cache and a seeded local model
give distinct samples); ``seed`` offsets them, e.g. one per repeated run. With
``parallel`` set, the attempts run at once (in threads that inherit DSPy's context), so
a server that batches requests decodes them together; the record is the same.

Retries run inline (``forward``: each attempt retries before the next task) or one step
at a time (``retry_pass``: one more step for every unfinished attempt, the way a retry pass
over a dataset runs them, see :mod:`memreason.programs.arcmemo.arc_program`). ``concepts'`` is the
first step's concepts, or what a ``reselect`` callable gives for the step before.
Programs run in the sandbox's worker processes and attempts are parallelised by threads, so
the solver is synchronous: ``await solver.acall(...)`` runs ``forward`` in a worker thread
that inherits DSPy's context (the event loop goes on meanwhile).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Protocol, Sequence

import dspy

from memreason.datasets.arc import ArcTask, Grid, grid_text, puzzle_text
from memreason.lm.code_answer import CodeAdapter, code_block
from memreason.lm.faults import LMFailure, ResilientAdapter
from memreason.signatures import RetryArcPuzzle, SolveArcPuzzle

from ..shared.shared_sandbox import shared_sandbox  # re-exported
from ..shared.usage import inside, usage

log = logging.getLogger(__name__)

__all__ = [
    "ArcSolver",
    "Attempt",
    "Check",
    "Reselect",
    "Runner",
    "Step",
    "clean_program",
    "error_text",
    "feedback",
    "shared_sandbox",
]


class Runner(Protocol):
    """What the solver needs from a sandbox: ``memreason.sandbox.Sandbox`` has it."""

    def run(self, source: str, grids: Sequence[Grid]) -> list[Any]: ...


@dataclass
class Check:
    """One program on one input grid."""

    output: Grid | None
    failure: str | None = None  # a sandbox Failure name
    detail: str = ""
    correct: bool | None = None  # train pairs only: output == expected


@dataclass
class Step:
    """One program of an attempt: the first (retry 0) or a retry, and how it ran."""

    retry: int
    program: str
    train: list[Check] = field(default_factory=list)
    test: list[Check] = field(default_factory=list)
    feedback: str = ""  # what the next retry would be told
    error: str | None = None  # the LM call failed: no program
    tokens: dict[str, int] = field(default_factory=dict)
    read: dict[str, Any] | None = None  # a retry's re-selection of concepts, when there was one

    @property
    def passed_train(self) -> bool:
        return bool(self.train) and all(c.correct for c in self.train)

    @property
    def ran_on_test(self) -> bool:
        return bool(self.test) and all(c.output is not None for c in self.test)

    @property
    def done(self) -> bool:
        return self.passed_train and self.ran_on_test

    @property
    def test_outputs(self) -> list[Grid | None]:
        return [c.output for c in self.test]

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "passed_train": self.passed_train}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Step":
        checks = lambda items: [Check(**c) for c in items or []]  # noqa: E731
        return cls(
            data["retry"],
            data["program"],
            checks(data.get("train")),
            checks(data.get("test")),
            data.get("feedback", ""),
            data.get("error"),
            dict(data.get("tokens") or {}),
            data.get("read"),
        )


@dataclass
class Attempt:
    index: int
    steps: list[Step] = field(default_factory=list)

    @property
    def final(self) -> Step:
        return self.steps[-1]

    def after(self, retries: int) -> Step:
        """The step this attempt would have ended on had it stopped after ``retries`` retries."""
        return self.steps[min(retries, len(self.steps) - 1)]

    @property
    def done(self) -> bool:
        """Its last program passes every train pair and runs on every test input: no more retries."""
        return bool(self.steps) and self.final.done

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "steps": [s.to_json() for s in self.steps]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Attempt":
        """An attempt as a run's ``examples.jsonl`` recorded it (a resumed run writes memory from it)."""
        return cls(data["index"], [Step.from_json(s) for s in data["steps"]])


# a retry's concepts: given the attempt so far, (concepts text, record of the re-selection)
Reselect = Callable[["Attempt"], tuple[str, dict[str, Any]]]


class ArcSolver(dspy.Module):
    """Write ``transform(grid)`` programs for an ARC task: ``attempts`` attempts, ``retries`` retries each."""

    steps_by_predictor = True  # token accounting names the step: arc_solver.solve or arc_solver.retry

    def __init__(
        self,
        *,
        attempts: int = 2,
        retries: int = 0,
        with_concepts: bool = True,
        cot: bool = False,
        temperature: float | None = None,
        seed: int = 0,
        sandbox: Runner | None = None,
        shown_examples: int = 3,
        parallel: bool = False,
        one_prefill: bool = False,
        answer: str = "code",
    ):
        """
        Args:
            attempts: independent attempts per task.
            retries: retries per attempt, each given the execution feedback of the last program.
            with_concepts: the prompts carry a ``concepts`` field (memory); False for memoryless programs.
            cot: think step by step before writing the program.
            temperature: sampling temperature of the attempts, sent with each in place of the LM's own (the log
                says so once where they differ); None (the default): the LM's own temperature.
            seed: offsets each attempt's seed and rollout id.
            sandbox: where programs run (default: a shared sandbox started on first use); a copy or pickle of
                the solver holds a copy of it (the same settings, workers of its own: see ``Sandbox``).
            shown_examples: how many wrong train examples a retry's feedback shows.
            parallel: run a task's attempts at once, in threads that inherit DSPy's context.
            one_prefill: draw the first programs of a task's attempts from one call with ``n`` =
                ``attempts`` (they share one prompt): the embedded model's server evaluates that
                prompt once and decodes the attempts together; other LMs get ``n`` as they take it.
            answer: ``"code"``: the program comes back in a fenced code block
                (:class:`~memreason.lm.code_answer.CodeAdapter`), as code models write it; ``"fields"``: in
                the session adapter's format (a JSON string under the local grammar).
        """
        super().__init__()
        self.parallel = parallel
        self.one_prefill = one_prefill
        if attempts < 1 or retries < 0:
            raise ValueError(f"attempts must be >= 1 and retries >= 0, got {attempts} and {retries}")
        self.attempts, self.retries = attempts, retries
        if answer not in ("code", "fields"):
            raise ValueError(f"answer must be 'code' or 'fields', got {answer!r}")
        self.answer = answer
        self.with_concepts = with_concepts
        self.temperature, self.seed = temperature, seed
        self._told = False  # whether the log said which temperature the attempts use
        self.sandbox = sandbox
        self.shown_examples = shown_examples
        solve, retry = SolveArcPuzzle, RetryArcPuzzle
        if not with_concepts:
            solve, retry = solve.delete("concepts"), retry.delete("concepts")
        make = dspy.ChainOfThought if cot else dspy.Predict
        self.solve, self.retry = make(solve), make(retry)

    def forward(
        self, task: ArcTask, concepts: str = "", *, retries: int | None = None, reselect: Reselect | None = None
    ) -> dspy.Prediction:
        """``attempts``: one :class:`Attempt` per attempt, in order, each retried inline up to ``retries``
        times (default: the solver's); ``reselect`` gives a retry its concepts (default: ``concepts``)."""
        puzzle = puzzle_text(task)
        retries = self.retries if retries is None else retries
        firsts = self.first_steps(task, puzzle, concepts) if self.one_prefill and self.attempts > 1 else None
        make = lambda a: self.attempt(  # noqa: E731
            task, puzzle, concepts, a, retries=retries, reselect=reselect, first=firsts[a] if firsts else None
        )
        return dspy.Prediction(attempts=self._map(make, range(self.attempts)))

    async def aforward(
        self, task: ArcTask, concepts: str = "", *, retries: int | None = None, reselect: Reselect | None = None
    ) -> dspy.Prediction:
        """:meth:`forward` in a worker thread with DSPy's context (the sandbox and the attempts are synchronous)."""
        return await asyncio.to_thread(type(self).forward, self, task, concepts, retries=retries, reselect=reselect)

    def retry_pass(
        self, task: ArcTask, attempts: Sequence[Attempt], concepts: str = "", *, reselect: Reselect | None = None
    ) -> dspy.Prediction:
        """One more step for every attempt not ``done`` (a retry pass); ``attempts`` with those steps added."""
        puzzle = puzzle_text(task)
        attempts = [Attempt(a.index, list(a.steps)) for a in attempts]

        def step(attempt: Attempt) -> Attempt:
            if not attempt.done:
                attempt.steps.append(self.retry_step(task, puzzle, concepts, attempt, reselect))
            return attempt

        with inside(self):  # its retries are metered as arc_solver.retry, as inline ones are
            return dspy.Prediction(attempts=self._map(step, attempts))

    def _map(self, work: Callable[[Any], Attempt], items) -> list[Attempt]:
        """``work`` over ``items`` in order; at once, in threads inheriting DSPy's context, when ``parallel``."""
        items = list(items)
        if not self.parallel or len(items) == 1:
            return [work(item) for item in items]
        with ThreadPoolExecutor(max_workers=len(items), thread_name_prefix="arc-attempt") as pool:
            futures = [pool.submit(contextvars.copy_context().run, work, item) for item in items]
            return [future.result() for future in futures]

    def attempt(
        self,
        task: ArcTask,
        puzzle: str,
        concepts: str,
        index: int,
        *,
        retries: int | None = None,
        reselect: Reselect | None = None,
        first: Step | None = None,
    ) -> Attempt:
        attempt = Attempt(index, [first or self.first_step(task, puzzle, concepts, index)])
        for _ in range(self.retries if retries is None else retries):
            if attempt.done:
                break
            attempt.steps.append(self.retry_step(task, puzzle, concepts, attempt, reselect))
        return attempt

    def first_step(self, task: ArcTask, puzzle: str, concepts: str, index: int) -> Step:
        step = self._ask(self.solve, 0, index, concepts=concepts, puzzle=puzzle)
        self.check(task, step)
        return step

    def first_steps(self, task: ArcTask, puzzle: str, concepts: str) -> list[Step]:
        """The first program of every attempt from ONE call with ``n`` = ``attempts`` (checked in the
        sandbox); the call's tokens are shared out over the attempts. A call that fails, or gives
        fewer answers, is a failed step for each attempt it left without a program."""
        inputs = {"concepts": concepts, "puzzle": puzzle}
        if not self.with_concepts:
            inputs.pop("concepts")
        rollout = self.seed * 1000 * 100
        config = {**self.sampling(rollout), "n": self.attempts}
        with usage() as spent, self._answering():
            try:
                out = self.solve(**inputs, config=config)
                programs, error = [clean_program(p) for p in out.completions.program], None
            except Exception as exc:
                programs, error = [], error_text(exc)
        shares = _share(spent, self.attempts)
        steps = [
            Step(0, programs[a], tokens=shares[a])
            if a < len(programs)
            else Step(0, "", error=error or "missing: the LM gave fewer answers than asked", tokens=shares[a])
            for a in range(self.attempts)
        ]
        self._map(lambda step: (self.check(task, step), step)[1], steps)
        return steps

    def retry_step(self, task: ArcTask, puzzle: str, concepts: str, attempt: Attempt, reselect: Reselect | None = None) -> Step:
        """The next step of ``attempt``: a retry given its last program and that program's feedback."""
        last, read = attempt.final, None
        if reselect is not None:
            concepts, read = reselect(attempt)
        step = self._ask(
            self.retry,
            len(attempt.steps),
            attempt.index,
            concepts=concepts,
            puzzle=puzzle,
            previous_program=last.program,
            feedback=last.feedback,
        )
        step.read = read
        self.check(task, step)
        return step

    def _ask(self, predict, retry: int, index: int, **inputs) -> Step:
        if not self.with_concepts:
            inputs.pop("concepts")
        rollout = (self.seed * 1000 + index) * 100 + retry
        config = self.sampling(rollout)
        with usage() as spent, self._answering():
            try:
                program, error = clean_program(predict(**inputs, config=config).program), None
            except Exception as exc:  # a failed call is a failed step, recorded; the attempt goes on
                program, error = "", error_text(exc)
        return Step(retry, program, error=error, tokens=spent)

    def sampling(self, rollout: int) -> dict[str, Any]:
        """One attempt's call settings: its rollout id and seed, and the program's temperature where it has one
        (else the LM's own is used); the first call says in the log which temperature that is, where it matters."""
        config: dict[str, Any] = {"rollout_id": rollout, "seed": rollout}
        if self.temperature is not None:
            config["temperature"] = self.temperature
        if not self._told:
            self._told = True
            self._tell_temperature()
        return config

    def _tell_temperature(self) -> None:
        lm = dspy.settings.lm
        own = (getattr(lm, "kwargs", None) or {}).get("temperature")
        if self.temperature is not None and own is not None and own != self.temperature:
            log.info(
                "%s: attempts sampled at the program's temperature %g, not the LM's %g",
                type(self).__name__,
                self.temperature,
                own,
            )
        elif self.temperature is None and own == 0 and self.attempts > 1:
            log.info(
                "%s: %d attempts at the LM's temperature 0 sample nearly one program; give the LM or the program "
                "a temperature above 0 for distinct attempts",
                type(self).__name__,
                self.attempts,
            )

    def _answering(self) -> contextlib.AbstractContextManager:
        """Where ``answer`` is ``"code"``, the session's adapter swapped for a code-block one for this call (kept
        inside a :class:`ResilientAdapter` with the same policy, so faults are still retried and traced)."""
        if self.answer != "code":
            return contextlib.nullcontext()
        adapter: dspy.Adapter = CodeAdapter(defines="def transform")
        current = dspy.settings.adapter
        if isinstance(current, ResilientAdapter):
            adapter = ResilientAdapter([adapter], current.policy)
        return dspy.context(adapter=adapter)

    def check(self, task: ArcTask, step: Step) -> None:
        """Run ``step.program`` on the train and test inputs; fill its checks and feedback."""
        inputs = [p.input for p in task.train] + [p.input for p in task.test]
        if step.error:
            outcomes = [None] * len(inputs)
        else:
            outcomes = (self.sandbox or shared_sandbox()).run(step.program, inputs)
        checks = [
            Check(None, "NO_PROGRAM", step.error) if o is None else Check(o.output, None if o.ok else o.failure.value, o.detail)
            for o in outcomes
        ]
        for check, pair in zip(checks, task.train):
            check.correct = check.output is not None and check.output == pair.output
        step.train, step.test = checks[: len(task.train)], checks[len(task.train) :]
        step.feedback = feedback(task, step, self.shown_examples)


def _share(spent: dict[str, int], parts: int) -> list[dict[str, int]]:
    """Token counts split over ``parts`` attempts (the remainder to the first ones): they add up to ``spent``."""
    shares: list[dict[str, int]] = [{} for _ in range(parts)]
    for key, value in spent.items():
        base, extra = divmod(int(value), parts)
        for i in range(parts):
            shares[i][key] = base + (i < extra)
    return shares


def error_text(exc: BaseException) -> str:
    """``"<kind>: <reason>"``: the fault kind of an :class:`LMFailure` (``rate_limit``, ``unparseable``,
    ...), else the exception's type, then its first line."""
    if isinstance(exc, LMFailure):
        return f"{exc.kind}: {exc.reason}"
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc).strip() else ''}"


def feedback(task: ArcTask, step: Step, shown: int = 3) -> str:
    """What a retry is told: the error, or the examples it got wrong with expected vs produced grids."""
    if step.error:
        return f"Your answer could not be read ({step.error}). Reply with the program only."
    failures = {c.failure for c in step.train + step.test}
    if len(failures) == 1 and failures & {"SYNTAX_ERROR", "NO_TRANSFORM"}:
        return f"The program could not run: {step.train[0].failure}: {step.train[0].detail}"
    right = sum(bool(c.correct) for c in step.train)
    lines = [f"The program got {right} of {len(step.train)} examples right."]
    wrong = [(i, c) for i, c in enumerate(step.train, 1) if not c.correct]
    for i, check in wrong[:shown]:
        expected = task.train[i - 1].output
        if check.output is None:
            lines.append(f"Example {i}: it failed with {check.failure}: {check.detail}")
        else:
            lines.append(
                f"Example {i}: wrong output.\nexpected ({_size(expected)}):\n{grid_text(expected)}\n"
                f"produced ({_size(check.output)}):\n{grid_text(check.output)}"
            )
    if len(wrong) > shown:
        lines.append(f"({len(wrong) - shown} more examples wrong, not shown.)")
    for i, check in enumerate(step.test, 1):
        if check.output is None:
            lines.append(f"Test {i}: it failed with {check.failure}: {check.detail}")
    return "\n".join(lines)


def _size(grid: Grid) -> str:
    return f"{len(grid)}x{len(grid[0])}"


def clean_program(text: str) -> str:
    """The code in an answer: the fenced block that defines ``transform`` (else the longest block) if there are
    fences, else the text; ending in a newline."""
    return code_block(text, "def transform")[1].strip() + "\n"
