"""``python -m memreason.lm.stub_server``: run the loopback stub server until ``--lifetime``; prints its base URL.

With ``--as-llama-server`` it stands in for llama.cpp's ``llama-server`` (``--port P``; its
other flags are accepted and ignored), so a test can point ``MEMREASON_LLAMA_SERVER`` at a
script that runs this.
"""

from __future__ import annotations

import argparse
import sys
import time

from . import StubServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m memreason.lm.stub_server",
        description="A loopback OpenAI-compatible server with latency and seeded faults.",
    )
    parser.add_argument("--latency", type=float, default=0.2, help="seconds before every answer (default 0.2)")
    parser.add_argument("--fail-rate", type=float, default=0.2, help="fraction of requests that fail (default 0.2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hang", type=float, default=5.0, help="seconds a timeout fault hangs (default 5)")
    parser.add_argument("--lifetime", type=float, default=600.0, help="stop after this many seconds (default 600)")
    parser.add_argument("--port", type=int, default=0, help="loopback port (default: a free one)")
    parser.add_argument("--frozen", action="store_true", help="no decode step ever shows in /metrics (a hung server)")
    parser.add_argument("--as-llama-server", action="store_true", help="accept and ignore llama-server's other flags")
    parser.add_argument("--limit", type=int, help="accept at most N requests per --limit-window seconds, 429 the others")
    parser.add_argument("--limit-window", type=float, default=60.0, help="seconds of the --limit window (default 60)")
    parser.add_argument("--answer-model", help="the model its answers name (default: the one asked for)")
    parser.add_argument("--fingerprint", help="the system_fingerprint its answers carry (default: none)")
    args, unknown = parser.parse_known_args(argv)
    if unknown and not args.as_llama_server:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.as_llama_server:
        print("stub llama-server:", " ".join(sys.argv[1:] if argv is None else argv), flush=True)
    stub = StubServer(
        latency=args.latency,
        fail_rate=args.fail_rate,
        seed=args.seed,
        hang=args.hang,
        lifetime=args.lifetime,
        port=args.port,
        frozen=args.frozen,
        limit=args.limit,
        limit_window=args.limit_window,
        answer_model=args.answer_model,
        fingerprint=args.fingerprint,
    ).start()
    print(stub.url, flush=True)
    try:
        while stub.running:
            time.sleep(0.2)
    except KeyboardInterrupt:
        stub.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
