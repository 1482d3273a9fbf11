"""One import package: nothing installed under a generic top-level name, and every entry point works from where the README says."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GENERIC = ("datasets", "programs", "signatures", "eval", "optimize")


def _env():
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("PYTHONPATH", None)
    return env


def run(argv, cwd, **kw):
    return subprocess.run(argv, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=120, **kw)


def run_together(*commands):
    """``run`` for each ``(argv, cwd)``, the processes started at once (each spends its time importing)."""
    started = [
        (argv, subprocess.Popen(argv, cwd=cwd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        for argv, cwd in commands
    ]
    done = []
    for argv, process in started:
        try:
            stdout, stderr = process.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            for _, other in started:
                other.kill()
            raise
        done.append(subprocess.CompletedProcess(argv, process.returncode, stdout, stderr))
    return done


def test_outside_the_repository_no_generic_name_is_ours_and_dspy_loaders_import(tmp_path):
    code = textwrap.dedent(f"""
        import importlib.util
        for name in {GENERIC!r}:
            spec = importlib.util.find_spec(name)
            assert spec is None or not (spec.origin or "").startswith({str(ROOT)!r}), (name, spec.origin)
        from dspy.datasets import HotPotQA            # DSPy's loaders are not shadowed by our datasets
        from memreason.datasets.experience_transfer import make_level
        from memreason.programs import HDR, ConceptSelector, Judgement, MemoryConsolidator, Reasoner
        assert len(make_level(1).test) == 150
        print("ok")
    """)
    done = run([sys.executable, "-c", code], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_console_script_anywhere_and_python_m_eval_from_the_repository_root(tmp_path):
    script = Path(sys.executable).parent / "memreason-eval"
    assert script.exists(), "pip install -e . installs the memreason-eval console script"
    anywhere, from_root, optimize = run_together(
        ([str(script), "hdr", "--level", "9"], tmp_path),
        ([sys.executable, "-m", "eval", "hdr", "--level", "9"], ROOT),
        ([str(script.with_name("memreason-optimize")), "nothing"], tmp_path),
    )
    assert anywhere.returncode == 2 and anywhere.stderr.strip() == "error: --level must be 1, 2 or 3, got 9"
    assert from_root.returncode == 2 and from_root.stderr.strip() == "error: --level must be 1, 2 or 3, got 9"
    assert optimize.returncode == 2 and optimize.stderr.startswith("error: unknown program 'nothing'")
