"""``python -m memreason.eval.bench startup``: how fast commands start, a git ref of this checkout against the working tree.

Times, each as a fresh process and side by side in one run, the commands a user waits on before anything happens:
``python -m eval --help``, ``python -m eval tasks``, a subcommand's ``--help``, a finished run asked again (its
command repeated: nothing is left to answer), and a new run's first LM call (seconds from the process's start to
the first request the model's server sees). The "before" checkout is ``--before`` (default: the merge-base with
``main``) in a temporary ``git worktree``; "after" is the working tree. Both run on this environment's packages:
each process imports ``memreason`` from its own checkout (a path finder over pyproject's ``package-dir``, the map
an editable install uses) and runs ``python -m eval`` there.

No model is called: the runs ask the loopback stub server (:mod:`memreason.lm.stub_server`, no latency, no faults)
as ``--lm openai/stub``. Each checkout first makes its own tiny finished run (``stream_baseline`` on ``--task``, a
stream task such as ``rg:puzzle24``, 2 items; reasoning-gym's need the ``gym`` extra), untimed. Repetitions
alternate between the checkouts; the median of each is printed, with the ratio before / after (above 1: the working
tree starts faster), and the median CPU seconds (user + system) of each command's process, which a busy machine
stretches less than it stretches wall time.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Run in a checkout's root: import memreason from that checkout, then run ``python -m eval`` as the shell would.
LAUNCHER = """
import importlib.util, runpy, sys
from pathlib import Path
try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib
root = Path.cwd()
dirs = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]

class Checkout:
    @staticmethod
    def find_spec(name, path=None, target=None):
        owner = max((p for p in dirs if name == p or name.startswith(p + ".")), key=len, default=None)
        if owner is None:
            return None
        base = root / dirs[owner] / Path(*name[len(owner):].split(".")[1:])
        if (base / "__init__.py").is_file():
            return importlib.util.spec_from_file_location(name, base / "__init__.py", submodule_search_locations=[str(base)])
        if base.with_suffix(".py").is_file():
            return importlib.util.spec_from_file_location(name, base.with_suffix(".py"))
        return None

sys.meta_path.insert(0, Checkout)
runpy.run_module("eval", run_name="__main__", alter_sys=True)
"""

RUN = ["--seed-size", "0", "--lm", "openai/stub", "--no-progress"]  # with --task and the stub's --api-base


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m memreason.eval.bench startup", description=__doc__.split("\n")[0])
    parser.add_argument("--task", required=True, help="the stream task the runs answer, such as rg:puzzle24")
    parser.add_argument("--before", help="the git ref timed against the working tree (default: the merge-base with main)")
    parser.add_argument("--repeat", type=int, default=5, help="repetitions of each command in each checkout (default 5)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        print("error: --repeat must be at least 1", file=sys.stderr)
        return 2
    after = Path(__file__).resolve().parents[2]
    if not (after / ".git").exists() or not (after / "pyproject.toml").is_file():
        print(
            "error: the startup benchmark times two checkouts of a git repository; run it from a source checkout", file=sys.stderr
        )
        return 2
    ref = args.before or _git(after, "merge-base", "HEAD", "main")
    from memreason.lm.stub_server import StubServer

    with (
        tempfile.TemporaryDirectory(prefix="startup-bench-") as tmp,
        StubServer(latency=0.0, fail_rate=0.0, lifetime=3600) as server,
    ):
        before = Path(tmp) / "before"
        _git(after, "worktree", "add", "--detach", str(before), ref)
        try:
            checkouts = {"before": before, "after": after}
            env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_API_KEY": "stub-key"}  # no real key leaves
            lm = ["--task", args.task, *RUN, "--api-base", server.url]
            finished = {side: Path(tmp) / f"{side}-finished" for side in checkouts}
            for side, root in checkouts.items():  # untimed: each checkout's own finished run
                _run(root, ["stream_baseline", *lm, "--size", "2", "--out", str(finished[side])], env)
            cpu: dict[tuple[str, str], list[float]] = {}
            commands = {
                "python -m eval --help": lambda side: ["--help"],
                "python -m eval tasks": lambda side: ["tasks"],
                "python -m eval stream_baseline --help": lambda side: ["stream_baseline", "--help"],
                "a finished run asked again": lambda side: ["stream_baseline", *lm, "--size", "2", "--out", str(finished[side])],
            }
            times: dict[tuple[str, str], list[float]] = {}
            for _ in range(args.repeat):
                for name, words in commands.items():
                    for side, root in checkouts.items():
                        wall, used = _run(root, words(side), env)
                        times.setdefault((name, side), []).append(wall)
                        cpu.setdefault((name, side), []).append(used)
                for side, root in checkouts.items():
                    fresh = Path(tempfile.mkdtemp(dir=tmp, prefix=f"{side}-fresh-"))
                    seen = len(server.log)
                    started = time.monotonic()
                    _run(root, ["stream_baseline", *lm, "--size", "1", "--out", str(fresh / "run")], env)
                    first = next((r for r in server.log[seen:] if "at" in r), None)
                    if first is None:
                        print("error: the new run made no LM call", file=sys.stderr)
                        return 1
                    times.setdefault(("a new run's first LM call", side), []).append(server.started + first["at"] - started)
        finally:
            _git(after, "worktree", "remove", "--force", str(before))
    _print(times, cpu, ref, args.repeat)
    return 0


def _run(root: Path, words: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Seconds ``python -m eval WORDS`` took in checkout ``root``: wall, and its process's CPU (user + system)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", LAUNCHER, *words], cwd=root, env=env, capture_output=True, text=True)
    took = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
    if done.returncode != 0:
        raise SystemExit(
            f"error: python -m eval {' '.join(words)} in {root} exited {done.returncode}: {done.stderr.strip()[-500:]}"
        )
    return took, used


def _git(root: Path, *words: str) -> str:
    done = subprocess.run(["git", *words], cwd=root, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"error: git {' '.join(words)}: {done.stderr.strip()}")
    return done.stdout.strip()


def _print(times: dict[tuple[str, str], list[float]], cpu: dict[tuple[str, str], list[float]], ref: str, repeat: int) -> None:
    names = list(dict.fromkeys(name for name, _ in times))
    print(f"startup benchmark: before = {ref[:12]}, after = the working tree; median of {repeat} fresh processes each")
    print(f"{'command':<40}  {'before s':>8}  {'after s':>8}  {'before/after':>12}  {'CPU before s':>12}  {'CPU after s':>11}")
    for name in names:
        old, new = statistics.median(times[(name, "before")]), statistics.median(times[(name, "after")])
        used = [f"{statistics.median(cpu[(name, side)]):.2f}" if (name, side) in cpu else "-" for side in ("before", "after")]
        print(f"{name:<40}  {old:>8.2f}  {new:>8.2f}  {old / new:>12.1f}  {used[0]:>12}  {used[1]:>11}")
    print("a new run's first LM call: seconds from the process's start to the stub server's first chat request")
