"""What an ARC evaluation and a memory seeding ask for (each written to its run's ``config.json``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memreason.datasets.arc import ArcDataError, ArcTask, load_split
from memreason.programs import PROGRAMS
from memreason.programs.arcmemo.memory_file import Memory, empty_memory, load_memory

MEMORY_FORMAT = {
    "baseline": None,
    "cheatsheet": "cheatsheet",
    "arcmemo_oe": "oe",
    "arcmemo_ps": "ps",
    "arcmemo_ps_noselect": "ps",
}
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
)


@dataclass
class ArcConfig:
    """What one ARC evaluation asks for (written to ``config.json``)."""

    program: str
    split: str = "val100"
    tasks: list[str] | None = None
    limit: int | None = None
    memory: str | None = None
    attempts: int = 2
    retries: int = 0
    top_k: int | None = None
    continual_every: int | None = None
    write_gate: str = "train"
    cot: bool = False
    modality: str = "text"
    temperature: float = 0.7
    retry_mode: str = "inline"  # or "passes": retries as passes over the tasks (ArcProgram)
    reselect: bool = False
    reselect_k: int | None = None
    one_prefill: bool = False  # a task's first programs from one call with n = attempts
    runs: int = 1
    threads: int = 1
    knobs: dict[str, Any] = field(default_factory=dict)
    program_state: str | None = None  # a DSPy state file (demos, instructions) loaded into each run's program

    @property
    def memory_format(self) -> str | None:
        return MEMORY_FORMAT.get(self.program, getattr(PROGRAMS[self.program].build(), "memory_format", None))

    def load_tasks(self) -> list[ArcTask]:
        tasks = load_split(self.split, ids=self.tasks, limit=self.limit)
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

    format: str
    out: str
    split: str = "barc_seeds"
    tasks: list[str] | None = None
    limit: int | None = None
    solutions: str | None = None
    unverified: bool = False
    attempts: int = 2
    retries: int = 1
    cot: bool = False
    temperature: float = 0.7
    threads: int = 1

    def load(self) -> tuple[list[ArcTask], dict[str, str]]:
        """The tasks to seed from and, with ``solutions``, each task's user program (by task id)."""
        if not self.solutions:
            return load_split(self.split, ids=self.tasks, limit=self.limit), {}
        folder = Path(self.solutions).expanduser()
        if not folder.is_dir():
            raise ArcDataError(f"--solutions {folder} is not a directory")
        files = sorted(folder.glob("*.py"))
        if not files:
            raise ArcDataError(f"no solutions (<task_id>.py) in {folder}")
        wanted = [f.stem for f in files]
        if self.tasks is not None:
            wanted = [t for t in wanted if t in set(self.tasks)]
        tasks = load_split(self.split, ids=wanted, limit=self.limit)
        return tasks, {t.id: (folder / f"{t.id}.py").read_text() for t in tasks}
