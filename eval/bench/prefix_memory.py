"""Memory's tokens evaluated once: a stream program's prompts with the memory before the problem, and after it.

    python -m memreason.eval.bench prefix_memory [--program cheatsheet_cu] --task rg:puzzle24 [--size 8]
    python -m memreason.eval.bench prefix_memory --lm openai/x --api-base http://127.0.0.1:8080/v1   # a running server

The program's memory is seeded from ``--seed-size`` seed problems' reference answers and then frozen; the same
``--size`` items are answered twice, one at a time, DSPy's response cache off and the server's slots erased
before each pass: first with the memory before the problem (the library's order: a llama-server reuses the KV
cache of the prompt prefix it shares with the previous request, so the memory is evaluated once), then with
the problem before the memory (every request evaluates the memory again). It prints, per pass, the prompt
tokens the server evaluated per item (llama-server's ``/metrics`` counter ``llamacpp:prompt_tokens_total``;
start llama-server with ``--metrics``) against the prompt tokens sent per item (the requests' ``usage``), and
last their ratio. A server that does not report the counter (an API, the test suite's stub server) gets the
tokens sent only.
"""

from __future__ import annotations

import argparse
import json
import time
import urllib.request
from typing import Any

from memreason.lm import LMConfigError
from memreason.lm.tokens import entry_usage

__all__ = ["evaluated_prompt_tokens", "main", "one_pass"]

COUNTER = "llamacpp:prompt_tokens_total"


def server_root(choice: Any, api_base: str | None) -> str | None:
    """The base URL of the server behind ``choice`` (a local model's llama-server, or ``api_base`` less ``/v1``)."""
    server = getattr(choice.lm, "server", None)
    if choice.local and server is not None:
        return f"http://127.0.0.1:{server.port}"
    return api_base.rstrip("/").removesuffix("/v1") if api_base else None


def evaluated_prompt_tokens(root: str | None) -> float | None:
    """The server's running count of prompt tokens it evaluated (cached prefixes not counted); None where it keeps none."""
    if root is None:
        return None
    try:
        with urllib.request.urlopen(f"{root}/metrics", timeout=30) as answer:
            for line in answer.read().decode().splitlines():
                if line.startswith(COUNTER):
                    return float(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def erase_slots(root: str | None) -> None:
    """Empty every slot's KV cache, where the server has slots (a pass then pays for its prefix again)."""
    if root is None:
        return
    try:
        with urllib.request.urlopen(f"{root}/slots", timeout=30) as answer:
            slots = json.load(answer)
        for slot in slots:
            request = urllib.request.Request(f"{root}/slots/{slot['id']}?action=erase", data=b"{}", method="POST")
            urllib.request.urlopen(request, timeout=30).close()
    except (OSError, ValueError, KeyError, TypeError):
        pass


def one_pass(program: Any, items: list, lm: Any, root: str | None) -> dict[str, Any]:
    """Answer ``items`` one at a time with ``program``'s frozen memory; what the server evaluated and what was sent."""
    import dspy

    erase_slots(root)
    before, started = evaluated_prompt_tokens(root), time.perf_counter()
    seen = len(lm.history)
    with dspy.context(lm=lm):
        for item in items:
            read = program.read(item.question, item.id)
            program.solve(item.question, read.text)
    after = evaluated_prompt_tokens(root)
    sent = sum(entry_usage(entry)[0] for entry in lm.history[seen:])
    return {
        "evaluated": None if before is None or after is None else (after - before) / len(items),
        "sent": sent / len(items),
        "seconds": time.perf_counter() - started,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memreason.eval.bench prefix_memory", description=__doc__.split("\n\n")[0])
    parser.add_argument("--program", default="cheatsheet_cu", help="a stream program (default cheatsheet_cu)")
    parser.add_argument("--task", required=True, help="a stream task, such as rg:puzzle24")
    parser.add_argument("--size", type=int, default=8, help="items answered in each pass (default 8)")
    parser.add_argument("--seed-size", type=int, default=8, help="seed problems written to memory first (default 8)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lm", help="local:/path/model.gguf (default: the embedded model), or a model at --api-base")
    parser.add_argument("--api-base", help="a running server (llama-server started with --metrics, or any API)")
    args = parser.parse_args(argv)
    from memreason.eval.harness.errors import UsageError
    from memreason.eval.tasks import get_task
    from memreason.lm import resolve_lm
    from memreason.programs import build_program
    from memreason.programs.registry import STREAM

    try:
        task = get_task(args.task)
        why = task.why_not(args.program) if task.kind == STREAM else f"{task.name} is not a stream task"
        if why:
            raise UsageError(f"{args.program} does not run on {task.name}: {why}")
        if args.size < 1 or args.seed_size < 0:
            raise UsageError("--size must be at least 1 and --seed-size at least 0")
        data = task.data({})
        items = data.items(args.seed, args.size, distinct=True)
        seeds = data.seed_items(args.seed, args.seed_size, avoid=items)
        choice = resolve_lm(args.lm, api_base=args.api_base, cache=False)
    except (UsageError, LMConfigError) as exc:
        print(f"error: {exc}")
        return 2
    import dspy

    from memreason.programs.stream import Lesson

    root = server_root(choice, args.api_base)
    seeded = build_program(args.program, task=task)
    with dspy.context(lm=choice.lm):
        for seed in seeds:
            seeded.learn(Lesson(seed.id, seed.question, seed.answer, True, "", "reference"))
    print(
        f"{args.program} on {task.name}: memory from {len(seeds)} seed problems, frozen; {len(items)} items a pass, one at a time"
    )
    passes = {}
    for name, first in (("memory first", True), ("problem first", False)):
        program = build_program(args.program, task=task, memory_first=first)
        program.load_memory(seeded.memory_state())
        passes[name] = p = one_pass(program, items, choice.lm, root)
        evaluated = "not reported" if p["evaluated"] is None else f"{p['evaluated']:8.0f}"
        print(f"{name:>14}: prompt tokens evaluated per item {evaluated}, sent per item {p['sent']:8.0f}, {p['seconds']:6.1f} s")
    a, b = passes["problem first"], passes["memory first"]
    if a["evaluated"] and b["evaluated"]:
        print(f"prompt tokens evaluated per item, ratio (problem first / memory first): {a['evaluated'] / b['evaluated']:.2f}x")
    else:
        print(f"the server reports no {COUNTER}: only the tokens sent are shown")
    return 0
