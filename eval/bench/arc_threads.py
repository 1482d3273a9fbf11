"""ARC tasks at once on a local model: tasks per minute at several ``--threads``, side by side in one run.

    python -m memreason.eval.bench arc_threads [--split arc1d] [--limit 16] [--threads 4,8] [--attempts 2]

An ARC run gives the local server a slot for each attempt of each task at once (threads x attempts);
with ``--one-prefill`` a task's attempts are one request with n = attempts. On 2 cores, prefill is
serial but decoding many sequences together is cheaper per token, so more tasks at once may finish
more tasks per minute. This runs the same tasks once per ``--threads`` value, on one server with
slots for the largest, DSPy's response cache off and the slots' caches erased before each pass,
and prints per pass the wall time, tasks per minute, the prompt tokens the server evaluated per
attempt and the completion tokens, and last each pass's tasks per minute over the first's. The programs are sampled
(temperature 0.7), so scores and completion lengths differ a little between passes.
"""

from __future__ import annotations

import argparse

from memreason.sandbox import Limits, Sandbox

from ..arc.config import ArcConfig
from .prefill import one_pass, tasks_and_model


def threads_list(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--threads must be whole numbers separated by commas, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"--threads must each be at least 1, got {text!r}")
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memreason.eval.bench arc_threads", description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", default="arc1d", help="an ARC split (default arc1d: one-row tasks, short prompts)")
    parser.add_argument("--limit", type=int, default=16, help="tasks (default 16)")
    parser.add_argument("--threads", type=threads_list, default=[4, 8], help="tasks at once, one pass each (default 4,8)")
    parser.add_argument("--attempts", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=512, help="the solver's cap (default 512)")
    parser.add_argument("--apart", action="store_true", help="one request per attempt (default: --one-prefill)")
    parser.add_argument("--program", default="baseline")
    parser.add_argument("--memory", help="a memory file for a memory program")
    parser.add_argument("--lm", help="local:/path/model.gguf (default: the embedded model)")
    args = parser.parse_args(argv)
    if args.limit < 1 or args.attempts < 1:
        print("error: --limit and --attempts must be at least 1")
        return 2
    config = dict(program=args.program, split=args.split, limit=args.limit, attempts=args.attempts)
    loaded = tasks_and_model(config, args.lm, max_tokens=args.max_tokens, slots=max(args.threads) * args.attempts)
    if loaded is None:
        return 2
    tasks, choice = loaded
    server = choice.lm.server
    print(f"model: {server.model.name}; llama-server with {server.slots} slots")
    print(
        f"{args.program} on {len(tasks)} {args.split} tasks, {args.attempts} attempts each, no retries, "
        f"{'one request per attempt' if args.apart else '--one-prefill'}, --max-tokens {args.max_tokens}, cache off"
    )
    passes = []
    with Sandbox(workers=2, limits=Limits(wall_seconds=4)) as sandbox:
        for threads in args.threads:
            run = ArcConfig(**config, threads=threads, memory=args.memory, one_prefill=not args.apart)
            p = one_pass(choice, run, tasks, sandbox)
            passes.append((threads, p))
            print(
                f"--threads {threads:>2}: {p['seconds']:7.1f} s, {p['per_minute']:5.2f} tasks/min; prompt tokens evaluated "
                f"{p['evaluated']:,.0f} per attempt, completion {p['tokens']['completion']:,}; official {p['official']:.0%}"
            )
    first_threads, first = passes[0]
    for threads, p in passes[1:]:
        print(f"tasks per minute, --threads {threads} / --threads {first_threads}: {p['per_minute'] / first['per_minute']:.2f}x")
    return 0
