"""Speed of the embedded model on its local llama-server, alone and with concurrent requests.

    python -m memreason.eval.bench local_lm [--scenes 20] [--level 2] [--program episodic_cot] [--lm local:/path.gguf]

One run, one server (16 slots), DSPy's response cache off. It prints:

- prompt tokens/s on a fresh prompt of about 600 tokens;
- generated tokens/s in aggregate with 1, 4 and 16 requests at once (128 tokens each);
- the wall time of the same test scenes answered with ``--threads 1``, ``8`` and ``16``
  (the slots' caches are cleared before each pass, so each pays for its prefix);
- and, last, the two ratios: ``throughput ratio (16 concurrent / 1)`` and
  ``scene wall-time ratio (threads 1 / 8)``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from memreason.lm import LlamaServer, LMConfigError

from ..experience_transfer import ExperienceTransferConfig, evaluate_experience_transfer
from . import resolve_local

SLOTS = 16


def _complete(server: LlamaServer, text: str, max_tokens: int) -> dict:
    body = {
        "messages": [{"role": "user", "content": text}],
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "ignore_eos": True,
        "cache_prompt": False,
    }
    request = urllib.request.Request(
        f"{server.url}/chat/completions", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=900) as answer:
        return json.load(answer)


def prompt_rate(server: LlamaServer) -> float:
    """Prompt tokens/s on a ~600-token prompt no slot has seen (the server's own timing)."""
    text = f"Summarise this list ({time.time()}). " + " ".join(
        f"item {i} is a {['red', 'blue', 'green'][i % 3]} square;" for i in range(90)
    )
    return _complete(server, text, 1)["timings"]["prompt_per_second"]


def generation_rate(server: LlamaServer, concurrent: int, tokens: int = 128) -> float:
    """Generated tokens/s summed over ``concurrent`` requests sent at once."""
    prompts = [f"Count from {100 * i} upwards, one number per line." for i in range(concurrent)]
    started = time.perf_counter()
    with ThreadPoolExecutor(concurrent) as pool:
        answers = list(pool.map(lambda text: _complete(server, text, tokens), prompts))
    seconds = time.perf_counter() - started
    return sum(a["usage"]["completion_tokens"] for a in answers) / seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memreason.eval.bench local_lm", description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenes", type=int, default=20)
    parser.add_argument("--program", default="episodic_cot")
    parser.add_argument("--level", type=int, default=2)
    parser.add_argument("--lm", help="local:/path/model.gguf (default: the embedded model)")
    args = parser.parse_args(argv)
    try:
        choice = resolve_local(args.lm, cache=False, slots=SLOTS)
    except LMConfigError as exc:
        print(f"error: {exc}")
        return 2
    server = choice.lm.server
    print(f"model: {server.model.name}; llama-server with {server.slots} slots, repacking {'on' if server.repack else 'off'}")
    _complete(server, "warm up", 1)
    print(f"prompt tokens/s: {prompt_rate(server):7.1f}")
    rates = {}
    for concurrent in (1, 4, 16):
        rates[concurrent] = generation_rate(server, concurrent)
        print(f"generated tokens/s, {concurrent:2d} concurrent: {rates[concurrent]:7.1f}")

    seconds = {}
    for threads in (1, 8, 16):
        server.erase_slots()
        config = ExperienceTransferConfig(program=args.program, level=args.level, limit=args.scenes, threads=threads)
        with tempfile.TemporaryDirectory() as run_dir:
            results = evaluate_experience_transfer(config, task=choice, memory=choice, run_dir=Path(run_dir), progress=False)
        seconds[threads] = results["wall_seconds"]
        tokens = results["tokens"]["task"]
        print(
            f"{args.program} L{args.level}, {args.scenes} scenes, --threads {threads:2d}: {seconds[threads]:6.1f} s, "
            f"{tokens['prompt']:,} + {tokens['completion']:,} tokens, accuracy {results['accuracy']['mean']:.0%}"
        )
    print(f"scene wall-time ratio (threads 1 / 16): {seconds[1] / seconds[16]:.2f}x")
    print(f"throughput ratio (16 concurrent / 1): {rates[16] / rates[1]:.2f}x")
    print(f"scene wall-time ratio (threads 1 / 8): {seconds[1] / seconds[8]:.2f}x")
    return 0
