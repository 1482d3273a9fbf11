"""What an ARC evaluation and a memory seeding ask for (each written to its run's ``config.json``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memreason.datasets.arc import GENERATED_SPLITS, ArcDataError, ArcTask, generation, load_split
from memreason.programs import PROGRAMS
from memreason.programs.arcmemo.memory_file import Memory, empty_memory, load_memory

from ..harness.resume import identity_field
from .solutions import Solution, given_solutions

# ArcConfig fields that are program knobs (a --config's knobs by these names set them, the rest go to the constructor)
KNOB_FIELDS = (
    "attempts",
    "retries",
    "top_k",
    "continual_every",
    "write_gate",
    "cot",
    "modality",
    "temperature",
    "retry_mode",
    "reselect",
    "reselect_k",
    "one_prefill",
    "answer",
)


@dataclass
class ArcConfig:
    """What one ARC evaluation asks for (written to ``config.json``)."""

    program: str = identity_field()
    split: str = identity_field("val100")
    tasks: list[str] | None = identity_field(None)
    limit: int | None = identity_field(None)
    memory: str | None = identity_field(None)
    attempts: int = identity_field(2)
    retries: int = identity_field(0)
    top_k: int | None = identity_field(None)
    continual_every: int | None = identity_field(None)
    write_gate: str = identity_field("train")
    cot: bool = identity_field(False)
    modality: str = identity_field("text")
    temperature: float = identity_field(0.7)
    retry_mode: str = identity_field("inline")  # or "passes": retries as passes over the tasks (ArcProgram)
    reselect: bool = identity_field(False)
    reselect_k: int | None = identity_field(None)
    one_prefill: bool = identity_field(False)  # a task's first programs from one call with n = attempts
    answer: str = identity_field(
        "code"
    )  # the solver's programs as a fenced code block, or "fields" (the session adapter's format)
    runs: int = identity_field(1)
    threads: int = 1
    knobs: dict[str, Any] = identity_field(default_factory=dict)
    program_state: str | None = None  # a DSPy state file (demos, instructions) loaded into each run's program
    # a generated split's knobs (memreason.datasets.arc.generated): resolved for a generated split, else None
    seed: int | None = identity_field(None)
    size: int | None = identity_field(None)
    families: list[str] | None = identity_field(None)
    exclude_families: list[str] | None = identity_field(None)
    difficulty: list[float] | None = identity_field(None)

    def __post_init__(self) -> None:
        _resolve_generation(self)

    def generation(self) -> dict[str, Any]:
        """The generated split's knobs, as ``load_split`` takes them."""
        return _generation(self)

    @property
    def memory_format(self) -> str | None:
        return PROGRAMS[self.program].memory_format

    def load_tasks(self) -> list[ArcTask]:
        tasks = load_split(self.split, ids=self.tasks, limit=self.limit, **self.generation())
        hidden = next((t.id for t in tasks if not t.labelled), None)
        if hidden:
            raise ArcDataError(f"task {hidden} has no test outputs, so it cannot be scored")
        return tasks

    def load_memory(self) -> Memory | None:
        """The memory file's contents (checked against the program), an empty memory, or None (no memory)."""
        format = self.memory_format
        if format is None:
            if self.memory:
                raise ValueError(f"{self.program} reads no memory; drop --memory")
            return None
        if not self.memory:
            return empty_memory(format)
        memory = load_memory(self.memory)
        if memory.format != format:
            raise ValueError(f"{self.program} needs a {format} memory, but {self.memory} holds a {memory.format} one")
        return memory

    def program_knobs(self, run: int) -> dict[str, Any]:
        knobs: dict[str, Any] = dict(
            attempts=self.attempts,
            retries=self.retries,
            cot=self.cot,
            temperature=self.temperature,
            seed=run,
            write_gate=self.write_gate,
            retry_mode=self.retry_mode,
        )
        if self.one_prefill:
            knobs["one_prefill"] = True
        if self.answer != "code":
            knobs["answer"] = self.answer
        if self.reselect:
            knobs.update(reselect=True, reselect_k=self.reselect_k)
        if self.memory_format is not None:
            knobs["continual_every"] = self.continual_every
        if self.memory_format in ("oe", "ps"):
            knobs["top_k"] = self.top_k
            if self.memory_format == "oe":
                knobs["modality"] = self.modality
        return {**knobs, **self.knobs}


@dataclass
class BuildConfig:
    """What ``build_memory`` asks for (written to ``config.json``)."""

    format: str = identity_field()
    out: str = identity_field()
    split: str = identity_field("barc_seeds")
    tasks: list[str] | None = identity_field(None)
    limit: int | None = identity_field(None)
    solutions: str | None = identity_field(None)
    unverified: bool = identity_field(False)
    apart: bool = identity_field(False)  # PS: each solution's concepts kept apart (no memory shown, no revision by title)
    extend: bool = identity_field(False)  # start from the memory in ``out`` and skip the tasks among its sources
    attempts: int = identity_field(2)
    retries: int = identity_field(1)
    cot: bool = identity_field(False)
    temperature: float = identity_field(0.7)
    threads: int = 1
    # a generated split's knobs (as ArcConfig's)
    seed: int | None = identity_field(None)
    size: int | None = identity_field(None)
    families: list[str] | None = identity_field(None)
    exclude_families: list[str] | None = identity_field(None)
    difficulty: list[float] | None = identity_field(None)

    def __post_init__(self) -> None:
        _resolve_generation(self)

    def generation(self) -> dict[str, Any]:
        """The generated split's knobs, as ``load_split`` takes them."""
        return _generation(self)

    def load(self) -> tuple[list[ArcTask], dict[str, Solution]]:
        """The tasks to seed from and, with ``solutions`` (a directory, or ``rearc`` for re-ARC's verifiers),
        only the split's tasks that have one, each with its :class:`Solution` (by task id)."""
        if not self.solutions:
            return load_split(self.split, ids=self.tasks, limit=self.limit, **self.generation()), {}
        tasks = load_split(self.split, ids=self.tasks, **self.generation())
        tasks, given = given_solutions(self.solutions, tasks, split=self.split, named=self.tasks is not None)
        tasks = tasks[: self.limit] if self.limit is not None else tasks
        return tasks, {t.id: given[t.id] for t in tasks}


GENERATION_FIELDS = ("seed", "size", "families", "exclude_families", "difficulty")


def _generation(config: ArcConfig | BuildConfig) -> dict[str, Any]:
    return {key: getattr(config, key) for key in GENERATION_FIELDS}


def _resolve_generation(config: ArcConfig | BuildConfig) -> None:
    """Fill in a generated split's defaults (seed, size, difficulty), so ``config.json`` says what was drawn
    and asking for a default explicitly is the same run; bad knobs fail here, before any model loads."""
    if config.split in GENERATED_SPLITS:
        resolved = generation(config.split, **_generation(config))
        config.seed, config.size = resolved.seed, resolved.size
        config.difficulty = list(resolved.difficulty) if resolved.difficulty else None
