"""``python -m optimize <program> ...`` (or ``memreason-optimize``) (a study, optimize/cli.py), ``python -m optimize compile ...``
(optimize/compile.py) or ``python -m optimize compile consolidator ...`` (optimize/consolidator.py)."""

import sys


def main(argv: list[str]) -> int:
    if argv[:2] == ["compile", "consolidator"]:
        from .consolidator import main as consolidator_main

        return consolidator_main(argv[1:])
    if argv and argv[0] == "compile":
        from .compile import main as compile_main

        return compile_main(argv[1:])
    from .cli import main as study_main

    return study_main(argv)



def run() -> None:
    """The ``memreason-optimize`` console script."""
    sys.exit(main(sys.argv[1:]))


if __name__ == "__main__":
    run()
