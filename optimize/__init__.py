"""Optuna studies over the programs' knobs and demonstrations, and DSPy compilation.

python -m optimize hdr --level 1 --trials 8 --limit 30            # optimize/cli/study.py -> optimize/tune.py
python -m optimize compile hdr --level 1 --optimizer gepa         # optimize/cli/compile.py -> optimize/compile.py
"""
