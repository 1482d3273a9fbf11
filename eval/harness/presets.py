"""The papers' own models and settings, by name (``--preset``): every role's model and generation settings.

    PRESETS["arcmemo-paper"].roles   # {"task": {"model": "openai/o4-mini", ...}, "memory": {"model": "openai/gpt-4.1", ...}}
    PRESETS["hdr-paper"].describe()  # one line for the log

A preset is the lowest layer of a run's LM settings: a ``--lm-config`` file's settings replace it, and the flags
given on the command line replace both. What a run used is written into its ``config.json`` (``preset``, the
models, ``temperature``, ``max_tokens``, ``lm_args``, ...), so a continued run never depends on this table.

- ``arcmemo-paper`` (ArcMemo, Section 5 and Appendix A.2): the solver on OpenAI's o4-mini at medium reasoning
  effort with at most 32,000 tokens an answer (temperature 1, the only one o4-mini takes); concept abstraction and
  selection (the memory role) on GPT-4.1 at temperature 0.3 with at most 1,000 tokens. The paper's PS selection
  reasons with a reasoning model; here selection is a memory-role call, so it runs on GPT-4.1 (give
  ``--memory-lm openai/o4-mini`` to select, and abstract, with o4-mini).
- ``hdr-paper`` (HDR, Section 5.1): inference on GPT-4o (``gpt-4o-2024-08-06``), factor extraction, hypothesis
  generation and verification (the memory role) on Gemini 2.5 Flash, every model at temperature 0 with a fixed
  seed (the paper gives none; the preset sends 0). The paper repeats each cell 3 times: add ``--runs 3``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

__all__ = ["PRESETS", "ROLES", "Preset", "preset_names"]

ROLES = ("task", "memory")


@dataclass(frozen=True)
class Preset:
    """A paper's models and settings: ``roles`` maps ``task`` and ``memory`` to ``model``, ``temperature``,
    ``max_tokens`` and any provider keyword (``reasoning_effort``, ``seed``, ...)."""

    name: str
    paper: str
    roles: Mapping[str, Mapping[str, Any]]
    runs: int = 1  # the paper's repetitions of each cell (for the protocol's estimate)
    notes: str = ""
    protocol: Mapping[str, Any] = field(default_factory=dict)  # the paper's evaluation protocol, for the estimate

    def describe(self) -> str:
        """One line: each role's model and settings."""
        parts = []
        for role in ROLES:
            settings = dict(self.roles.get(role) or {})
            model = settings.pop("model", None)
            shown = ", ".join(f"{key} {value}" for key, value in settings.items())
            parts.append(f"{role} LM {model}" + (f" ({shown})" if shown else ""))
        return f"preset {self.name} ({self.paper}): " + "; ".join(parts)


PRESETS: dict[str, Preset] = {
    "arcmemo-paper": Preset(
        name="arcmemo-paper",
        paper="ArcMemo, Appendix A.2",
        roles={
            "task": {"model": "openai/o4-mini", "temperature": 1.0, "max_tokens": 32000, "reasoning_effort": "medium"},
            "memory": {"model": "openai/gpt-4.1", "temperature": 0.3, "max_tokens": 1000},
        },
        runs=3,
        notes="the paper's PS selection reasons with a reasoning model; here selection runs on the memory LM",
        protocol={"split": "val100", "attempts": 2, "retries": 0, "runs": 3},
    ),
    "hdr-paper": Preset(
        name="hdr-paper",
        paper="HDR, Section 5.1",
        roles={
            "task": {"model": "openai/gpt-4o-2024-08-06", "temperature": 0.0, "seed": 0},
            "memory": {"model": "gemini/gemini-2.5-flash", "temperature": 0.0, "seed": 0},
        },
        runs=3,
        notes="the paper fixes a seed without saying which; the preset sends 0",
    ),
}


def preset_names() -> list[str]:
    return list(PRESETS)
