"""``python -m eval <command> ...`` (from the repository root) or ``memreason-eval <command> ...`` (anywhere)."""

from memreason.eval.cli import run

if __name__ == "__main__":
    run()
