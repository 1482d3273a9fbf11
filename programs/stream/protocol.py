"""The stream protocol in Python, for items of your own: memory grows as the stream is answered and scored.

    program = FewShot(k=2)
    records = run_stream(program, [("a", "What is 2 + 2?"), ("b", "What is 3 + 3?")], score=lambda i, a: a == ANSWERS[i])
    program.memory_size()        # what the writes kept; program.save("fs.json") keeps it

    for each batch B of `batch` items (0: one batch, memory frozen):
        answer each x in B with memory as it stands (never an entry written from x itself)
        score each x in B                                      # score(item_id, answer) -> 1.0 right, 0.0 wrong
        learn from each x in B                                 # only now, after all of B was scored

What a write may learn (``learn_from``): ``"reference"``, whether the answer scored right, or ``"none"``, nothing
(the attempt, not judged). :func:`memreason.eval.stream.evaluate_stream` runs the same protocol on a registered
task with a run directory (resume, traces, reports, threads); this is the same loop with nothing around it.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from .base import Lesson

__all__ = ["run_stream"]


def run_stream(
    program: Any,
    items: Iterable[tuple[str, str]],
    score: Callable[[str, str | None], float],
    *,
    batch: int = 10,
    learn_from: str = "reference",
    lesson: str = "reasoning",
) -> list[dict[str, Any]]:
    """Answer ``items`` (``(item_id, problem)`` pairs) with ``program`` (a stream program, under the LM in DSPy's
    context), scoring each with ``score`` and writing to memory after each batch; a record per item, in order."""
    if learn_from not in ("reference", "none"):
        raise ValueError(f"learn_from must be 'reference' or 'none' here, got {learn_from!r}")
    if lesson not in ("reasoning", "answer"):
        raise ValueError(f"lesson must be 'reasoning' or 'answer', got {lesson!r}")
    if batch < 0:
        raise ValueError(f"batch must be >= 0, got {batch}")
    items = list(items)
    size = batch or len(items) or 1
    records: list[dict[str, Any]] = []
    for start in range(0, len(items), size):
        answered = []
        for item_id, problem in items[start : start + size]:
            out = program(problem=problem, item_id=item_id)
            value = float(score(item_id, out.answer))
            answered.append((item_id, problem, out, value))
            records.append({"id": item_id, "answer": out.answer, "score": value, "memory": out.memory})
        if not batch:
            continue
        for item_id, problem, out, value in answered:
            verdict = value >= 1.0 if learn_from == "reference" else None
            reasoning = str(out.get("reasoning") or "") if lesson == "reasoning" else ""
            program.learn(Lesson(item_id, problem, str(out.solution or out.answer or ""), verdict, "", learn_from, reasoning))
    return records
