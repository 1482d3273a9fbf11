"""The search space of a study: which knobs vary, over which values, declared per program and overridable.

    space = default_space("hdr")                       # K 1-4, N 1-5, cot and per_object on/off, demos 0-8
    space = default_space("hdr", PROBLEMS)             # on a problem task: K 1-4, N 1-5, cot on/off
    space = default_space("fewshot")                   # on a stream task: k, cot, and the run's batch, verify, verify_margin
    space = space.override(["K=1:3", "cot=false"])     # --param K=1:3 --param cot=false
    space = space.override(read_space_file("s.json"))  # --space s.json: {"K": "1:3", "cot": [true], "demos": 0}
    params = space.suggest(trial)                      # {"K": 2, "N": 3, "cot": True, "per_object": False, "demos": 4}

A value spec is ``LOW:HIGH`` (whole numbers, both ends included), a comma list of
choices (``true,false`` or ``1,3,5``), or one value (the knob is fixed). In a JSON
file a spec may also be a list of choices, ``{"low": 1, "high": 4}``, or a bare value.

The spaces are declared in the program registry (:mod:`memreason.programs.registry`): each program's
own ``space`` (an attribute of its class, which ``register_program`` reads), then the one every program
shares on a kind of task (``KIND_SPACES``).
``demos`` is not a constructor argument: it is the number of demonstrations placed on
the program's per-example predictor (:mod:`memreason.optimize.demos`); nor are a stream run's
options (``batch``, ``verify``, ``verify_margin``: :data:`RUN_OPTIONS`), set as ``python -m eval``'s
flags of those names. Every other name is a knob, passed to the program's constructor, so a study
sets knobs the way a user does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from memreason.files import read_json_file
from memreason.programs import PROGRAMS
from memreason.programs.registry import KIND_SPACES, STREAM, STREAM_MEMORY_SPACE, STREAM_VERIFY_SPACE

DEMOS = "demos"  # the number of demonstrations placed: no constructor argument
# How a stream task runs a program (options of the run, memreason.eval.stream.options.StreamOptions): no constructor
# arguments either; a study's best.json keeps them apart from the knobs, under "options".
RUN_OPTIONS = ("batch", "verify", "verify_margin")


class SpaceError(ValueError):
    """A search space that cannot be used as given (reported as one line, exit 2)."""


@dataclass(frozen=True)
class Param:
    """One dimension: whole numbers ``low..high``, or a list of ``choices`` (one choice: fixed)."""

    name: str
    low: int | None = None
    high: int | None = None
    choices: tuple[Any, ...] = ()

    def __post_init__(self):
        ranged = self.low is not None and self.high is not None
        if ranged == bool(self.choices):
            raise SpaceError(f"{self.name}: give a range LOW:HIGH or a list of choices")
        if ranged and self.low > self.high:
            raise SpaceError(f"{self.name}: range {self.low}:{self.high} is empty")

    @property
    def values(self) -> list[Any]:
        """Every value (the grid)."""
        return list(range(self.low, self.high + 1)) if self.choices == () else list(self.choices)

    def suggest(self, trial) -> Any:
        if self.choices == ():
            return trial.suggest_int(self.name, self.low, self.high)
        return trial.suggest_categorical(self.name, list(self.choices))

    def describe(self) -> str:
        if self.choices == ():
            return f"{self.low}:{self.high}"
        return ",".join(_show(c) for c in self.choices)


@dataclass(frozen=True)
class Space:
    params: tuple[Param, ...]

    def __getitem__(self, name: str) -> Param:
        return {p.name: p for p in self.params}[name]

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.params]

    def suggest(self, trial) -> dict[str, Any]:
        return {p.name: p.suggest(trial) for p in self.params}

    def grid(self) -> dict[str, list[Any]]:
        return {p.name: p.values for p in self.params}

    def size(self) -> int:
        size = 1
        for p in self.params:
            size *= len(p.values)
        return size

    def override(self, specs: Iterable[str] | Mapping[str, Any]) -> "Space":
        """This space with some dimensions replaced; names must be ones this space declares."""
        items = _pairs(specs) if not isinstance(specs, Mapping) else list(specs.items())
        replaced = {p.name: p for p in self.params}
        for name, spec in items:
            if name not in replaced:
                raise SpaceError(f"unknown parameter {name!r}; this program's space has: {', '.join(self.names)}")
            replaced[name] = parse_param(name, spec)
        return Space(tuple(replaced[n] for n in self.names))

    def describe(self) -> dict[str, str]:
        return {p.name: p.describe() for p in self.params}


def _pairs(specs: Iterable[str]) -> list[tuple[str, str]]:
    out = []
    for text in specs:
        name, sep, value = text.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise SpaceError(f"--param wants NAME=SPEC (for example K=1:3 or cot=true,false), got {text!r}")
        out.append((name.strip(), value.strip()))
    return out


def parse_param(name: str, spec: Any) -> Param:
    """A dimension from a spec: ``"1:4"``, ``"true,false"``, ``"3"``, ``[1, 3]``, ``{"low": 1, "high": 4}``, ``3``."""
    if isinstance(spec, Mapping):
        try:
            return Param(name, low=_whole(name, spec["low"]), high=_whole(name, spec["high"]))
        except KeyError:
            raise SpaceError(f"{name}: a range needs 'low' and 'high'") from None
    if isinstance(spec, (list, tuple)):
        if not spec:
            raise SpaceError(f"{name}: no choices")
        return Param(name, choices=tuple(spec))
    if isinstance(spec, str):
        if ":" in spec:
            low, _, high = spec.partition(":")
            return Param(name, low=_whole(name, low), high=_whole(name, high))
        return Param(name, choices=tuple(parse_value(v.strip()) for v in spec.split(",") if v.strip()) or (None,))
    return Param(name, choices=(spec,))


def _whole(name: str, text: Any) -> int:
    try:
        value = int(str(text).strip())
    except ValueError:
        raise SpaceError(f"{name}: {text!r} is not a whole number") from None
    return value


def parse_value(text: str) -> Any:
    """``true``/``false``/``none``, numbers, else the text itself."""
    lowered = text.lower()
    if lowered in ("true", "on", "yes"):
        return True
    if lowered in ("false", "off", "no"):
        return False
    if lowered in ("none", "null"):
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _show(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, str) else value


def read_space_file(path: str | Path) -> dict[str, Any]:
    if not Path(path).exists():
        raise SpaceError(f"--space {path}: no such file")
    data = read_json_file(path, SpaceError, "--space file")
    if not isinstance(data, dict):
        raise SpaceError(f"--space {path}: expected a JSON object of NAME: SPEC")
    return data


# -- the declared spaces -------------------------------------------------------------------------


def default_space(program: str, kind: str | None = None, *, verifiable: bool = True) -> Space:
    """The declared space of a registered program on a task of ``kind`` (default: the program's own kind): the
    program's own dimensions (``ProgramSpec.space``), then those every program shares on that kind of task
    (:data:`memreason.programs.registry.KIND_SPACES`); on a stream task, for a program that keeps memory, the run's
    ``batch`` and, where its writes can be verified (``verifiable``: they learn from a reference or a check),
    ``verify`` and ``verify_margin`` (:data:`RUN_OPTIONS`); elsewhere ``verify`` is 0."""
    if program not in PROGRAMS:
        raise SpaceError(f"unknown program {program!r}; choose from: {', '.join(PROGRAMS)}")
    spec = PROGRAMS[program]
    kind = kind or spec.kind
    declared = {**spec.space, **KIND_SPACES.get(kind, {})}
    if kind == STREAM and spec.memory_format is not None:
        declared.update(STREAM_MEMORY_SPACE)
        # writes nobody can verify: none verified (a range asked for is refused with why: tune.check_space)
        declared.update(STREAM_VERIFY_SPACE if verifiable else {"verify": ("categorical", (0,))})
    return Space(tuple(declared_param(name, value) for name, value in declared.items()))


def declared_param(name: str, declared: tuple) -> Param:
    """A dimension from a registry entry's ``("int", low, high)`` or ``("categorical", choices)``."""
    match declared:
        case ("int", low, high):
            return Param(name, low=low, high=high)
        case ("categorical", choices):
            return Param(name, choices=tuple(choices))
    raise SpaceError(f"{name}: a declared dimension is ('int', low, high) or ('categorical', choices), got {declared!r}")


def split_params(params: Mapping[str, Any]) -> tuple[dict[str, Any], int]:
    """(knobs for the constructor, number of demonstrations); a stream run's options (:data:`RUN_OPTIONS`) are
    neither (:func:`run_options`)."""
    knobs = {k: v for k, v in params.items() if k != DEMOS and k not in RUN_OPTIONS}
    return knobs, int(params.get(DEMOS, 0) or 0)


def run_options(params: Mapping[str, Any]) -> dict[str, Any]:
    """The stream run's options among ``params`` (``batch``, ``verify``, ``verify_margin``), as its options name them."""
    return {k: v for k, v in params.items() if k in RUN_OPTIONS}
