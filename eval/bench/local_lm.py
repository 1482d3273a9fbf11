"""Speed of the embedded model, and what reusing the shared prompt prefix buys.

    python -m eval.bench local_lm [--scenes 20] [--program episodic] [--level 2]

Prints prompt and generated tokens per second, then evaluates the same test scenes
twice in one run, with llama.cpp's prefix reuse on and off (the KV cache reset before
every call), and prints both wall times and their ratio. DSPy's response cache is off,
so both passes really run the model.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from dspy.lm15 import Config, Message, Request

from ..experience_transfer import ExperienceTransferConfig, evaluate_experience_transfer
from ..lm import LMConfigError, resolve_lm


def _timed(engine, text: str, max_tokens: int) -> tuple[float, dict]:
    request = Request(model="local", messages=(Message.user(text),), config=Config(max_tokens=max_tokens, temperature=0.0))
    started = time.perf_counter()
    response = engine.complete(request)
    return time.perf_counter() - started, {"prompt": response.usage.input_tokens, "completion": response.usage.output_tokens}


def token_rates(engine) -> tuple[float, float]:
    """(prompt tokens/s on a fresh ~600-token prompt, generated tokens/s on a short prompt)."""
    engine.reuse_prefix = False
    _timed(engine, "warm up", 1)
    long_prompt = "Summarise the following list. " + " ".join(f"item {i} is a {['red','blue'][i % 2]} square;" for i in range(90))
    seconds, usage = _timed(engine, long_prompt, 1)
    prompt_rate = usage["prompt"] / seconds
    short = "Write the numbers from 1 to 300, separated by commas."
    seconds, usage = _timed(engine, short, 160)
    generation_seconds = seconds - usage["prompt"] / prompt_rate
    engine.reuse_prefix = True
    return prompt_rate, usage["completion"] / generation_seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.bench local_lm", description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenes", type=int, default=20)
    parser.add_argument("--program", default="episodic")
    parser.add_argument("--level", type=int, default=2)
    parser.add_argument("--lm", help="local:/path/model.gguf (default: the embedded model)")
    args = parser.parse_args(argv)
    try:
        choice = resolve_lm(args.lm, cache=False)
    except LMConfigError as exc:
        print(f"error: {exc}")
        return 2
    if not choice.local:
        print("error: this benchmark measures an in-process model (--lm local:/path or none)")
        return 2
    engine = choice.lm.engine
    prompt_rate, generation_rate = token_rates(engine)
    print(f"model: {Path(engine.model_path).name}, {engine.n_threads} threads")
    print(f"prompt tokens/s:    {prompt_rate:7.1f}")
    print(f"generated tokens/s: {generation_rate:7.1f}")

    config = ExperienceTransferConfig(program=args.program, level=args.level, limit=args.scenes)
    seconds = {}
    for reuse in (False, True):
        engine.reuse_prefix = reuse
        before = engine.stats.reused_prompt_tokens
        with tempfile.TemporaryDirectory() as run_dir:
            results = evaluate_experience_transfer(config, task=choice, memory=choice, run_dir=Path(run_dir), progress=False)
        seconds[reuse] = results["wall_seconds"]
        tokens = results["tokens"]["task"]
        print(
            f"{args.program} L{args.level}, {args.scenes} scenes, prefix reuse {'on ' if reuse else 'off'}: "
            f"{seconds[reuse]:6.1f} s, {tokens['prompt']:,} prompt tokens of which "
            f"{engine.stats.reused_prompt_tokens - before:,} reused, accuracy {results['accuracy']['mean']:.0%}"
        )
    print(f"wall-time ratio (off / on): {seconds[False] / seconds[True]:.2f}x")
    return 0
