"""``python -m memreason.eval.bench rate_limits``: ``--rpm`` against a provider that enforces its own limit.

Starts the loopback stub server (:mod:`memreason.lm.stub_server`) in its own process, accepting at most
``--rpm`` requests in any ``--window`` seconds and answering the others 429 with ``retry-after``; then
runs the same Experience-Transfer evaluation twice through the command line (``episodic``, Level 1, one
LM call per scene, ``--threads 16``, cache off), each against a fresh server: once with ``--rpm`` and once
without. From the server's own log (the arrival time of every request, refused ones included) it prints,
for each run, the most requests that arrived in any window, the 429s met, the scenes answered and failed,
the wall time, and what the limiter held back.

``--window`` scales the clock down (``--window 2 --rpm 5``: five requests per two seconds, for tests); the
figures of the docs use the real minute.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m memreason.eval.bench rate_limits", description=__doc__.split("\n")[0])
    parser.add_argument("--rpm", type=int, default=60, help="the cap, and the server's own limit, per window (default 60)")
    parser.add_argument("--window", type=float, default=60.0, help="seconds of the window (default 60: per minute)")
    parser.add_argument("--scenes", type=int, default=120, help="scenes answered, one request each (default 120)")
    parser.add_argument("--threads", type=int, default=16, help="scenes answered at once (default 16)")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the server takes per answer (default 0.2)")
    parser.add_argument("--json", type=Path, help="also write the figures here as JSON")
    args = parser.parse_args(argv)

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("OPENAI_API_KEY", "stub-key")
    from memreason.eval.cli import main as eval_main
    from memreason.lm import rate

    window, rate.WINDOW = rate.WINDOW, args.window  # the limiters the runs make count per this window
    try:
        rows = _runs(args, eval_main)
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        rate.WINDOW = window
    print(
        f"rate limits benchmark: stub server accepting {args.rpm} requests per {args.window:g} s (429 + retry-after past it), "
        f"{args.latency * 1000:.0f} ms latency; episodic, Experience-Transfer L1, {args.scenes} scenes, "
        f"--threads {args.threads}, cache off"
    )
    header = ["run", "exit", "requests", f"most in {args.window:g} s", "429s", "scenes", "failed", "wall s", "held s", "pauses"]
    keys = ["run", "exit", "requests", "most_in_a_window", "refused_429", "scenes", "failed", "wall_seconds", "held_seconds"]
    keys.append("provider_pauses")
    widths = [max(len(h), *(len(str(row[k])) for row in rows)) for h, k in zip(header, keys)]
    print("  ".join(h.rjust(w) for h, w in zip(header, widths)))
    for row in rows:
        print("  ".join(str(row[k]).rjust(w) for k, w in zip(keys, widths)))
    print(
        "requests: what reached the server, 429s included; most in a window: from its log's arrival times; "
        "wall s: the run's own; held s: seconds during which the limiter held a request back; pauses: 429s that "
        "paused every thread"
    )
    if args.json:
        args.json.write_text(json.dumps({"rpm": args.rpm, "window": args.window, "rows": rows}, indent=1))
    return 0


def _runs(args: argparse.Namespace, eval_main) -> list[dict]:
    """Each run's figures: with the cap, then without, each against a fresh server."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for capped in (True, False):
            server = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "memreason.lm.stub_server",
                    *("--latency", str(args.latency), "--fail-rate", "0", "--lifetime", "1800"),
                    *("--limit", str(args.rpm), "--limit-window", str(args.window)),
                ],
                stdout=subprocess.PIPE,
                text=True,
            )
            try:
                url = server.stdout.readline().strip()
                if not url.startswith("http"):
                    raise RuntimeError("the stub server did not start")
                out = Path(tmp) / ("capped" if capped else "uncapped")
                command = ["episodic", "--level", "1", "--limit", str(args.scenes), "--lm", "openai/stub", "--api-base", url]
                command += ["--threads", str(args.threads), "--no-cache", "--no-progress", "--no-report", "--out", str(out)]
                command += ["--rpm", str(args.rpm)] if capped else []
                with contextlib.redirect_stdout(io.StringIO()):  # the command's own table: the figures below say it
                    code = eval_main(command)
                with urllib.request.urlopen(f"{url}/stats", timeout=30) as answer:
                    log = json.load(answer)["requests"]
            finally:
                server.terminate()
                server.wait(timeout=10)
            results = json.loads((out / "results.json").read_text()) if (out / "results.json").exists() else {}
            execution = results.get("execution") or {}
            limits = (execution.get("rate_limits") or {}).get("task") or {}
            rows.append(
                {
                    "run": f"--rpm {args.rpm}" if capped else "no cap",
                    "exit": code,
                    "requests": len(log),
                    "most_in_a_window": most_in_window([r["at"] for r in log], args.window),
                    "refused_429": sum(1 for r in log if r.get("limited")),
                    "scenes": results.get("examples"),
                    "failed": sum((results.get("failures") or {}).values()),
                    "rate_limit_faults": (results.get("faults") or {}).get("rate_limit", 0),
                    "wall_seconds": round(results.get("wall_seconds") or 0.0, 1),
                    "held_seconds": limits.get("held_seconds", 0.0),
                    "provider_pauses": limits.get("provider_pauses", 0),
                }
            )
    return rows


def most_in_window(arrivals: list[float], window: float) -> int:
    """The most of ``arrivals`` (seconds) that fall in any ``window`` seconds, [t, t + window)."""
    times, most, first = sorted(arrivals), 0, 0
    for last, at in enumerate(times):
        while times[first] <= at - window:
            first += 1
        most = max(most, last - first + 1)
    return most
