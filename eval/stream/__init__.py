"""Memory programs over a stream of problems: reasoning-gym's tasks by name (``--task rg:NAME``).

:mod:`.task` is the task (:class:`GymTask`), :mod:`.evaluate` one run from its options, :mod:`.run` the
stream protocol (seed memory, orders, batches, the guard, snapshots), :mod:`.table` the memory-by-task table
(runs of any tasks, each against its task's baseline, with a heatmap of the gains).
"""
