"""Metrics, the evaluation harness and its command line, grouped by job.

memreason.eval.cli                   the command line (``python -m eval ...``, ``memreason-eval ...``): parsing only
memreason.eval.harness               what every run shares: typed options, LM resolution, sessions, the loop,
                                     run directories, resume, traces, usage, MLflow tracking
memreason.eval.experience_transfer   the HDR paper's task: evaluate a program (run_cell), the tables, the demo,
                                     hypothesis scoring
memreason.eval.arc                   the ArcMemo paper's task: evaluate (run_arc), seed memories (run_build), scoring, tables
memreason.eval.metrics               accuracy, hypothesis F1, oracle@k and the ARC scores (pure functions)
memreason.eval.stats                 bootstrap confidence intervals, McNemar's exact test, paired tests (pure functions)
memreason.eval.paired                runs compared item by item: their examples' scores, paired tests, their table
memreason.eval.report, .show         a run's report with plots, and the run viewer
"""
