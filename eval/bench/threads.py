"""``python -m memreason.eval.bench threads``: examples per second at --threads 1, 4 and 16 against a slow API.

Starts the loopback stub server (:mod:`memreason.lm.stub_server`) in its own process with
a fixed latency and no faults, then times the Experience-Transfer harness answering
scenes with the ``episodic`` program through DSPy's OpenAI client, cache off. A server
that takes ``latency`` seconds per answer allows at most ``threads / latency`` examples
per second; the ratio to that ideal is what the harness's own overhead leaves.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m memreason.eval.bench threads", description=__doc__.split("\n")[0])
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the server takes per answer (default 0.2)")
    parser.add_argument("--threads", default="1,4,16", help="thread counts to time (default 1,4,16)")
    parser.add_argument("--rounds", type=int, default=8, help="examples per thread at each count, at most 150 in all (default 8)")
    args = parser.parse_args(argv)
    counts = [int(t) for t in args.threads.split(",")]

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("OPENAI_API_KEY", "stub-key")
    import dspy

    from memreason.eval.experience_transfer.run import ExperienceTransferConfig, evaluate_experience_transfer
    from memreason.lm import resolve_lm

    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "memreason.lm.stub_server",
            "--latency",
            str(args.latency),
            "--fail-rate",
            "0",
            "--lifetime",
            "900",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = server.stdout.readline().strip()
        if not url.startswith("http"):
            print("error: the stub server did not start", file=sys.stderr)
            return 1
        task = resolve_lm("openai/stub", api_base=url, cache=False, timeout=30)
        data = ExperienceTransferConfig(program="episodic", level=1).load_data()
        rows = []
        with tempfile.TemporaryDirectory() as tmp:
            dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False, disk_cache_dir=tmp)

            def timed(threads: int, limit: int, name: str) -> float:
                config = ExperienceTransferConfig(program="episodic", level=1, limit=limit, threads=threads)
                started = time.perf_counter()
                evaluate_experience_transfer(config, task=task, memory=task, run_dir=Path(tmp) / name, progress=False, data=data)
                return time.perf_counter() - started

            timed(4, 4, "warmup")  # imports, connections
            for threads in counts:
                examples = min(len(data.test), threads * args.rounds)
                seconds = timed(threads, examples, f"t{threads}")
                rate = examples / seconds
                ideal = threads / args.latency
                rows.append((threads, examples, seconds, rate, ideal, rate / ideal))
        print(
            f"threads benchmark: stub server with {args.latency * 1000:.0f} ms latency, episodic program, Experience-Transfer L1, cache off"
        )
        print(f"{'threads':>7}  {'examples':>8}  {'seconds':>7}  {'examples/s':>10}  {'ideal/s':>7}  {'ratio':>5}")
        for threads, examples, seconds, rate, ideal, ratio in rows:
            print(f"{threads:>7}  {examples:>8}  {seconds:>7.2f}  {rate:>10.1f}  {ideal:>7.1f}  {ratio:>5.2f}")
        print("ideal = threads / latency; goal: ratio >= 0.8 at 16 threads")
    finally:
        server.terminate()
        server.wait(timeout=10)
    return 0
