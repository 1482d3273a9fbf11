"""The command-line layer every CLI shares: one parser class, validators, option groups, exit handling.

    parser = Parser(prog="python -m eval", description=...)
    add_lm_options(parser)                 # --lm --memory-lm --api-base --temperature --max-tokens --no-cache --cache
                                           # (memory_generation=True: --memory-temperature --memory-max-tokens)
    add_fault_options(parser, "scenes")    # --lm-retries --backoff --lm-timeout --max-errors
    add_run_options(parser, "scenes")      # --threads --no-progress --no-report
    return run_cli(lambda: command(parser.parse_args(argv)), bad_input=(RuleTableError,))

One meaning per flag across CLIs: ``--lm-retries`` and ``--lm-timeout`` are about LM calls
everywhere; ``--retries`` (solver retries with execution feedback) and ``--timeout``
(seconds a generated program may run) belong to ARC alone. Bad input is one line on
stderr starting with ``error: `` and exit code 2; a run stopped on purpose (error
budget, memory that could not be built) exits 1 with its work kept; Ctrl-C exits 130.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable

from memreason.lm import SLOTS, LMChoice, LMConfigError, resolve_lm
from memreason.lm.faults import RetryPolicy, RunAborted
from memreason.lm.resolve import with_generation

from .runs import write_json


class UsageError(Exception):
    """Input the user can fix; reported as one line with exit code 2."""


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one :class:`UsageError` line instead of usage text."""

    def error(self, message: str) -> None:
        raise UsageError(message)


def whole(name: str, least: int = 1) -> Callable[[str], int]:
    """An argparse type: a whole number >= ``least``, with ``name`` in its error."""
    return _bounded(name, int, least)


def number(name: str, least: float = 0.0) -> Callable[[str], float]:
    """An argparse type: a number >= ``least``, with ``name`` in its error."""
    return _bounded(name, float, least)


def _bounded(name: str, kind: type, least: float) -> Callable[[str], int | float]:
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            noun = "a whole number" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"{name} must be {noun}, got {text!r}") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"{name} must be at least {least:g}, got {value}")
        return value

    return parse


def parse_levels(text: str, flag: str = "--levels", *, allow_empty: bool = False) -> list[int]:
    """Comma-separated Experience-Transfer levels (``"1,2,3"``), checked; ``flag`` names the option in errors."""
    from memreason.datasets.experience_transfer import LEVELS

    try:
        parsed = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UsageError(f"{flag} takes comma-separated numbers, got {text!r}") from None
    if (not parsed and not allow_empty) or any(level not in LEVELS for level in parsed):
        raise UsageError(f"{flag} must name levels from {LEVELS}, got {text!r}")
    return parsed


def temperature(text: str) -> float:
    """An argparse type: a sampling temperature in [0, 2]."""
    return temperature_of("--temperature")(text)


def temperature_of(name: str) -> Callable[[str], float]:
    """An argparse type: a sampling temperature in [0, 2], with ``name`` in its error."""
    def parse(text: str) -> float:
        value = number(name)(text)
        if value > 2:
            raise argparse.ArgumentTypeError(f"{name} must be in [0, 2], got {value}")
        return value

    return parse


# The memory role's own generation settings (ArcMemo, Appendix A.2: concept abstraction and
# selection on GPT-4.1 at temperature 0.3, at most 1000 tokens; the solver has its own budget).
MEMORY_TEMPERATURE = 0.3
MEMORY_MAX_TOKENS = 1000


def add_lm_options(parser: argparse.ArgumentParser, *, memory_role: str = "memory building",
                   sampling: bool = True, memory_generation: bool = False, cache_home: str = "<run>") -> None:
    """The language-model options; ``sampling=False`` leaves ``--temperature`` to the caller (ARC's solver),
    ``memory_generation`` adds ``--memory-temperature`` and ``--memory-max-tokens`` (pass them to :func:`resolve_lms`)."""
    models = parser.add_argument_group("language models")
    models.add_argument("--lm", help="task LM: a DSPy/LiteLLM model string, or local:/path/model.gguf (default: embedded)")
    models.add_argument("--memory-lm", help=f"LM for {memory_role} (default: the task LM)")
    models.add_argument("--api-base", help="base URL for a self-hosted OpenAI-compatible server")
    if sampling:
        models.add_argument("--temperature", type=temperature, default=0.0, help="sampling temperature of LM calls (default 0)")
    models.add_argument("--max-tokens", type=whole("--max-tokens"), help="generation cap per call")
    if memory_generation:
        models.add_argument("--memory-temperature", type=temperature_of("--memory-temperature"), default=MEMORY_TEMPERATURE,
                            help=f"sampling temperature of {memory_role} (default {MEMORY_TEMPERATURE:g}, the paper's)")
        models.add_argument("--memory-max-tokens", type=whole("--memory-max-tokens"), default=MEMORY_MAX_TOKENS,
                            help=f"generation cap per call of {memory_role} (default {MEMORY_MAX_TOKENS}, the paper's; "
                                 "--max-tokens is the solver's)")
    models.add_argument("--no-cache", action="store_true", help="do not reuse cached LM answers")
    models.add_argument("--cache", type=Path, help=f"DSPy response cache directory (default: {cache_home}/dspy_cache)")


def add_fault_options(parser: argparse.ArgumentParser, unit: str, *, budget: bool = True, retry_failed: bool = False) -> None:
    """How LM faults are survived; ``budget`` adds ``--max-errors`` (``unit`` names the examples),
    ``retry_failed`` adds ``--retry-failed`` (for CLIs that continue run directories)."""
    faults = parser.add_argument_group("LM faults")
    faults.add_argument("--lm-retries", type=whole("--lm-retries", 0), default=3,
                        help="repeats of a failed LM call: rate limit, timeout, server error, empty or unparseable answer (default 3)")
    faults.add_argument("--backoff", type=number("--backoff"), default=1.0,
                        help="seconds before the first repeat of a rate limit, timeout or server error; doubles each time (default 1)")
    faults.add_argument("--lm-timeout", type=number("--lm-timeout", 0.001), help="seconds before an LM call counts as timed out")
    if budget:
        faults.add_argument("--max-errors", type=whole("--max-errors", 0),
                            help=f"stop the run once more than N {unit} have failed in this process (default: never)")
    if retry_failed:
        faults.add_argument("--retry-failed", action="store_true", help=f"when continuing a run, do its failed {unit} again")


def add_run_options(parser: argparse.ArgumentParser, unit: str, *, report: bool = True) -> None:
    run = parser.add_argument_group("run")
    run.add_argument("--threads", type=whole("--threads"), default=1, help=f"{unit} answered in parallel")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    if report:
        run.add_argument("--no-report", action="store_true", help="do not write report.md and its plots")


def resolve_lms(args: argparse.Namespace, *, slots: int | None = None, temperature: float | None = None,
                memory_temperature: float | None = None, memory_max_tokens: int | None = None,
                resolve: Callable[..., LMChoice] | None = None) -> tuple[LMChoice, LMChoice]:
    """The task LM and the memory LM the options name (the memory LM is the task LM unless ``--memory-lm``).

    ``slots``: requests a local server decodes together (default: ``--threads``); ``resolve``: how a
    model string becomes an LM (default :func:`memreason.lm.resolve_lm`). ``memory_temperature`` and
    ``memory_max_tokens`` give the memory role generation settings of its own (ARC); with either, the
    memory LM is ``--memory-lm`` resolved with them, or else a copy of the task LM with them (a local
    model's copy uses the same server). ``None`` keeps the task LM's setting; both ``None``: as the task LM."""
    resolve = resolve or resolve_lm
    choose = dict(api_base=args.api_base, max_tokens=args.max_tokens, cache=not args.no_cache,
                  temperature=args.temperature if temperature is None else temperature,
                  slots=max(SLOTS, slots if slots is not None else args.threads))
    if getattr(args, "lm_timeout", None) is not None:
        choose["timeout"] = args.lm_timeout
    task = resolve(args.lm, **choose)
    if memory_temperature is None and memory_max_tokens is None:
        memory = resolve(args.memory_lm, **choose) if args.memory_lm else task
        return task, memory
    own = dict(temperature=choose["temperature"] if memory_temperature is None else memory_temperature,
               max_tokens=args.max_tokens if memory_max_tokens is None else memory_max_tokens)
    memory = resolve(args.memory_lm, **{**choose, **own}) if args.memory_lm else with_generation(task, **own)
    return task, memory


def retry_policy(args: argparse.Namespace) -> RetryPolicy:
    return RetryPolicy(retries=args.lm_retries, backoff=getattr(args, "backoff", 1.0))


def check_out_path(path: Path | None, flag: str = "--out") -> None:
    """A run directory given by the user must be a directory (or not exist yet)."""
    if path is not None and path.exists() and not path.is_dir():
        raise UsageError(f"{flag} {path} is a file, not a directory")


def publish(run_dir: Path, results: dict, table: str, *, report: bool = True) -> None:
    """Save a finished run's ``results.json``, print its ``table``, write its report, say where it all is."""
    from .report import write_run_report  # matplotlib: only once there is something to plot

    write_json(run_dir / "results.json", results)
    print(table)
    if report:
        print(f"report: {write_run_report(run_dir)}")
    print(f"\nrun directory: {run_dir}")


def run_cli(command: Callable[[], int], *, bad_input: tuple[type[BaseException], ...] = (),
            continue_hint: str = "rerun the same command to continue") -> int:
    """Run a CLI ``command``: bad input prints one line and exits 2, a stopped run exits 1 (its work kept),
    Ctrl-C exits 130."""
    try:
        return command()
    except (UsageError, LMConfigError, *bad_input) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except RunAborted as exc:
        print(f"error: run stopped: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"interrupted; {continue_hint}", file=sys.stderr)
        return 130
