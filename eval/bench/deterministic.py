"""Equal prompts, equal answers? The embedded server's default mode against its deterministic mode, in one run.

    python -m memreason.eval.bench deterministic --task rg:puzzle24 [--size 8] [--rounds 2] [--threads 8]

The same ``--size`` prompts (the stream solver's, no memory, at temperature 0) are answered ``--rounds`` times in
each mode, DSPy's response cache off, ``--threads`` requests at a time: first by the server as every run starts it
(``--threads`` slots decoding together, each slot reusing the cached prefix of its last prompt), then by the same
server restarted in its deterministic mode (one slot, no prompt cache: :mod:`memreason.lm.server`). It prints, per
mode, the prompts whose answers (reasoning and answer, as text) were not the same in every round, and the wall time,
items and completion tokens per second of each round; last the deterministic mode's throughput over the default's.
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from memreason.lm import LMConfigError, resolve_lm
from memreason.programs.stream import StreamSolver
from memreason.programs.stream.solver import EMPTY

__all__ = ["main", "one_round"]


def one_round(choice: Any, problems: list[str], *, threads: int) -> tuple[list[str], float, int]:
    """(each problem's completion as the server returned it, the wall seconds, the completion tokens the server decoded)
    for one round, ``threads`` at once (``choice``: a local model's LM, whose server counts its tokens). The prompts are
    the stream solver's, formatted by the run's adapter; the completions are compared as text, parsed or not."""
    adapter = choice.adapter()
    signature = StreamSolver("text", retries=0).solve.predict.signature  # with its reasoning field, as runs ask
    stats = choice.lm.server.stats

    def answer(problem: str) -> str:
        messages = adapter.format(signature, demos=[], inputs={"memory": EMPTY, "problem": problem})
        out = choice.lm(messages=messages)[0]
        return out if isinstance(out, str) else str(out.get("text"))

    before = stats.completion_tokens
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        answers = list(pool.map(answer, problems))
    return answers, time.perf_counter() - started, stats.completion_tokens - before


def differing(rounds: list[list[str]]) -> int:
    """How many prompts were not answered the same in every round."""
    return sum(1 for answers in zip(*rounds) if len(set(answers)) > 1)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m memreason.eval.bench deterministic", description=__doc__.split("\n")[0])
    parser.add_argument("--lm", default=None, help="a local model (default: the embedded one; local:PATH.gguf)")
    parser.add_argument("--task", required=True, help="a stream task whose problems are asked, such as rg:puzzle24")
    parser.add_argument("--seed", type=int, default=101, help="the items' seed (default 101)")
    parser.add_argument("--size", type=int, default=8, help="prompts (default 8)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds in each mode (default 2)")
    parser.add_argument("--threads", type=int, default=8, help="requests at a time (default 8)")
    parser.add_argument("--max-tokens", type=int, default=256, help="each answer's cap (default 256)")
    parser.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    if min(args.size, args.rounds, args.threads, args.max_tokens) < 1 or args.rounds < 2:
        parser.error("--size, --threads and --max-tokens must be at least 1, --rounds at least 2")
    if args.lm is not None and not args.lm.startswith("local:"):
        parser.exit(2, f"error: the deterministic mode is a local model's: give local:PATH.gguf, not {args.lm}\n")
    from memreason.eval.harness.errors import UsageError
    from memreason.eval.tasks import get_task
    from memreason.programs.registry import STREAM

    try:
        task = get_task(args.task)
        if task.kind != STREAM:
            raise UsageError(f"{task.name} is not a stream task")
        problems = [item.question for item in task.data({}).items(args.seed, args.size, distinct=True)]
    except UsageError as exc:
        parser.exit(2, f"error: {exc}\n")
    figures: dict[str, Any] = {"task": args.task, "seed": args.seed, "size": args.size, "threads": args.threads, "modes": {}}
    for mode in ("default", "deterministic"):
        try:
            choice = resolve_lm(
                args.lm, cache=False, slots=args.threads, max_tokens=args.max_tokens, deterministic=mode == "deterministic"
            )
        except LMConfigError as exc:
            parser.exit(2, f"error: {exc}\n")
        rounds, walls, tokens = [], [], []
        for index in range(args.rounds):
            answers, wall, completion = one_round(choice, problems, threads=args.threads)
            rounds.append(answers)
            walls.append(round(wall, 1))
            tokens.append(completion)
            print(f"{mode} round {index + 1}: {wall:.1f} s, {len(problems) / wall:.3f} items/s, {completion / wall:.1f} tokens/s")
        figures["modes"][mode] = {
            "differing": differing(rounds),
            "walls": walls,
            "completion_tokens": tokens,
            "tokens_per_second": round(sum(tokens) / max(sum(walls), 1e-9), 2),
        }
        print(f"{mode}: {differing(rounds)} of {len(problems)} prompts answered differently across {args.rounds} rounds")
    default, fixed = figures["modes"]["default"], figures["modes"]["deterministic"]
    figures["throughput_ratio"] = round(fixed["tokens_per_second"] / max(default["tokens_per_second"], 1e-9), 3)
    print(f"deterministic / default completion tokens per second: {figures['throughput_ratio']:.3f}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(figures, out, indent=1)
    return 0
