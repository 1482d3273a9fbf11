"""``python -m eval tasks``: the registered tasks, what each is, and the programs that run on it."""

from __future__ import annotations

import argparse

from memreason.eval.tasks import get_task, task_names

__all__ = ["register"]


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "tasks",
        help="list the registered tasks and the programs that run on each",
        description="List the registered tasks (those of MEMREASON_TASKS and the memreason.tasks entry points too).",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    for name in task_names():
        task = get_task(name)
        print(f"{name} ({task.kind}, items: {task.unit}){': ' + task.summary if task.summary else ''}")
        print(f"    programs: {', '.join(task.programs())}")
    return 0
