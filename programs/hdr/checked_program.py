"""The shape of the checked programs on inductive tasks: hypotheses proposed by an LM, checked in code.

    M_semantic = the first hypothesis that survives the check, within N propose-check rounds
    y = apply(M_semantic, query)            # in code, when a hypothesis was kept and applies
      | R(T, M_episodic, M_semantic)        # otherwise the reasoner answers, and the answer says why

Each round the proposer sees the episodes and the refuted hypotheses with their
counterexamples (the latest :data:`MAX_REFUTED`); a repeat of a hypothesis already checked
is not checked again. The rounds stop once one hypothesis passes (``verified``), when a round
proposes nothing that was not checked before (``nothing_new``), or after N (``max_rounds``).
The record keeps every check, the kept hypothesis (``kept``, JSON), what code dropped from
the model's hypothesis to keep it (``narrowed``: None when the model's own passed) and why
the rounds stopped, so a restored memory answers as the built one did. With ``samples`` above 1 a
round draws several proposals from one request, at the memory LM's own temperature unless the
program is given one (``sample_temperature``, sent in place of the LM's; the log says so once where
they differ). The evaluation commands give Qiu et al.'s 0.7 (:data:`SAMPLE_TEMPERATURE`) where the
memory LM takes it. A subclass says what
a hypothesis is (:meth:`checked`: propose and check one round), and how one
answers (:meth:`apply`).
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

import dspy

from memreason.signatures import Episode, Refuted

from ..registry import PROBLEMS, register_program
from ..shared.checks import whole_number
from ..shared.memory_program import Consolidation, MemoryProgram
from ..shared.steps import Steps

__all__ = ["CheckedProgram", "MAX_COUNTEREXAMPLES", "MAX_REFUTED", "SAMPLE_TEMPERATURE"]

log = logging.getLogger(__name__)

MAX_REFUTED = 8  # refuted hypotheses the proposer is shown, the latest kept
MAX_COUNTEREXAMPLES = 4  # per refuted hypothesis
SAMPLE_TEMPERATURE = 0.7  # Qiu et al.'s, for sampled rounds: what the evaluation commands give where the LM takes it


@register_program
class CheckedProgram(MemoryProgram):
    """Answer by applying the hypothesis that passed the check, or from memory when none did."""

    name = "hdr_checked"
    kind = PROBLEMS
    on_problems = "checked"  # built by the task: its checked_program (CheckedBlickets, ...)
    needs = ("checked_program",)
    space = {"N": ("int", 1, 5), "samples": ("int", 1, 3)}
    summary = (
        "problem tasks only: hypotheses proposed by the LM and checked in code against every example (ACRE: "
        "blickets and a rule; List Functions: a Python f(xs) run in the sandbox), counterexamples fed back "
        "for N rounds, the kept one applied in code (knobs: N, samples); not the paper's"
    )

    default_cot = True
    answer_signature: ClassVar[type[dspy.Signature]]  # the reasoner's task unless a signature is given

    def __init__(
        self,
        *,
        N: int = 3,
        samples: int = 1,
        sample_temperature: float | None = None,
        freeze_memory_writers: bool = True,
        **reader_knobs: Any,
    ):
        """
        Args:
            N: the most propose-check rounds, a whole number (at least 1).
            samples: proposal completions per round (at least 1); above 1 they are sampled together from one
                request, as Qiu et al. sample N hypotheses per iteration.
            sample_temperature: the temperature of those requests when ``samples`` > 1, sent in place of the memory
                LM's own (the log says so once where they differ); None (the default): the memory LM's own.
            freeze_memory_writers: keep the proposer out of optimizers' reach (see :class:`MemoryProgram`).
            **reader_knobs: the fallback reasoner's knobs (``cot``, default True, ``signature``, default the task's).
        """
        super().__init__(freeze_memory_writers=freeze_memory_writers, **{"signature": self.answer_signature, **reader_knobs})
        self.N = whole_number("N", N, minimum=1)
        self.samples = whole_number("samples", samples, minimum=1)
        self.sample_temperature = None if sample_temperature is None else float(sample_temperature)
        if self.sample_temperature is not None and not 0 <= self.sample_temperature <= 2:  # NaN fails too
            raise ValueError(f"sample_temperature must be between 0 and 2, got {sample_temperature!r}")
        self._told = False  # whether the log said which temperature the sampled rounds use

    def proposal_config(self, rollout: int) -> dict[str, Any]:
        """The proposer call's ``config``: none for one sample; else ``n`` completions, at ``sample_temperature``
        where the program has one (else the LM's own), ``rollout`` keeping the rounds' samples apart in the cache."""
        if self.samples == 1:
            return {}
        config: dict[str, Any] = {"n": self.samples, "rollout_id": rollout}
        if self.sample_temperature is not None:
            config["temperature"] = self.sample_temperature
        if not self._told:
            self._told = True
            self._tell_temperature()
        return {"config": config}

    def _tell_temperature(self) -> None:
        lm = getattr(getattr(self, "propose", None), "lm", None) or dspy.settings.lm
        own = (getattr(lm, "kwargs", None) or {}).get("temperature")
        name = type(self).__name__
        if self.sample_temperature is not None and own is not None and own != self.sample_temperature:
            log.info("%s: proposals sampled at the program's temperature %g, not the LM's %g", name, self.sample_temperature, own)
        elif self.sample_temperature is None and own == 0:
            log.info(
                "%s: %d proposals a round at the LM's temperature 0 are nearly one; give the memory LM or the program "
                "(sample_temperature) a temperature above 0 for distinct proposals",
                name,
                self.samples,
            )

    def proposals(self, out: Any, name: str) -> list[Any]:
        """Every completion's ``name`` of a proposer call (one without sampling)."""
        return [getattr(out, name)] if self.samples == 1 else list(getattr(out.completions, name))

    def consolidate(self, episodes: list[Episode], oracle_hypotheses: list[str]) -> Steps[Consolidation]:
        refuted: list[Refuted] = []
        known: set[Any] = set()
        rounds: list[dict[str, Any]] = []
        kept = None
        for j in range(1, self.N + 1):
            checks, kept = yield from self.checked(episodes, refuted[-MAX_REFUTED:], known)
            for c in checks:
                if not c["accepted"]:
                    refuted.append(Refuted(hypothesis=c["statement"], counterexamples=c["why"][:MAX_COUNTEREXAMPLES]))
            rounds.append({"round": j, "checked": checks, "verified": kept is not None})
            if kept is not None or not checks:
                break
        stopped = "verified" if kept is not None else "nothing_new" if not rounds[-1]["checked"] else "max_rounds"
        passed = next((c for r in rounds for c in r["checked"] if c["accepted"]), {})
        record = {"N": self.N, "rounds": rounds, "kept": kept, "narrowed": passed.get("narrowed"), "stopped": stopped}
        return dspy.Prediction(hypotheses=[self.statement(kept)] if kept is not None else [], record=record)

    def checked(
        self, episodes: list[Episode], refuted: list[Refuted], known: set[Any]
    ) -> Steps[tuple[list[dict[str, Any]], Any]]:
        """One round: propose, check each new proposal (adding it to ``known``), stop at the first that passes.

        Returns the checks (each with ``statement``, ``accepted`` and ``why``, the counterexamples' texts) and the
        kept hypothesis (JSON-able) or None."""
        raise NotImplementedError

    def statement(self, kept: Any) -> str:
        """The kept hypothesis as the reasoner reads it."""
        raise NotImplementedError

    def apply(self, kept: Any, inputs: dict[str, Any]) -> tuple[Any, str]:
        """The kept hypothesis's answer to ``inputs`` (None when it gives none) and a note on how it was found."""
        raise NotImplementedError

    # -- answering -------------------------------------------------------------------------

    def forward(self, **inputs: Any) -> dspy.Prediction:
        memory = self._recall()
        answer, note = self._applied(inputs)
        if answer is not None:
            return dspy.Prediction(answer=answer, source="hypothesis", note=note)
        return dspy.Prediction(**self.reasoner(**memory, **inputs), source="reasoner", note=note)

    async def aforward(self, **inputs: Any) -> dspy.Prediction:
        memory = self._recall()
        answer, note = self._applied(inputs)
        if answer is not None:
            return dspy.Prediction(answer=answer, source="hypothesis", note=note)
        return dspy.Prediction(**await self.reasoner.acall(**memory, **inputs), source="reasoner", note=note)

    def _applied(self, inputs: dict[str, Any]) -> tuple[Any, str]:
        kept = self.memory.consolidation.get("kept")
        if kept is None:
            return None, "no hypothesis passed the check: the reasoner answered from memory"
        return self.apply(kept, inputs)
