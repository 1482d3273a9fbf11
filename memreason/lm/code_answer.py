"""An adapter for signatures whose answer is source code: the code comes back in a Markdown code block.

Under DSPy's JSON adapter a program is a JSON string (``{"program": "def transform(grid):\\n    ..."}``),
every newline and quote escaped; under its chat adapter it sits between ``[[ ## program ## ]]``
markers. A code model is trained on neither: it writes code in a fenced block. This adapter asks
for exactly that, the way a person would ask, and reads the block back:

    reasoning (when the signature has a ``reasoning`` field): free text before the block
    program:  the fenced block (the one defining the function named in the instructions, if several)

It keeps DSPy's chat format for the inputs (``[[ ## field ## ]]`` sections) and for demos. An answer
already in fields (``[[ ## program ## ]]`` markers or a JSON object, as a scripted engine or a model
trained on DSPy may write) is read as such; an answer with no block is taken whole as the code. It
never sends a ``response_format``: no grammar constrains the code. Signatures whose outputs are
not one text field (plus an optional ``reasoning``) are refused.
"""

from __future__ import annotations

import json
import re
from typing import Any

import dspy

__all__ = ["CodeAdapter", "code_block", "code_outputs", "read_code_answer"]

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)(?:```|\Z)", re.S)
_MARKER = re.compile(r"\[\[ ## (\w+) ## \]\]")


def code_outputs(signature: type[dspy.Signature]) -> tuple[str | None, str]:
    """(the reasoning field or None, the code field) of a signature this adapter can answer; ValueError otherwise."""
    names = list(signature.output_fields)
    reasoning = "reasoning" if names and names[0] == "reasoning" and len(names) == 2 else None
    code = names[-1] if names else None
    if code is None or len(names) > 1 + (reasoning is not None) or signature.output_fields[code].annotation is not str:
        raise ValueError(f"CodeAdapter answers one str output (and an optional reasoning), not {names}")
    return reasoning, code


def read_code_answer(completion: str, reasoning: str | None, code: str, *, prefer: str = "") -> dict[str, str]:
    """The fields of an answer: a JSON object or ``[[ ## field ## ]]`` sections as they are, else the text before
    the first code block as ``reasoning`` and the block (the first one containing ``prefer``, else the longest)
    as ``code``; with no block at all, the whole text is the code."""
    text = completion or ""
    fields = _as_fields(text, reasoning, code)
    if fields is not None:
        return fields
    start, block = code_block(text, prefer)
    out = {code: block}
    if reasoning:
        out[reasoning] = text[:start].strip() if start is not None else ""
    return out


def code_block(text: str, prefer: str = "") -> tuple[int | None, str]:
    """(where the first fenced block starts, the code): the block containing ``prefer``, else the longest, stripped
    and ending in a newline (a block cut before its closing fence counts); with no block, (None, the text stripped)."""
    blocks = [(m.start(), m.group(2)) for m in _FENCE.finditer(text or "")]
    if not blocks:
        return None, (text or "").strip()
    chosen = next((b for b in blocks if prefer and prefer in b[1]), None) or max(blocks, key=lambda b: len(b[1]))
    return blocks[0][0], chosen[1].strip() + "\n"


def _as_fields(text: str, reasoning: str | None, code: str) -> dict[str, str] | None:
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            data = json.loads(stripped)
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get(code), str):
            return {**({reasoning: str(data.get(reasoning, ""))} if reasoning else {}), code: data[code]}
    sections = _MARKER.split(text)
    if len(sections) > 1:
        found = {name: value.strip() for name, value in zip(sections[1::2], sections[2::2])}
        if code in found:
            return {**({reasoning: found.get(reasoning, "")} if reasoning else {}), code: found[code]}
    return None


class CodeAdapter(dspy.ChatAdapter):
    """DSPy's chat format for the inputs; the answer as free reasoning (if asked for) and one fenced code block.

    Args:
        language: the block's language tag (``python``).
        defines: the name the code must define (``transform``): among several blocks, the one defining it is read.
    """

    def __init__(self, language: str = "python", defines: str = ""):
        super().__init__(use_json_adapter_fallback=False)
        self.language, self.defines = language, defines

    def format_field_structure(self, signature: type[dspy.Signature]) -> str:
        reasoning, code = code_outputs(signature)
        inputs = "\n\n".join(f"[[ ## {name} ## ]]\n{{{name}}}" for name in signature.input_fields)
        answer = f"```{self.language}\n{{{code}}}\n```"
        if reasoning:
            answer = f"{{reasoning}}\n\n{answer}"
        return (
            "All interactions will be structured in the following way, with the appropriate values filled in.\n\n"
            f"{inputs}\n\nThe answer:\n\n{answer}"
        )

    def user_message_output_requirements(self, signature: type[dspy.Signature]) -> str:
        reasoning, code = code_outputs(signature)
        first = "a few sentences of reasoning, then " if reasoning else ""
        return f"Respond with {first}the {code} in one ```{self.language} code block."

    def format_assistant_message_content(self, signature, outputs: dict[str, Any], missing_field_message=None) -> str:
        reasoning, code = code_outputs(signature)
        body = f"```{self.language}\n{str(outputs.get(code, missing_field_message or '')).strip()}\n```"
        return f"{outputs.get(reasoning, '')}\n\n{body}".strip() if reasoning else body

    def parse(self, signature: type[dspy.Signature], completion: str) -> dict[str, Any]:
        reasoning, code = code_outputs(signature)
        return read_code_answer(completion, reasoning, code, prefer=self.defines)
