"""Typed options of a run: what a command line asked for, as dataclasses the library takes.

    options = EvaluateOptions.from_args(parsed)   # at the command-line edge, any object with these attributes
    run_cell(options)                             # the library never sees the parser's namespace

Field names are the command line's option names (``--lm-retries`` is ``lm_retries``), so a
run's ``config.json`` (written flat from :meth:`Options.as_dict`) keeps the keys it always had and
``--resume`` reads them back.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

from .resume import identity_field

__all__ = ["MEMORY_MAX_TOKENS", "MEMORY_TEMPERATURE", "EvaluateOptions", "LMOptions", "Options", "RunOptions", "as_path"]

# The memory role's own generation settings (ArcMemo, Appendix A.2: concept abstraction and
# selection on GPT-4.1 at temperature 0.3, at most 1000 tokens; the solver has its own budget).
MEMORY_TEMPERATURE = 0.3
MEMORY_MAX_TOKENS = 1000

T = TypeVar("T", bound="Options")


def as_path(value: str | Path | None) -> Path | None:
    """A path given as text (a resumed run's saved config holds paths as text) as a :class:`Path`; None stays None."""
    return None if value is None else Path(value)


@dataclass(kw_only=True)
class Options:
    """Base of the typed options: built from parsed arguments, written flat as JSON."""

    @classmethod
    def from_args(cls: type[T], args: Any, **overrides: Any) -> T:
        """The options ``args`` (parsed arguments, or any object with these attributes) holds; missing ones default."""
        given = {f.name: getattr(args, f.name) for f in fields(cls) if f.init and hasattr(args, f.name)}
        return cls(**{**given, **overrides})

    def as_dict(self) -> dict[str, Any]:
        """The options flat, paths as text (the keys of ``config.json``; fields marked ``saved=False`` left out)."""
        return {
            f.name: (str(v) if isinstance(v := getattr(self, f.name), Path) else v)
            for f in fields(self)
            if f.init and f.metadata.get("saved", True)
        }


@dataclass(kw_only=True)
class LMOptions(Options):
    """Which language models answer, and how their calls are made and retried."""

    lm: str | None = identity_field(
        None
    )  # task LM: a DSPy/LiteLLM model string, or local:/path/model.gguf (None: the embedded model)
    memory_lm: str | None = identity_field(None)  # LM for memory reads and writes (None: the task LM)
    api_base: str | None = None  # the task LM's server (and the memory LM's, when it is the same kind of model)
    memory_api_base: str | None = None  # the memory LM's own server
    temperature: float = identity_field(0.0)
    max_tokens: int | None = identity_field(None)
    memory_temperature: float | None = identity_field(None)  # the memory role's own sampling (None: as the task LM)
    memory_max_tokens: int | None = identity_field(None)
    lm_args: dict[str, Any] = identity_field(default_factory=dict)  # any other keyword the task LM is sent (--lm-arg)
    memory_lm_args: dict[str, Any] = identity_field(default_factory=dict)  # ... the memory LM (--memory-lm-arg)
    preset: str | None = None  # the paper preset the settings started from (memreason.eval.harness.presets)
    lm_config: Path | None = None  # the per-role settings file they were read from (--lm-config)
    # setting -> where the user gave it (--temperature, --lm-arg top_p, a preset, --lm-config); None: not known (a
    # setting then counts as given where it differs from its default). Not saved: the settings themselves are.
    origins: dict[str, str] | None = field(default=None, metadata={"saved": False}, compare=False, repr=False)
    no_cache: bool = False
    cache: Path | None = None  # DSPy response cache directory (None: the run directory's dspy_cache)
    deterministic: bool = False  # the embedded server one request at a time, no cached prefix: equal prompts, equal answers
    lm_retries: int = 3
    backoff: float = 1.0
    lm_timeout: float | None = None
    budget_tokens: int | None = None  # stop starting work once the run's LM calls took this many tokens (prompt + completion)
    budget_usd: float | None = None  # ... or cost this many dollars at LiteLLM's offline prices
    rpm: int | None = None  # the task LM's requests per minute, all threads together (None: no cap)
    tpm: int | None = None  # ... and tokens per minute (prompt + completion)
    memory_rpm: int | None = None  # the memory LM's (None: the task LM's when both are one model, else no cap)
    memory_tpm: int | None = None


@dataclass(kw_only=True)
class RunOptions(LMOptions):
    """Where a run goes and how it runs (nothing here changes its results)."""

    out: Path | None = None
    resume: Path | None = None
    threads: int = 1
    no_progress: bool = False
    no_report: bool = False
    max_errors: int | None = None
    fail_share: float = 1.0  # exit 1 once this share of the items answered in this process failed (1: all of them)
    retry_failed: bool = False
    mlflow: str | None = None  # None: no tracking; "": a SQLite store beside the run; else a tracking URI


@dataclass(kw_only=True)
class EvaluateOptions(RunOptions):
    """What one evaluation of a program on a task asks for (``python -m eval <program> --task T``).

    ``level``, ``modality``, ``rules``, ``per_object``, ``retrieve_k`` and ``program_state`` mean something on
    Experience-Transfer only; a task that takes none of them refuses them in one line."""

    program: str = identity_field()
    task: str | None = identity_field(None)  # None: the program's own task (memreason.eval.tasks.default_task)
    level: int | None = identity_field(None)
    modality: str = identity_field("text")
    rules: str | None = identity_field(None)
    limit: int | None = identity_field(None)
    seed: int = identity_field(0)
    runs: int = identity_field(1)
    config: Path | None = None  # a best.json whose "knobs" build the program
    program_state: Path | None = None  # a DSPy state loaded into the program
    per_object: bool = False
    retrieve_k: int | None = None

    def __post_init__(self) -> None:
        self.config, self.program_state = as_path(self.config), as_path(self.program_state)
