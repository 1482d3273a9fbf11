"""What optimize's commands offer to choose from, and the error of a study that cannot be opened: apart from the
modules that use them (Optuna, DSPy), so that the command line lists them and prints its help importing neither.

    OPTIMIZERS        the DSPy optimizers a compile takes (memreason.optimize.compile)
    PROGRAMS_WITH_CONSOLIDATORS, LABELLED_RULES   what compile consolidator takes (memreason.optimize.consolidator)
    DEMO_SOURCES      how a study makes demonstrations (memreason.optimize.demos)
    SAMPLERS, PRUNERS Optuna's samplers and pruners a study offers (memreason.optimize.study)
    OBJECTIVES        a study's objectives (memreason.optimize.tune)
"""

__all__ = [
    "DEMO_SOURCES",
    "LABELLED_RULES",
    "OBJECTIVES",
    "OPTIMIZERS",
    "PROGRAMS_WITH_CONSOLIDATORS",
    "PRUNERS",
    "SAMPLERS",
    "StudyError",
]

OPTIMIZERS = ("bootstrap", "mipro", "gepa", "simba")
PROGRAMS_WITH_CONSOLIDATORS = ("hdr", "hdr_grounded")
LABELLED_RULES = ("general", "specific")  # the hypotheses of a labelled demo: memreason.optimize.consolidator.labelled
DEMO_SOURCES = ("labeled", "bootstrap")
SAMPLERS = ("tpe", "random", "grid", "nsga2")
PRUNERS = ("median", "none")
OBJECTIVES = ("accuracy", "accuracy,tokens")  # maximize accuracy; or also minimize tokens (a Pareto front, no pruning)


class StudyError(ValueError):
    """A study that cannot be opened as asked (reported as one line, exit 2)."""
