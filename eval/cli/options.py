"""The command-line layer's shared parts: one parser class, validators, every common option declared once.

    parser = Parser(prog="python -m eval hdr")
    add(parser, "--level", required=False)       # a common option, declared in OPTIONS, help adapted per command
    add_lm_options(parser)                       # --lm --memory-lm --api-base --memory-api-base --temperature --max-tokens
                                                 # --lm-arg --memory-lm-arg --preset --lm-config --no-cache --cache,
                                                 # and the spending limits --budget-tokens --budget-usd
    add_fault_options(parser, "scenes")          # --lm-retries --backoff --lm-timeout --max-errors,
                                                 # and the rate limits --rpm --tpm --memory-rpm --memory-tpm
    add_run_options(parser, "scenes")            # --threads --no-progress --no-report
    return run_cli(lambda: command(parser.parse_args(argv)), bad_input=(RuleTableError,))

One meaning per flag across commands: ``--lm-retries`` and ``--lm-timeout`` are about LM calls
everywhere; ``--retries`` (solver retries with execution feedback) and ``--timeout`` (seconds a
generated program may run) belong to ARC alone. Values are checked by argparse itself
(``choices=``, types that reject what is out of range); bad input is one line on stderr starting
with ``error: `` and exit code 2; a run stopped on purpose (error budget, spending limit, memory
that could not be built) exits 1 with its work kept; Ctrl-C exits 130, SIGTERM 143.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import re
import signal
import sqlite3
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, NoReturn
from urllib.parse import urlsplit

from memreason.datasets.arc.splits import shipped_memories
from memreason.datasets.experience_transfer.generate import LEVELS
from memreason.eval.harness.errors import UsageError
from memreason.eval.harness.options import MEMORY_MAX_TOKENS, MEMORY_TEMPERATURE
from memreason.eval.harness.paths import check_output_dir, check_output_file
from memreason.eval.harness.presets import PRESETS
from memreason.files import DiskFull, is_disk_full
from memreason.installed import as_run, install_hint
from memreason.lm.config_error import LMConfigError

__all__ = [
    "OPTIONS",
    "Parser",
    "Given",
    "KeyValue",
    "UsageError",
    "add",
    "add_budget_options",
    "add_fault_options",
    "add_lm_options",
    "add_rate_options",
    "add_run_options",
    "check_api_base",
    "check_memory_api_base",
    "loaded",
    "log_to_stderr",
    "mlflow_uri",
    "number",
    "out_dir",
    "out_file",
    "parse_key_value",
    "parse_levels",
    "path",
    "positive",
    "run_cli",
    "share",
    "temperature",
    "text",
    "url",
    "whole",
]


FAULTS = "memreason.lm.faults"  # the stopped run's errors (RunAborted, LMFailure), caught once it is imported


class _CommandsAsRun(argparse.HelpFormatter):
    """Help texts, descriptions, examples and section titles with the commands as run, before they are wrapped
    (the hooks argparse's own formatters override)."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        return super()._split_lines(as_run(text), width)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return super()._fill_text(as_run(text), width, indent)

    def start_section(self, heading: str | None) -> None:
        super().start_section(heading and as_run(heading))


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one :class:`UsageError` line instead of usage text, and whose help
    names the commands as the user runs them: help texts and examples are written ``python -m eval ...``
    and shown as ``memreason-eval ...`` where that is the command (:func:`memreason.installed.as_run`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        formatter = kwargs.get("formatter_class", argparse.HelpFormatter)
        kwargs["formatter_class"] = type(formatter.__name__, (_CommandsAsRun, formatter), {})
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:
        message = message.replace("argument COMMAND: invalid choice:", "unknown program or command")
        raise UsageError(re.sub(r"^argument [^:]+: (?=--)", "", message))  # our types name their option already


def whole(name: str, least: int = 1, most: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number >= ``least`` (and <= ``most``), with ``name`` in its error."""
    return _bounded(name, int, least, most)


def number(name: str, least: float = 0.0) -> Callable[[str], float]:
    """An argparse type: a finite number >= ``least``, with ``name`` in its error."""
    return _bounded(name, float, least)


def _bounded(name: str, kind: type, least: float, most: float | None = None) -> Callable[[str], int | float]:
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            noun = "a whole number" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"{name} must be {noun}, got {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{name} must be a finite number, got {text!r}")
        if value < least:
            raise argparse.ArgumentTypeError(f"{name} must be at least {least:g}, got {value}")
        if most is not None and value > most:
            raise argparse.ArgumentTypeError(f"{name} must be at most {most:g}, got {value}")
        return value

    return parse


def positive(name: str) -> Callable[[str], float]:
    """An argparse type: a finite number above 0, with ``name`` in its error."""

    def parse(text: str) -> float:
        value = number(name, -math.inf)(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{name} must be above 0, got {text}")
        return value

    return parse


def temperature(name: str = "--temperature") -> Callable[[str], float]:
    """An argparse type: a sampling temperature in [0, 2], with ``name`` in its error."""

    def parse(text: str) -> float:
        value = number(name)(text)
        if value > 2:
            raise argparse.ArgumentTypeError(f"{name} must be in [0, 2], got {value}")
        return value

    return parse


def share(name: str) -> Callable[[str], float]:
    """An argparse type: a share in (0, 1], with ``name`` in its error."""

    def parse(value: str) -> float:
        parsed = number(name)(value)
        if not 0 < parsed <= 1:
            raise argparse.ArgumentTypeError(f"{name} must be in (0, 1], got {value}")
        return parsed

    return parse


def text(name: str) -> Callable[[str], str]:
    """An argparse type: text that is not empty (a file, a split, a model), with ``name`` in its error."""

    def parse(value: str) -> str:
        if not value.strip():
            raise argparse.ArgumentTypeError(f"{name} needs a value, got an empty one")
        return value

    return parse


def path(name: str) -> Callable[[str], Path]:
    """An argparse type: a path that is not empty (an empty one would mean the current directory)."""

    def parse(value: str) -> Path:
        if not value.strip():
            raise argparse.ArgumentTypeError(f"{name} needs a path, got an empty one")
        return Path(value)

    return parse


def out_dir(name: str) -> Callable[[str], Path]:
    """An argparse type: a directory the command may create or write into (checked now, before any work)."""
    return _checked(name, check_output_dir)


def out_file(name: str) -> Callable[[str], Path]:
    """An argparse type: a file the command may create or replace (checked now, before any work)."""
    return _checked(name, check_output_file)


def _checked(name: str, check: Callable[[Path, str], None]) -> Callable[[str], Path]:
    def parse(value: str) -> Path:
        try:
            check(path(name)(value), name)
        except UsageError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        return Path(value)

    return parse


def url(name: str) -> Callable[[str], str]:
    """An argparse type: an http(s) URL with a host (a server's address)."""

    def parse(value: str) -> str:
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise argparse.ArgumentTypeError(f"{name} takes an http:// or https:// address with a host, got {value!r}")
        return value.strip()

    return parse


def mlflow_uri(value: str) -> str:
    """An argparse type: what ``--mlflow`` tracks into (memreason.eval.harness.tracking): an http(s) tracking
    server, databricks, a ``sqlite:///`` URI, a ``.db`` file or an existing directory (its mlflow.db)."""
    text = value.strip()
    if not text:
        return ""  # as given bare
    if text.startswith(("http://", "https://")):
        return url("--mlflow")(text)
    if text == "databricks" or (text.startswith("sqlite:///") and len(text) > len("sqlite:///")):
        return text
    if "://" not in text and (text.endswith(".db") or Path(text).is_dir()):
        if text.endswith(".db"):
            _checked("--mlflow", check_output_file)(text)
        return text
    raise argparse.ArgumentTypeError(
        f"--mlflow takes a tracking URI (http://host:5000, https://..., sqlite:///path.db, databricks), "
        f"a .db file or a directory, or nothing; got {value!r}"
    )


class Given(argparse.Action):
    """Store the value, and note in ``namespace.origins`` that the user gave it with this flag (a setting a model's
    provider refuses is then refused naming the flag, where a default would be adapted; see memreason.lm.reasoning)."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        setattr(namespace, self.dest, values)
        note_origin(namespace, self.dest, self.option_strings[0])


class KeyValue(argparse.Action):
    """``--lm-arg KEY=VALUE`` (repeated): ``namespace.<dest>[KEY]`` = VALUE read as JSON where it parses (numbers,
    true/false, null, objects, lists, quoted text), else as text; noted in ``namespace.origins``."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        flag = self.option_strings[0]
        try:
            key, value = parse_key_value(values, flag)
        except argparse.ArgumentTypeError as exc:
            raise argparse.ArgumentError(self, str(exc)) from None
        setattr(namespace, self.dest, {**(getattr(namespace, self.dest, None) or {}), key: value})
        note_origin(namespace, f"{self.dest}.{key}", f"{flag} {key}")


def note_origin(namespace: Any, name: str, label: str) -> None:
    """Note on ``namespace`` (``origins``: setting -> label) where the setting ``name`` came from."""
    origins = dict(getattr(namespace, "origins", None) or {})
    origins[name] = label
    namespace.origins = origins


_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


def parse_key_value(text: str, flag: str = "--lm-arg") -> tuple[str, Any]:
    """``KEY=VALUE`` as (key, value): the value as JSON where it parses, else the text itself; an empty value
    (``top_p=``, ``top_p=""``) refused."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{flag} takes KEY=VALUE (such as reasoning_effort=medium), got {text!r}")
    if not _KEY.match(key):
        raise argparse.ArgumentTypeError(f"{flag}: {key!r} is not a setting's name (letters, digits and _)")
    try:
        value = json.loads(raw)
    except ValueError:
        value = raw
    if isinstance(value, str) and not value.strip():
        raise argparse.ArgumentTypeError(f"{flag} {key}= has no value: give one (such as {key}=VALUE), or leave it out")
    return key, value


def preset(value: str) -> str:
    """An argparse type: a preset's name (memreason.eval.harness.presets)."""
    name = value.strip()
    if name not in PRESETS:
        raise argparse.ArgumentTypeError(f"--preset: unknown preset {value!r}; choose from {', '.join(PRESETS)}")
    return name


def check_api_base(args: Any) -> None:
    """``--api-base`` is the address of a remote model's server: refused when no LM option (``--lm``,
    ``--memory-lm``, ``--memory-lms``, ``--judge-lm``) names a model that would be sent there."""
    if getattr(args, "api_base", None) is None:
        return
    specs = [
        spec.strip()
        for key in ("lm", "memory_lm", "memory_lms", "judge_lm")
        for spec in str(getattr(args, key, None) or "").split(",")
    ]
    if not any(spec and spec != "embedded" and not spec.startswith("local:") for spec in specs):
        raise UsageError(
            "--api-base is the address of a remote model's server: name that model with --lm "
            "(the embedded model and local: GGUF files run on a server of their own)"
        )


def check_memory_api_base(args: Any) -> None:
    """``--memory-api-base`` is the address of the memory LM's server: refused when the memory LM (``--memory-lm``,
    else ``--lm``) is the embedded model or a local GGUF, which run on a server of their own."""
    if getattr(args, "memory_api_base", None) is None:
        return
    spec = getattr(args, "memory_lm", None) or getattr(args, "lm", None)
    if not spec or spec == "embedded" or spec.startswith("local:"):
        raise UsageError(
            "--memory-api-base is the address of the memory LM's server: name that model with --memory-lm (or --lm) "
            "(the embedded model and local: GGUF files run on a server of their own)"
        )


def parse_levels(text: str, flag: str = "--levels", *, allow_empty: bool = False) -> list[int]:
    """Comma-separated Experience-Transfer levels (``"1,2,3"``), checked; ``flag`` names the option in errors."""
    try:
        parsed = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UsageError(f"{flag} takes comma-separated numbers, got {text!r}") from None
    if (not parsed and not allow_empty) or any(level not in LEVELS for level in parsed):
        raise UsageError(f"{flag} must name levels from {LEVELS}, got {text!r}")
    return parsed


def level(text: str) -> int:
    """An argparse type: one Experience-Transfer level."""
    try:
        value = int(text)
    except ValueError:
        value = None
    if value not in LEVELS:
        raise argparse.ArgumentTypeError(f"--level must be {', '.join(map(str, LEVELS[:-1]))} or {LEVELS[-1]}, got {text}")
    return value


def levels(flag: str, *, allow_empty: bool = False) -> Callable[[str], list[int]]:
    """An argparse type: comma-separated levels (see :func:`parse_levels`)."""

    def parse(text: str) -> list[int]:
        try:
            return parse_levels(text, flag, allow_empty=allow_empty)
        except UsageError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def task_ids(text: str) -> list[str]:
    """An argparse type: comma-separated ARC task ids."""
    ids = [t.strip() for t in text.split(",") if t.strip()]
    if not ids:
        raise argparse.ArgumentTypeError("--tasks needs comma-separated task ids")
    return ids


# Every option more than one command takes, declared here once: flag -> argparse keywords. A
# command adds one with add(parser, flag, **overrides): a default, a help text or a type of its own.
OPTIONS: dict[str, dict[str, Any]] = {
    # data
    "--level": dict(type=level, metavar="{1,2,3}", help=f"Experience-Transfer level {LEVELS}"),
    "--levels": dict(type=levels("--levels"), default=[1, 2, 3], help="comma-separated levels (default 1,2,3)"),
    "--task": dict(
        type=text("--task"),
        help="a registered task (python -m eval tasks lists them; default: the program's own, Experience-Transfer "
        "for the HDR paper's programs), such as acre or list_functions",
    ),
    "--modality": dict(default="text", choices=("text", "image"), help="text (structured descriptions) or image (rendered PNGs)"),
    "--rules": dict(
        type=text("--rules"),
        help="a rule table as JSON, a generated table's name such as hard-test-7-0, or a shipped table's "
        "(example_table, table1; default: the HDR paper's Table 1)",
    ),
    "--limit": dict(type=whole("--limit"), metavar="N", help="only the first N test items"),
    "--seed": dict(type=whole("--seed", 0), default=0, help="data seed (default 0)"),
    "--runs": dict(type=whole("--runs"), default=1, help="repetitions (mean and std)"),
    "--split": dict(
        type=text("--split"),
        default="val100",
        help="an ARC split (val100, barc_seeds, ...), or a directory of ARC JSON files (default val100)",
    ),
    "--tasks": dict(type=task_ids, help="only these comma-separated task ids of the split"),
    "--memory": dict(
        type=text("--memory"),
        metavar="FILE|NAME",
        help="an ARC concept memory file from build_memory, or a shipped memory's name "
        f"({', '.join(shipped_memories())}; default: start empty)",
    ),
    # programs
    "--config": dict(
        type=path("--config"),
        metavar="BEST.json",
        help="the program's knobs from a JSON file's \"knobs\" (python -m optimize writes best.json)",
    ),
    "--program-state": dict(
        type=path("--program-state"),
        metavar="STATE.json",
        help="a DSPy state file (program.save: demos, instructions) loaded into the program",
    ),
    "--per-object": dict(
        action="store_true", help="the reasoner labels each object of the scene and the count is computed in code"
    ),
    "--retrieve-k": dict(
        type=whole("--retrieve-k"),
        metavar="K",
        help="with --per-object: label each object in its own call, against the K memory entries nearest to it",
    ),
    # language models
    "--lm": dict(
        action=Given,
        type=text("--lm"),
        help="task LM: a DSPy/LiteLLM model string, or local:/path/model.gguf (default: embedded)",
    ),
    "--memory-lm": dict(action=Given, type=text("--memory-lm"), help="LM for memory building (default: the task LM)"),
    "--api-base": dict(
        action=Given,
        type=url("--api-base"),
        help="the task LM's server address, such as a self-hosted OpenAI-compatible server (with --lm); the memory LM's "
        "too unless --memory-api-base, when it is the same kind of model (the same provider/ prefix)",
    ),
    "--memory-api-base": dict(
        action=Given, type=url("--memory-api-base"), help="the memory LM's own server address (default: see --api-base)"
    ),
    "--temperature": dict(action=Given, type=temperature(), default=0.0, help="sampling temperature of LM calls (default 0)"),
    "--max-tokens": dict(action=Given, type=whole("--max-tokens"), help="generation cap per call"),
    "--memory-temperature": dict(
        action=Given,
        type=temperature("--memory-temperature"),
        default=MEMORY_TEMPERATURE,
        help=f"sampling temperature of memory reads and writes (default {MEMORY_TEMPERATURE:g}, the paper's)",
    ),
    "--memory-max-tokens": dict(
        action=Given,
        type=whole("--memory-max-tokens"),
        default=MEMORY_MAX_TOKENS,
        help=f"generation cap per call of memory reads and writes (default {MEMORY_MAX_TOKENS}, "
        "the paper's; --max-tokens is the solver's)",
    ),
    "--lm-arg": dict(
        action=KeyValue,
        dest="lm_args",
        default={},
        metavar="KEY=VALUE",
        help="any other setting sent with every task LM call, repeated: reasoning_effort=medium, top_p=0.9, "
        'thinking=\'{"type":"enabled","budget_tokens":4096}\' (values read as JSON where they parse, else as text)',
    ),
    "--memory-lm-arg": dict(
        action=KeyValue,
        dest="memory_lm_args",
        default={},
        metavar="KEY=VALUE",
        help="the same for every memory LM call (temperature=... and max_tokens=... set the memory role's own)",
    ),
    "--preset": dict(
        type=preset,
        metavar="NAME",
        help=f"a paper's models and settings for every role ({', '.join(PRESETS)}); --lm-config and the flags "
        "given override it (docs/api-models.md)",
    ),
    "--lm-config": dict(
        type=path("--lm-config"),
        metavar="FILE",
        help='per-role LM settings from a JSON or TOML file: {"task": {"model": ..., "temperature": ..., '
        '"max_tokens": ..., "api_base": ..., KEY: VALUE}, "memory": {...}}; the flags given override it',
    ),
    "--no-cache": dict(action="store_true", help="do not reuse cached LM answers"),
    "--cache": dict(type=out_dir("--cache"), help="DSPy response cache directory (default: <run>/dspy_cache)"),
    "--deterministic": dict(
        action="store_true",
        help="the embedded model's server answers one request at a time and reuses no cached prompt prefix, so equal "
        "prompts get equal answers (slower: no batching, no prefix reuse)",
    ),
    # LM faults
    "--lm-retries": dict(
        type=whole("--lm-retries", 0),
        default=3,
        help="repeats of a failed LM call: rate limit, timeout, server error, empty or unparseable answer (default 3)",
    ),
    "--backoff": dict(
        type=number("--backoff"),
        default=1.0,
        help="seconds before the first repeat of a rate limit, timeout or server error; doubles each time (default 1)",
    ),
    "--lm-timeout": dict(
        type=number("--lm-timeout", 0.001),
        help="seconds before an API model's call counts as timed out (the local server's calls wait while it decodes; a hung one is restarted)",
    ),
    "--max-errors": dict(
        type=whole("--max-errors", 0), help="stop the run once more than N items have failed in this process (default: never)"
    ),
    "--fail-share": dict(
        type=share("--fail-share"),
        default=1.0,
        metavar="F",
        help="exit 1 (the work kept) when at least this share of the items answered in this process failed "
        "(default 1: all of them; a run whose LM never answered exits 1 too)",
    ),
    "--retry-failed": dict(action="store_true", help="when continuing a run, do its failed items again"),
    # rate limits
    "--rpm": dict(
        type=whole("--rpm"),
        metavar="N",
        help="at most N requests per minute to the task LM, all threads together (a provider's retry-after is "
        "honoured with or without it)",
    ),
    "--tpm": dict(
        type=whole("--tpm"),
        metavar="N",
        help="at most N tokens per minute to the task LM, prompt + completion (a prompt counts as its characters "
        "over four until its usage is known)",
    ),
    "--memory-rpm": dict(
        type=whole("--memory-rpm"),
        metavar="N",
        help="the same for the memory LM (default: the task LM's limits when both are one model, else none)",
    ),
    "--memory-tpm": dict(type=whole("--memory-tpm"), metavar="N", help="tokens per minute to the memory LM"),
    # spending limits
    "--budget-tokens": dict(
        type=whole("--budget-tokens"),
        metavar="N",
        help="start no new item once the run's LM calls took N tokens, prompt + completion, earlier processes of the "
        "run included (exit 1, the work kept; rerun with a larger budget to continue)",
    ),
    "--budget-usd": dict(
        type=positive("--budget-usd"),
        metavar="X",
        help="the same in dollars, at LiteLLM's offline prices (models with a price only)",
    ),
    # run
    "--out": dict(
        type=out_dir("--out"), metavar="DIR", help="run directory (default: runs/<name>-<time>); continued when it holds this run"
    ),
    "--resume": dict(type=path("--resume"), metavar="RUN_DIR", help="continue the run in RUN_DIR with its saved config"),
    "--threads": dict(type=whole("--threads"), default=1, help="items answered in parallel"),
    "--no-progress": dict(action="store_true", help="no progress bar"),
    "--no-report": dict(action="store_true", help="do not write report.md and its plots"),
    "--mlflow": dict(
        nargs="?",
        const="",
        type=mlflow_uri,
        metavar="URI",
        help="track the run in MLflow: params, metrics, artifacts, a trace per DSPy call (bare: a SQLite "
        "mlflow.db in the run directory's parent; or a tracking URI such as http://host:5000, or a .db "
        f"path); needs {install_hint('mlflow')}",
    ),
}


def add(parser: argparse.ArgumentParser | argparse._ArgumentGroup, flag: str, **overrides: Any) -> argparse.Action:
    """Add the common option ``flag`` (declared in :data:`OPTIONS`) with this command's ``overrides``."""
    return parser.add_argument(flag, **{**OPTIONS[flag], **overrides})


def add_lm_options(
    parser: argparse.ArgumentParser,
    *,
    memory_role: str = "memory building",
    sampling: bool = True,
    memory_generation: bool = False,
    cache_home: str = "<run>",
) -> None:
    """The language-model options; ``sampling=False`` leaves ``--temperature`` to the caller (ARC's solver),
    ``memory_generation`` adds ``--memory-temperature`` and ``--memory-max-tokens``."""
    models = parser.add_argument_group("language models")
    add(models, "--lm")
    add(models, "--memory-lm", help=f"LM for {memory_role} (default: the task LM)")
    add(models, "--api-base")
    add(models, "--memory-api-base")
    if sampling:
        add(models, "--temperature")
    add(models, "--max-tokens")
    if memory_generation:
        add(models, "--memory-temperature")
        add(models, "--memory-max-tokens")
    add(models, "--lm-arg")
    add(models, "--memory-lm-arg")
    add(models, "--preset")
    add(models, "--lm-config")
    add(models, "--no-cache")
    add(models, "--cache", help=f"DSPy response cache directory (default: {cache_home}/dspy_cache)")
    add(models, "--deterministic")
    add_budget_options(parser)


def add_budget_options(parser: argparse.ArgumentParser, *, scope: str = "the run") -> None:
    """The spending limits ``--budget-tokens`` and ``--budget-usd``; ``scope`` says what they cap (a table: all its cells)."""
    limits = parser.add_argument_group("spending limits", f"caps on what {scope} spends on LM calls")
    add(limits, "--budget-tokens")
    add(limits, "--budget-usd")


def add_fault_options(parser: argparse.ArgumentParser, unit: str, *, budget: bool = True, retry_failed: bool = False) -> None:
    """How LM faults are survived; ``budget`` adds ``--max-errors`` (``unit`` names the items),
    ``retry_failed`` adds ``--retry-failed`` (for commands that continue run directories); and the rate limits
    (:func:`add_rate_options`)."""
    faults = parser.add_argument_group("LM faults")
    for flag in ("--lm-retries", "--backoff", "--lm-timeout"):
        add(faults, flag)
    if budget:
        add(faults, "--max-errors", help=f"stop the run once more than N {unit} have failed in this process (default: never)")
        add(faults, "--fail-share")
    if retry_failed:
        add(faults, "--retry-failed", help=f"when continuing a run, do its failed {unit} again")
    add_rate_options(parser)


def add_rate_options(parser: argparse.ArgumentParser) -> None:
    """``--rpm``, ``--tpm``, ``--memory-rpm``, ``--memory-tpm``: requests and tokens per minute per role, shared by
    every thread of the process (saved in the run's config; they decide how fast it runs, not its results)."""
    limits = parser.add_argument_group("rate limits", "requests and tokens per minute per role, all threads together")
    for flag in ("--rpm", "--tpm", "--memory-rpm", "--memory-tpm"):
        add(limits, flag)


def add_run_options(parser: argparse.ArgumentParser, unit: str, *, report: bool = True) -> None:
    run = parser.add_argument_group("run")
    add(run, "--threads", help=f"{unit} answered in parallel")
    add(run, "--no-progress")
    if report:
        add(run, "--no-report")


def run_cli(
    command: Callable[[], int],
    *,
    bad_input: tuple[type[BaseException] | str, ...] = (),
    continue_hint: str = "rerun the same command to continue",
) -> int:
    """Run a command: bad input prints one line and exits 2, a stopped run exits 1 (its work kept), Ctrl-C exits 130,
    SIGTERM (``kill``, ``timeout``, a batch scheduler) stops it as Ctrl-C does and exits 143, a full disk is one
    line naming what could not be written, exit 2 (the run continues from where it stopped); stdout's reader gone
    (``| head``) exits 141 with no traceback. ``bad_input``: the errors a user can fix (one line, exit 2), each a class or
    ``"module:Class"``, matched once that module is imported (:func:`loaded`)."""
    with _terminate_as_interrupt():
        return _run(command, bad_input, continue_hint)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C's KeyboardInterrupt would be, so the run stops the same way."""


@contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` in the main thread (in another thread: nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGTERM, _terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if before is None else before)


def _terminated(signum: int, frame: object) -> None:
    raise Terminated


def loaded(*names: type[BaseException] | str) -> tuple[type[BaseException], ...]:
    """The exception classes ``names`` gives (each a class, or ``"module:Class"``), those named by module only where
    that module has been imported: an exception whose module was never imported cannot have been raised, so a command
    catches it without importing the module (and the models' libraries behind it) to start."""
    found = []
    for name in names:
        if isinstance(name, str):
            module, _, attribute = name.partition(":")
            name = getattr(sys.modules.get(module), attribute, None)
        if name is not None:
            found.append(name)
    return tuple(found)


def _run(command: Callable[[], int], bad_input: tuple[type[BaseException] | str, ...], continue_hint: str) -> int:
    try:
        return command()
    except (UsageError, LMConfigError, *loaded(*bad_input)) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except loaded(f"{FAULTS}:RunAborted") as exc:
        print(f"error: run stopped: {exc}", file=sys.stderr)
        return 1
    except loaded(f"{FAULTS}:LMFailure") as exc:  # failed after its retries, where no harness turned it into a stopped run
        print(f"error: run stopped: the LM failed ({exc}); check --lm and --api-base, then {continue_hint}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # the reader of stdout went away (`... | head`): stop as a shell command does, quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's flush at exit has nowhere to fail
        return 141
    except (OSError, sqlite3.OperationalError) as exc:
        if not (is_disk_full(exc) or "disk is full" in str(exc)):
            raise
        where = (
            exc.strerror
            if isinstance(exc, DiskFull)
            else f"no space left on the device ({getattr(exc, 'filename', None) or exc})"
        )
        print(f"error: {where}; free some space, then {continue_hint}", file=sys.stderr)
        return 2
    except Terminated:
        print(f"terminated; {continue_hint}", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print(f"interrupted; {continue_hint}", file=sys.stderr)
        return 130


def exit_with(code: int) -> NoReturn:
    """End the process with ``code``. When a second interrupt left examples running in threads, without
    waiting for them (their work is not recorded, so a continued run does it again)."""
    loop = sys.modules.get("memreason.eval.harness.loop")  # no threads without it
    if loop is not None and loop.threads_left_running():
        from memreason.lm.server import stop_all as stop_servers

        stop_servers()  # the local server and its files (it would die with this process, leaving its files)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def log_to_stderr() -> None:
    """The library's progress messages (``logging`` under ``memreason``) as plain lines on stderr, once per process."""
    logger = logging.getLogger("memreason")
    if not any(isinstance(h, _Stderr) for h in logger.handlers):
        logger.addHandler(_Stderr())
        logger.setLevel(logging.INFO)
        logger.propagate = False


class _Stderr(logging.Handler):
    """A record's message on whatever ``sys.stderr`` is when it is emitted."""

    def emit(self, record: logging.LogRecord) -> None:
        print(self.format(record), file=sys.stderr)
