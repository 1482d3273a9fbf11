"""DSPy's JSON adapter, keeping the list-length bounds a signature declares.

A signature can bound a list output with ``Annotated[list[X], annotated_types.Len(1, 6)]``
(or ``MinLen``/``MaxLen``). Pydantic keeps such bounds in the field's metadata, and DSPy
3.4 builds its structured-output schema from the bare annotation, so the bounds never
reach the model. Under a JSON grammar that matters: for a small model the cheapest valid
answer to ``concepts: list[Concept]`` is ``[]``. This adapter writes the bounds back into
the schema as ``minItems``/``maxItems``, which llama.cpp's grammar (and OpenAI-style
structured outputs) enforce while decoding.

It also reads an answer that stopped at the generation cap as far as it got. Under the
grammar a finished answer is always valid JSON, so one that is not was cut mid-way; DSPy's
parser repairs it by closing what is open, which keeps the list item being written as if it
were whole ("A yellow triangle on a lavender background is"). Here the unfinished last item
of the list being written is dropped instead, and the finished ones are kept: a small model
that repeats one line until the cap leaves the rules it wrote before, and a verdict list cut
mid-verdict keeps the verdicts it finished (the hypotheses left without one are unjudged).
"""

from __future__ import annotations

import json
from typing import Any

import dspy
import json_repair


def list_bounds(field: Any) -> dict[str, int]:
    """``minItems``/``maxItems`` for a signature field, from its ``Len``/``MinLen``/``MaxLen`` metadata."""
    bounds: dict[str, int] = {}
    for item in getattr(field, "metadata", ()) or ():
        low, high = getattr(item, "min_length", None), getattr(item, "max_length", None)
        if low:
            bounds["minItems"] = int(low)
        if high is not None:
            bounds["maxItems"] = int(high)
    return bounds


class BoundedJSONAdapter(dspy.JSONAdapter):
    """``dspy.JSONAdapter`` whose response schema carries each list output's length bounds."""

    def _prepare_response_format(self, lm, lm_kwargs, signature):
        super()._prepare_response_format(lm, lm_kwargs, signature)
        model = lm_kwargs.get("response_format")
        if not (isinstance(model, type) and hasattr(model, "model_json_schema")):
            return  # plain JSON mode, or no response format at all
        schema = model.model_json_schema()
        properties = schema.get("properties", {})
        for name, field in signature.output_fields.items():
            target = properties.get(name)
            if isinstance(target, dict) and target.get("type") == "array":
                target.update(list_bounds(field))
        model.model_json_schema = lambda *args, **kwargs: schema

    def parse(self, signature, completion: str) -> dict[str, Any]:
        try:
            json.loads(completion)
        except ValueError:
            completion = finished_part(completion)
        return super().parse(signature, completion)


def finished_part(completion: str) -> str:
    """A cut JSON answer as far as it was finished: repaired, less the last item of the list it was writing unless
    the cut fell just after that item (its comma, its closing brace, a string's closing quote). Text that is no
    JSON object is returned as it was."""
    fields = json_repair.loads(completion)
    if not isinstance(fields, dict) or not fields:
        return completion
    writing = list(fields)[-1]  # the field the answer stopped in: the grammar writes fields in order
    items, end = fields[writing], completion.rstrip()
    if isinstance(items, list) and items:
        last = items[-1]
        if isinstance(last, (dict, list)):  # an object or a list is finished at its closing bracket
            finished = end.removesuffix(",").rstrip().endswith(("}", "]"))
        else:  # a string at its closing quote (not an opening one), anything else at the comma after it
            finished = end.endswith(",") or (isinstance(last, str) and last != "" and end.endswith('"'))
        if not finished:
            fields[writing] = items[:-1]
    return json.dumps(fields)
