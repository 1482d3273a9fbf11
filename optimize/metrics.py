"""Metrics for DSPy optimizers: a score, and for GEPA the same score with textual feedback.

    metric = CountFeedback(data, hypotheses)
    metric(example, prediction)                               # float, for bootstrap, mipro, simba
    metric(example, prediction, trace, pred_name, pred_trace) # dspy.Prediction(score, feedback), for GEPA

Experience-Transfer feedback names the miscounted scene (what was answered, the true
count, every object's true label) and the memory's hypotheses that contradict the rule
table (``hypothesis_f1`` in ``parse`` mode). ARC feedback names the train pairs each
attempt got wrong and how.
"""

from __future__ import annotations

from typing import Sequence

import dspy

from memreason.datasets.experience_transfer import ExperienceTransferLevel


class CountFeedback:
    """Exact count match; feedback on the scene and on the memory's wrong hypotheses."""

    def __init__(self, data: ExperienceTransferLevel, hypotheses: Sequence[str] = (), scenes: Sequence = ()):
        """``scenes``: the scenes the examples come from (by ``scene_id``), for their objects' true labels."""
        from memreason.eval.experience_transfer.hypothesis_scoring import score_hypotheses

        self.data = data
        self.scenes = {s.id: s for s in (scenes or data.test)}
        self.wrong: list[str] = []
        if hypotheses:
            score = score_hypotheses(list(hypotheses), data, mode="parse")
            self.wrong = [h for h, ok in zip(hypotheses, score.correct) if not ok]

    def __call__(self, example, prediction, trace=None, pred_name=None, pred_trace=None):
        try:
            answer = int(prediction.count)
        except (TypeError, ValueError, AttributeError):
            answer = None
        score = float(answer == int(example.count))
        if pred_name is None and pred_trace is None:  # a plain metric call (GEPA's own evaluations take floats too)
            return score
        return dspy.Prediction(score=score, feedback=self.feedback(example, answer, score))

    def feedback(self, example, answer: int | None, score: float) -> str:
        labels = self.labels(example)
        if score == 1.0:
            text = f"Correct: the scene holds {example.count} {self.data.rules.count_label} objects."
        else:
            shown = "no whole number" if answer is None else str(answer)
            text = f"Miscounted: answered {shown}, the scene holds {example.count} {self.data.rules.count_label} objects."
        if labels:
            text += " The objects' labels: " + "; ".join(labels) + "."
        if self.wrong:
            text += " These memory hypotheses contradict the true rules: " + " | ".join(self.wrong)
        return text

    def labels(self, example) -> list[str]:
        scene = self.scenes.get(getattr(example, "scene_id", None) or "")
        if scene is None:
            return []
        return [f"({i}) {o.color} {o.shape}: {label}" for i, (o, label) in enumerate(zip(scene.objects, scene.labels), 1)]


class ArcFeedback:
    """The official score of the attempts on the example's task; feedback on the train pairs that failed."""

    def __call__(self, example, prediction, trace=None, pred_name=None, pred_trace=None):
        from .arc_objective import arc_score

        score = arc_score(example, prediction)
        if pred_name is None and pred_trace is None:
            return score
        return dspy.Prediction(score=score, feedback=self.feedback(example, prediction, score))

    @staticmethod
    def feedback(example, prediction, score: float) -> str:
        attempts = getattr(prediction, "attempts", None) or []
        if not attempts:
            return "No attempt produced a program."
        lines = [f"Official score {score:.2f}."]
        for attempt in attempts:
            step = attempt.final
            if step.error:
                lines.append(f"Attempt {attempt.index}: no program ({step.error}).")
                continue
            failed = [f"train pair {i + 1} ({c.failure or 'wrong output'})" for i, c in enumerate(step.train) if not c.correct]
            lines.append(
                f"Attempt {attempt.index}: " + ("passes every train pair." if not failed else "fails " + ", ".join(failed) + ".")
            )
        return " ".join(lines)
