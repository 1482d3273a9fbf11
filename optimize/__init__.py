"""Optuna studies over the programs' knobs and demonstrations, and DSPy compilation.

    python -m optimize hdr --level 1 --trials 8 --limit 30            # optimize/cli.py, optimize/study.py
    python -m optimize compile hdr --level 1 --optimizer gepa         # optimize/compile.py
"""
