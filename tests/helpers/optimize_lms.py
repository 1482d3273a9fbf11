"""Scripted LMs for the optimize tests, importable by name (``scripted:tests.helpers.optimize_lms:memory``) in subprocesses.

The objective's optimum is known: the memory LM writes the level's oracle hypotheses only
for K=2 factor passes and N=2 generate-verify rounds, and drops one more of them for every
step away (|K-2| + |N-2|); the task LM counts right only when the scene's hash clears the
number missing (a third of the scenes per missing hypothesis). So accuracy is 1 at (K=2, N=2) only, and falls with the distance from it.

- factor pass i returns the first i factors of FACTORS (never repeating, so K passes run);
- round j's generator sees round j-1's survivors, which carry a "(round j-1)" marker;
- the verifier approves everything.
"""

from __future__ import annotations

import os
import re
import time
import zlib

from memreason.datasets.experience_transfer import make_level

from .scripted_answers import approve_all, given, oracle_counter, outputs

FACTORS = ["color", "shape", "position", "size"]
ORACLE = make_level(1).oracle_hypotheses
MARK = re.compile(r"\(round (\d+)\)")


def _round_of(previous: list[str]) -> int:
    rounds = [int(m.group(1)) for h in previous for m in [MARK.search(h)] if m]
    return (max(rounds) if rounds else 0) + 1


def memory():
    def respond(call):
        name = outputs(call)[-1]
        if name == "factors":
            return {"factors": FACTORS[: len(given(call, "current_factors")) + 1]}
        if name == "hypotheses":
            k, j = len(given(call, "factors")), _round_of(given(call, "previous_hypotheses"))
            missing = abs(k - 2) + abs(j - 2)
            return {"hypotheses": ORACLE[missing:] + [f"Notes (round {j})."]}
        if name == "verdicts":
            return approve_all(call)
        return generic_answer(call)

    return respond


def missing_oracle(text: str) -> int:
    hypotheses = given_last(text, "hypotheses") or []
    return sum(h not in hypotheses for h in ORACLE)


def given_last(text: str, name: str):
    import json

    found = re.findall(rf"\[\[ ## {name} ## \]\]\n(.*?)(?=\n\n\[\[ ## |\n\nRespond with|\Z)", text, re.S)
    try:
        return json.loads(found[-1]) if found else None
    except ValueError:
        return None


def task():
    """Counts right when no oracle hypothesis is missing; otherwise only on scenes whose hash clears the gap."""
    right = oracle_counter()
    delay = float(os.environ.get("SCRIPTED_TASK_DELAY", "0"))

    def respond(call):
        if delay:
            time.sleep(delay)
        if "count" not in outputs(call):
            return generic_answer(call)
        answer = right(call)
        missing = missing_oracle(call.user_text)
        scene = re.findall(r"A \w+ background with \d+ objects: .*?\.", call.user_text)[-1]
        if missing and zlib.crc32(scene.encode()) % 3 < missing:  # a third of scenes wrong per missing rule
            answer = {**answer, "count": answer["count"] + 1}
        return answer

    return respond


TYPES = re.compile(r"\d+\. `(\w+)` \(([^)]*)\)")


def generic_answer(call):
    """Any other signature (optimizers' proposers and reflectors): a plausible value per output field and type."""
    if "Your output fields are:" not in call.system:
        return "```\nCount every object whose label the hypotheses give as the counted one.\n```"
    section = call.system.split("Your output fields are:", 1)[1].split("All interactions", 1)[0]
    answer = {}
    for name, kind in TYPES.findall(section):
        kind = kind.lower()
        if kind.startswith("int"):
            answer[name] = 1
        elif kind.startswith("float"):
            answer[name] = 1.0
        elif kind.startswith("bool"):
            answer[name] = True
        elif kind.startswith("list"):
            answer[name] = []
        elif kind.startswith("dict"):
            answer[name] = {}
        else:
            answer[name] = "Count every object whose label the hypotheses give as the counted one."
    return answer


# -- a consolidator for `python -m optimize compile consolidator` -------------------------------

EPISODE = re.compile(r"A (\w+) (\w+) of size \d+ px centred at \(x=\d+, y=\d+\), on an? (\w+) background\.")
NOISE = ["Bigger objects are rarer.", "Objects near the top are special.", "Labels depend on position."]


def consolidator():
    """Writes one true hypothesis per combination its episodes show, plus three unreadable ones and a false one
    (the first episode's object with another label the episodes show), unless a demonstration is in the prompt
    (then the true ones only): compiling with demos raises F1. Unreadable statements alone would not lower it:
    hypothesis F1 leaves statements that imply nothing out of precision."""

    def respond(call):
        name = outputs(call)[-1]
        last = lambda field: given_last(call.user_text, field)  # noqa: E731  this call's inputs, not a demo's
        if name == "factors":
            return {"factors": FACTORS[: len(last("current_factors") or []) + 1]}
        if name == "hypotheses":
            episodes = last("episodes") or []
            true = sorted({_hypothesis(e) for e in episodes})
            others = sorted({e["label"] for e in episodes} - {episodes[0]["label"]}) if episodes else []
            false = [_hypothesis({**episodes[0], "label": others[0]})] if others else []
            demonstrated = call.user_text.count("[[ ## episodes ## ]]") > 1
            return {"hypotheses": true if demonstrated else true + NOISE + false}
        if name == "verdicts":
            return {"verdicts": [{"hypothesis": h, "reason": "fits", "verdict": "valid"} for h in last("hypotheses") or []]}
        return generic_answer(call)

    return respond


def repeating_consolidator():
    """:func:`consolidator`, whose generator then repeats its first hypothesis 40 times, as a small model at
    temperature 0 can: under a token cap the answer stops mid-repeat, and its distinct rules still parse."""
    respond = consolidator()

    def repeat(call):
        answer = respond(call)
        if isinstance(answer, dict) and answer.get("hypotheses"):
            answer = {"hypotheses": answer["hypotheses"] + [answer["hypotheses"][0]] * 40}
        return answer

    return repeat


def _hypothesis(episode: dict) -> str:
    color, shape, background = EPISODE.match(episode["observation"]).groups()
    article = "an" if background[0] in "aeiou" else "a"
    return f"On {article} {background} background, {color} {shape}s are labelled {episode['label']}."


# -- studies on problem tasks (`python -m optimize PROGRAM --task T`) ---------------------------------


def problems():
    """A reader of problem tasks, and :func:`memory`'s consolidator for programs that build one: with chain of
    thought it answers right (a word's capitals on the test's own task of words, "on" on ACRE); without it, wrong
    (the word backwards, "undetermined"). So a study over ``cot`` finds cot=true."""
    consolidate = memory()

    def respond(call):
        names = outputs(call)
        if "answer" not in names:
            return consolidate(call)
        thinks = "reasoning" in names
        if "[[ ## word ## ]]" in call.user_text:
            word = str(given(call, "word"))
            answer = word.upper() if thinks else word[::-1]
        else:
            answer = "on" if thinks else "undetermined"
        return {"reasoning": "from the examples", "answer": answer} if thinks else {"answer": answer}

    return respond
