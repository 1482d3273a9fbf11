"""Scripted responders for tests: answers computed from what the prompt says."""

import json
import re

from memreason.datasets.experience_transfer import RuleTable
from memreason.lm import ScriptedEngine

OBJECT = re.compile(r"a (\w+) (\w+) of size \d+ px centred at \(x=\d+, y=\d+\)")
SCENE = re.compile(r"A (\w+) background with \d+ objects: (.*?)\.(?:\"|$|\n)", re.S)


def scene_of(text: str):
    """(background, [(color, shape), ...]) of the last scene in the prompt text."""
    matches = SCENE.findall(text)
    background, body = matches[-1]
    return background, OBJECT.findall(body)


def oracle_counter(table: RuleTable | None = None):
    """A responder that counts correctly by reading the scene and applying the table."""
    table = table or RuleTable.paper()

    def respond(call):
        background, objects = scene_of(call.user_text)
        count = sum(table.rows[(shape, color, background)] == table.count_label for color, shape in objects)
        return {"reasoning": "applied the rules", "count": count}

    return respond


# -- a responder routed by the signature asking -------------------------------------------


def outputs(call) -> list[str]:
    """The output fields a call asks for, in order."""
    section = call.system.split("Your output fields are:", 1)[1].split("All interactions", 1)[0]
    return re.findall(r"`(\w+)`", section)


def given(call, name: str):
    """The value of input field ``name`` in the call (JSON-decoded when it is JSON)."""
    match = re.search(rf"\[\[ ## {name} ## \]\]\n(.*?)(?=\n\n\[\[ ## |\n\nRespond with|\Z)", call.user_text, re.S)
    text = match.group(1)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def approve_all(call):
    return {"verdicts": [{"hypothesis": h, "reason": "fits", "verdict": "valid"} for h in given(call, "hypotheses")]}


class Script:
    """Answers a call by its last output field: ``Script(factors=..., hypotheses=..., verdicts=...)``.

    Each answer is a fixed dict of output values, a callable ``call -> dict``, or a
    list of those served one per call, in order.
    """

    def __init__(self, **answers):
        self.answers = {name: list(a) if isinstance(a, list) else a for name, a in answers.items()}
        self.asked: list[str] = []

    def __call__(self, call):
        name = outputs(call)[-1]
        self.asked.append(name)
        answer = self.answers[name]
        if isinstance(answer, list):
            answer = answer.pop(0)
        return answer(call) if callable(answer) else answer

    def calls_to(self, engine: ScriptedEngine, name: str) -> list:
        return [c for c, asked in zip(engine.calls, self.asked) if asked == name]


# -- per-object reasoning with retrieval ---------------------------------------------------


def perceiver(call):
    """Reads the scene's background and objects off the prompt, as a perfect perception step would."""
    background, objects = scene_of(call.user_text)
    return {"background": background, "objects": [f"{color} {shape}" for color, shape in objects]}


def first_entry_labeller(call):
    """Labels the object with the label of the first memory entry shown: right only if the nearest comes first."""
    shown = given(call, "hypotheses") if "[[ ## hypotheses ## ]]" in call.user_text else given(call, "episodes")
    first = shown[0] if isinstance(shown[0], str) else shown[0]["label"]
    return {"reasoning": "-", "label": next(label for label in ("normal", "anomaly") if re.search(rf"\b{label}\b", first))}
