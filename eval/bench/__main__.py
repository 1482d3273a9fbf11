"""``python -m memreason.eval.bench <name> [options]``: run one benchmark and print its figures."""

import sys
from importlib import import_module

BENCHES = {
    "local_lm": "memreason.eval.bench.local_lm",
    "prefill": "memreason.eval.bench.prefill",
    "prefix_memory": "memreason.eval.bench.prefix_memory",
    "arc_threads": "memreason.eval.bench.arc_threads",
    "sandbox": "memreason.eval.bench.sandbox",
    "threads": "memreason.eval.bench.threads",
    "f1_agreement": "memreason.eval.bench.f1_agreement",
    "cache": "memreason.eval.bench.cache",
    "rate_limits": "memreason.eval.bench.rate_limits",
    "deterministic": "memreason.eval.bench.deterministic",
    "startup": "memreason.eval.bench.startup",
}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in BENCHES:
        print(f"usage: python -m memreason.eval.bench {{{','.join(BENCHES)}}} [options]", file=sys.stderr)
        return 2
    return import_module(BENCHES[argv[0]]).main(argv[1:])


sys.exit(main(sys.argv[1:]))
