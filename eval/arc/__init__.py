"""Evaluate an ARC program (ArcMemo paper, section 4 and Appendix B), and seed memories.

For each of ``runs`` repetitions: build the program (its sampling seed is the run
number), give it a fresh copy of the memory file, and run Algorithm 1 over the
tasks (``ArcProgram.solve_all``): tasks are solved ``threads`` at a time under
the task LM, memory reads and writes run on the memory LM, and every task's
attempts, retries, programs, outputs, failures, tokens and scores are written to
``examples.jsonl`` as it finishes. Memory snapshots go to ``memory/run<r>/``:
``step-0000.json`` as loaded, ``step-<i>.json`` after the write following problem i,
``final.json`` (with usage counts) at the end; what each write did (and spent) goes to
``memory/run<r>/writes.jsonl``, written just before its snapshot.

A run directory that already holds part of the run is continued: finished tasks are
not solved again (their memory reads are replayed: selection counts), and with
continual updates the memory is restored from the latest snapshot taken at a batch
boundary, and only the batch in progress at the crash is finished (its solved tasks
kept) and written, so the memory equals an uninterrupted run's. LM answers asked again
(a write cut short) come from the run's DSPy cache.

LM faults are retried (:mod:`memreason.lm.faults`): the task LM and the memory LM are each
wrapped in a :class:`GuardedLM` (roles ``task`` and ``memory``) under a
:class:`ResilientAdapter`. A task whose LM calls still fail is recorded with the kind
and reason of its failure and scores 0; the run goes on unless more than
``max_errors`` tasks fail in this process or the provider refuses the key or the bill
(:class:`RunAborted`, the work kept).

Scores per task (``memreason.eval.metrics``): ``oracle_at_k`` for k = 1..3 (k <= attempts;
otherwise null, see ``oracle_at_k_pooled`` which pools the attempts of all runs),
the official score (first two attempts, any match per test pair, fraction of
pairs), the strict score (one program, an attempt's last, passes every test pair), and
the official score had every attempt stopped after r retries (``score_by_retries``). As in
the paper's released code, an attempt gets a test pair when any of its programs (its first
or a retry, up to depth r) does, so scores never fall with depth. Each is averaged over
tasks, then mean and sample std over runs, with a 95% bootstrap CI over the tasks beside each
(``official_score_ci``, ...; :mod:`memreason.eval.stats`). ``sampling`` follows the paper's sampling
protocol (Appendix B) over the pool of every attempt of every run: each sample's score
(Table 4's run0, run1, ... with one attempt per run) and oracle@k with the sample std
over the pool's k-subsets (its means are ``oracle_at_k_pooled``). Results also hold failures,
faults and retries by kind, tokens by role and by program step (``arc_solver.solve``,
``arc_solver.retry``, ``concept_selector``, ``concept_abstractor``, ...) and dollar
cost; everything outside ``execution`` and ``wall_seconds`` follows from the run
directory's files, so a resumed run reports what an uninterrupted one does.

``build_memory`` solves training tasks with the baseline solver (or reads a
directory of user solutions, ``<task_id>.py`` defining ``transform``), keeps the
programs that reproduce every train and test output, and abstracts them into a
memory file, saved atomically after every write. Solutions it found itself are
kept in ``<run dir>/solutions/``, so another format can be built from them
without solving again (``--solutions``). It continues its run directory the same way.
"""

from typing import TYPE_CHECKING

from memreason.lazy import lazy_exports

if TYPE_CHECKING:  # imported on first use (memreason.lazy): the programs, DSPy and the sandbox come with them
    from .build import BuildOptions, run_build
    from .config import KNOB_FIELDS, ArcConfig, BuildConfig
    from .evaluate import ArcEvalOptions, run_arc
    from .run import evaluate_arc
    from .scoring import KS, lm_failure, pooled_oracle_at_k, task_record, task_scores, verify_matrix
    from .seeding import build_memory, passes_all
    from .summary import summarise

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".build": "BuildOptions run_build",
        ".config": "KNOB_FIELDS ArcConfig BuildConfig",
        ".evaluate": "ArcEvalOptions run_arc",
        ".run": "evaluate_arc",
        ".scoring": "KS lm_failure pooled_oracle_at_k task_record task_scores verify_matrix",
        ".seeding": "build_memory passes_all",
        ".summary": "summarise",
    },
)

__all__ = [
    "KNOB_FIELDS",
    "KS",
    "ArcConfig",
    "ArcEvalOptions",
    "BuildConfig",
    "BuildOptions",
    "build_memory",
    "evaluate_arc",
    "lm_failure",
    "run_arc",
    "run_build",
    "passes_all",
    "pooled_oracle_at_k",
    "summarise",
    "task_record",
    "task_scores",
    "verify_matrix",
]
