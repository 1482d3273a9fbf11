"""DSPy's JSON adapter, keeping the list-length bounds a signature declares.

A signature can bound a list output with ``Annotated[list[X], annotated_types.Len(1, 6)]``
(or ``MinLen``/``MaxLen``). Pydantic keeps such bounds in the field's metadata, and DSPy
3.4 builds its structured-output schema from the bare annotation, so the bounds never
reach the model. Under a JSON grammar that matters: for a small model the cheapest valid
answer to ``concepts: list[Concept]`` is ``[]``. This adapter writes the bounds back into
the schema as ``minItems``/``maxItems``, which llama.cpp's grammar (and OpenAI-style
structured outputs) enforce while decoding.
"""

from __future__ import annotations

from typing import Any

import dspy


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
