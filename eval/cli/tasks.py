"""``python -m eval tasks``: the registered tasks, what each is, and the programs that run on it."""

from __future__ import annotations

import argparse

from memreason.eval.tasks import get_task, task_names
from memreason.installed import command

__all__ = ["register"]


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "tasks",
        help="list the registered tasks and the programs that run on each",
        description="List the registered tasks (those of MEMREASON_TASKS and the memreason.tasks entry points too).",
    )
    parser.add_argument("--gym", action="store_true", help="list reasoning-gym's datasets, each a stream task rg:NAME")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if getattr(args, "gym", False):
        from memreason.datasets.gym import dataset_names

        print("\n".join(f"rg:{name}" for name in dataset_names()))
        return 0
    for name in task_names():
        task = get_task(name)
        print(f"{name} ({task.kind}, items: {task.unit}){': ' + task.summary if task.summary else ''}")
        print(f"    programs: {', '.join(task.programs())}")
    from memreason.eval.stream.task import StreamTask  # stream tasks are made when named: rg:NAME, et:LN

    print(f"rg:NAME (stream, items: items): any reasoning-gym dataset by name ({command('eval')} tasks --gym lists them)")
    print("et:L1, et:L2, et:L3 (stream, items: items): Experience-Transfer's scenes as a stream, its episodes the seed problems")
    print(f"    programs: {', '.join(StreamTask().programs())}")  # every stream task's, rg:NAME's and et:LN's alike
    return 0
