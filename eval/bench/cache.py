"""``python -m memreason.eval.bench cache``: replaying cached answers, this library's JSON cache against DSPy's pickles.

Writes the same answers (records shaped as DSPy stores an OpenAI-compatible chat answer) into
three caches, each in its own temporary directory: this library's (:mod:`memreason.lm.response_cache`,
JSON in SQLite), DSPy's own disk cache (pickles in ``diskcache``, unrestricted, its default) and
DSPy's with its restricted unpickler. Then, for each, it opens the cache afresh (nothing in memory,
as a resumed run finds it) and times ``get`` of every answer from disk, then every answer again
(from memory), checking that each replay equals what was stored. Rounds alternate between the
caches; the best round of each is reported, and the ratio of DSPy's time to ours (above 1: ours
is faster).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path


def answer(i: int) -> dict:
    """A cached answer as DSPy keeps one: the response, its outputs and usage (about 1.5 KB of JSON)."""
    text = (
        f"[[ ## reasoning ## ]]\nScene {i}: "
        + "the red square on white is normal; " * (i % 7 + 3)
        + f"\n\n[[ ## count ## ]]\n{i % 5}"
    )
    usage = {"input_tokens": 500 + i % 97, "output_tokens": 11 + i % 13, "total_tokens": 511 + i % 97 + i % 13}
    return {
        "_dspy_format": "dspy-lm15-result-v1",
        "responses": [
            {
                "id": f"chatcmpl-{i:012x}",
                "model": "stub",
                "message": {"role": "assistant", "parts": [{"type": "text", "text": text}]},
                "finish_reason": "stop",
                "usage": usage,
                "provider_data": {"id": f"chatcmpl-{i:012x}", "object": "chat.completion", "created": 0, "model": "stub"},
            }
        ],
        "outputs": [text],
        "usage": {"prompt_tokens": usage["input_tokens"], "completion_tokens": usage["output_tokens"]},
        "cost": None,
        "cost_details": {"kind": "unknown", "reason": "a billed token dimension has no known rate"},
        "raw": None,
        "response_model": "stub",
    }


def request(i: int) -> dict:
    return {"model": "openai/stub", "messages": [{"role": "user", "content": f"scene {i}"}], "temperature": 0.0}


def opener(kind: str, directory: Path):
    """A function that opens the ``kind`` cache in ``directory`` afresh (empty memory)."""
    from dspy.clients.cache import Cache

    from memreason.lm.response_cache import data_cache_class

    if kind == "memreason (JSON)":
        return lambda: data_cache_class()(directory)
    restricted = kind == "DSPy, restricted pickle"
    return lambda: Cache(
        enable_disk_cache=True, enable_memory_cache=True, disk_cache_dir=str(directory), restrict_pickle=restricted
    )


def close(cache) -> None:
    disk = getattr(cache, "disk_cache", None)
    if hasattr(disk, "close"):
        disk.close()


def replay(open_cache, requests: list[dict], expected: list[str]) -> tuple[float, float]:
    """Seconds to get every answer from disk (a cache just opened), then from memory; checks each replay."""
    cache = open_cache()
    try:
        started = time.perf_counter()
        disk = [cache.get(r) for r in requests]
        from_disk = time.perf_counter() - started
        started = time.perf_counter()
        memory = [cache.get(r) for r in requests]
        from_memory = time.perf_counter() - started
    finally:
        close(cache)
    for got in (disk, memory):
        if [json.dumps(a) for a in got] != expected:
            raise SystemExit("error: a replayed answer differs from the one stored")
    return from_disk, from_memory


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m memreason.eval.bench cache", description=__doc__.split("\n")[0])
    parser.add_argument("--answers", type=int, default=1000, help="cached answers to replay (default 1000)")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds per cache, the best reported (default 5)")
    args = parser.parse_args(argv)
    if args.answers < 1 or args.rounds < 1:
        print("error: --answers and --rounds must be at least 1", file=sys.stderr)
        return 2
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

    kinds = ["memreason (JSON)", "DSPy, pickle", "DSPy, restricted pickle"]
    requests = [request(i) for i in range(args.answers)]
    answers = [answer(i) for i in range(args.answers)]
    expected = [json.dumps(a) for a in answers]
    best: dict[str, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        opens = {kind: opener(kind, Path(tmp) / str(n)) for n, kind in enumerate(kinds)}
        for kind in kinds:
            cache = opens[kind]()
            for r, a in zip(requests, answers):
                cache.put(r, a)
            close(cache)
        for _ in range(args.rounds):
            for kind in kinds:
                disk, memory = replay(opens[kind], requests, expected)
                was = best.get(kind, (float("inf"), float("inf")))
                best[kind] = (min(was[0], disk), min(was[1], memory))

    ours = best[kinds[0]]
    print(f"cache benchmark: {args.answers} cached answers replayed, best of {args.rounds} rounds, every replay checked")
    print(f"{'cache':<24}  {'disk s':>7}  {'answers/s':>9}  {'memory s':>8}  {'vs ours (disk)':>14}  {'vs ours (memory)':>16}")
    for kind in kinds:
        disk, memory = best[kind]
        print(
            f"{kind:<24}  {disk:>7.3f}  {args.answers / disk:>9.0f}  {memory:>8.3f}  {disk / ours[0]:>14.2f}  {memory / ours[1]:>16.2f}"
        )
    print("vs ours: that cache's seconds over ours (above 1: ours is faster); goal: no slower than DSPy's")
    return 0
