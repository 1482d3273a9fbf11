"""Memory programs over a stream of text problems (reasoning-gym's tasks by name, ``--task rg:NAME``).

Each reads memory before solving a problem and writes after the problem is scored (:class:`StreamProgram`):

- :class:`StreamBaseline` (``stream_baseline``): no memory.
- :class:`FewShot` (``fewshot``): solved problems retrieved by lexical similarity, shown as examples.
- :class:`ReflexionStream` (``reflexion_stream``): reflections on earlier attempts.
- :class:`CheatsheetCU` / :class:`CheatsheetRS` (``cheatsheet_cu``, ``cheatsheet_rs``): Dynamic Cheatsheet.
- :class:`ConceptStream` (``arcmemo_oe_stream``, ``arcmemo_ps_stream``): ArcMemo's concepts on text problems.
- :class:`FailureMemory` (``failure_memory``): lessons from failures as well as successes (ReasoningBank).
- :class:`StoredPrograms` (``stored_programs``): working ``solve(problem)`` programs, ranked by running them on
  the new problem.
- :class:`Ace` (``ace``): ACE's playbook of bullets in sections, cited by the solver, tagged by a reflector and
  curated by ADD / UPDATE / MERGE / DELETE operations applied in code.
"""

from typing import TYPE_CHECKING

from memreason.lazy import lazy_exports

if TYPE_CHECKING:  # imported on first use (memreason.lazy): DSPy comes with them
    from .ace import Ace, PlaybookSolver
    from .base import Lesson, Read, StreamProgram
    from .baseline import StreamBaseline
    from .cheatsheet import CheatsheetCU, CheatsheetRS
    from .choices import ANSWER_MODES, LEARN_FROM, LESSONS
    from .concepts import ConceptStream
    from .entries import Entry, EntryMemory, similarity
    from .failure_memory import FailureMemory
    from .fewshot import FewShot
    from .judge import SelfJudge
    from .print_runner import Printed, PrintRunner
    from .protocol import run_stream
    from .reflexion import ReflexionStream
    from .solver import StreamSolver
    from .stored_programs import StoredPrograms

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".ace": "Ace PlaybookSolver",
        ".base": "Lesson Read StreamProgram",
        ".baseline": "StreamBaseline",
        ".choices": "ANSWER_MODES LEARN_FROM LESSONS",
        ".cheatsheet": "CheatsheetCU CheatsheetRS",
        ".concepts": "ConceptStream",
        ".entries": "Entry EntryMemory similarity",
        ".failure_memory": "FailureMemory",
        ".fewshot": "FewShot",
        ".judge": "SelfJudge",
        ".print_runner": "Printed PrintRunner",
        ".protocol": "run_stream",
        ".reflexion": "ReflexionStream",
        ".solver": "StreamSolver",
        ".stored_programs": "StoredPrograms",
    },
)

__all__ = [
    "ANSWER_MODES",
    "Ace",
    "CheatsheetCU",
    "CheatsheetRS",
    "ConceptStream",
    "Entry",
    "EntryMemory",
    "FailureMemory",
    "FewShot",
    "LEARN_FROM",
    "LESSONS",
    "Lesson",
    "PlaybookSolver",
    "PrintRunner",
    "Printed",
    "Read",
    "ReflexionStream",
    "StoredPrograms",
    "StreamBaseline",
    "StreamProgram",
    "SelfJudge",
    "StreamSolver",
    "run_stream",
    "similarity",
]
