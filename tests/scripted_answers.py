"""Scripted responders for Experience-Transfer tests: answers computed from what the prompt says."""

import re

from datasets.experience_transfer import RuleTable

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
