"""One prompt evaluation per ARC task instead of one per attempt: the embedded model, before and after.

    python -m memreason.eval.bench prefill [--split arc1d] [--limit 8] [--attempts 2] [--program baseline]

A task's attempts share one prompt. Before (``apart``), each attempt is its own request, sent
at once (``parallel`` attempts, as with ``--threads`` > 1), so each slot evaluates the whole prompt; after
(``together``, the solver's ``one_prefill``), one request asks for ``n`` = attempts answers
and llama-server evaluates the prompt once and decodes the answers together. One run, one
server, DSPy's response cache off, the slots' caches erased before each pass, the same tasks
in both passes. It prints, per pass, the prompt tokens the server really evaluated (its
``/metrics`` counter, not the requests' ``usage``) per attempt, the wall time and tasks per
minute, and, last, the two ratios (apart / together). The sampled programs differ between
the passes (one request draws them differently), so completion tokens differ a little too.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import urllib.request
from pathlib import Path

from memreason.datasets.arc import ArcDataError
from memreason.lm import LlamaServer, LMConfigError
from memreason.sandbox import Limits, Sandbox

from ..arc.config import ArcConfig
from ..arc.run import evaluate_arc
from . import resolve_local


def evaluated_prompt_tokens(server: LlamaServer) -> float:
    """The server's running count of prompt tokens it evaluated (cached prefixes not counted)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=30) as answer:
        for line in answer.read().decode().splitlines():
            if line.startswith("llamacpp:prompt_tokens_total"):
                return float(line.split()[1])
    raise RuntimeError("llama-server's /metrics has no llamacpp:prompt_tokens_total")


def one_pass(choice, config: ArcConfig, tasks, sandbox) -> dict:
    server = choice.lm.server
    server.erase_slots()
    before, started = evaluated_prompt_tokens(server), time.perf_counter()
    with tempfile.TemporaryDirectory() as run_dir:
        results = evaluate_arc(
            config, task=choice, memory=choice, run_dir=Path(run_dir), sandbox=sandbox, progress=False, tasks=tasks
        )
    seconds = time.perf_counter() - started
    attempts = len(tasks) * config.attempts
    return {
        "evaluated": (evaluated_prompt_tokens(server) - before) / attempts,
        "seconds": seconds,
        "per_minute": 60 * len(tasks) / seconds,
        "tokens": results["tokens"]["task"],
        "official": results["official_score"],
    }


def tasks_and_model(config: dict, lm: str | None, **options) -> tuple[list, object] | None:
    """An ARC benchmark's tasks (``config``: :class:`ArcConfig` fields) and its local model, the tasks loaded first so
    bad input fails before the model loads; None, with the error printed in one line, on bad input."""
    try:
        return ArcConfig(**config).load_tasks(), resolve_local(lm, cache=False, **options)
    except (ArcDataError, LMConfigError) as exc:
        print(f"error: {exc}")
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memreason.eval.bench prefill", description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", default="arc1d", help="an ARC split (default arc1d: one-row tasks, short prompts)")
    parser.add_argument("--limit", type=int, default=8, help="tasks (default 8)")
    parser.add_argument("--attempts", type=int, default=2)
    parser.add_argument("--program", default="baseline")
    parser.add_argument("--threads", type=int, default=2, help="tasks at once (default 2; attempts go at once when > 1)")
    parser.add_argument("--memory", help="a memory file for a memory program")
    parser.add_argument("--lm", help="local:/path/model.gguf (default: the embedded model)")
    args = parser.parse_args(argv)
    config = {
        "program": args.program,
        "split": args.split,
        "limit": args.limit,
        "attempts": args.attempts,
        "threads": args.threads,
    }
    loaded = tasks_and_model(config, args.lm)
    if loaded is None:
        return 2
    tasks, choice = loaded
    server = choice.lm.server
    print(f"model: {server.model.name}; llama-server with {server.slots} slots")
    print(
        f"{args.program} on {len(tasks)} {args.split} tasks, {args.attempts} attempts each, no retries, "
        f"--threads {args.threads}, cache off"
    )
    passes = {}
    with Sandbox(workers=2, limits=Limits(wall_seconds=4)) as sandbox:
        for name, together in (("apart", False), ("together", True)):
            passes[name] = one_pass(choice, ArcConfig(**config, memory=args.memory, one_prefill=together), tasks, sandbox)
            p = passes[name]
            print(
                f"{name:>8}: {p['evaluated']:7.0f} prompt tokens evaluated per attempt, {p['seconds']:6.1f} s, "
                f"{p['per_minute']:5.2f} tasks/min; requests' tokens {p['tokens']['prompt']:,} + "
                f"{p['tokens']['completion']:,}; official {p['official']:.0%}"
            )
    apart, together = passes["apart"], passes["together"]
    print(f"prompt tokens evaluated per attempt, ratio (apart / together): {apart['evaluated'] / together['evaluated']:.2f}x")
    print(f"tasks per minute, ratio (together / apart): {together['per_minute'] / apart['per_minute']:.2f}x")
    return 0
