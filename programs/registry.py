"""The names users type (``python -m eval <name>``) and the programs they build."""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib.util import resolve_name
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol, runtime_checkable

from memreason.lazy import Imported
from memreason.plugins import PluginError, Plugins

from .declared import DeclarationError, NotRead, declared

if TYPE_CHECKING:  # the programs themselves are imported when one is built (DSPy with them), not to list their names
    import dspy

    from memreason.signatures import TaskDescription

__all__ = [
    "GRIDS",
    "KINDS",
    "KIND_SPACES",
    "PROBLEMS",
    "PROGRAMS",
    "SCENES",
    "STREAM",
    "ProblemTaskSpec",
    "ProgramSpec",
    "build_program",
    "load_programs",
    "programs_for",
    "register_program",
]

# What a task feeds a program: the kinds of task a program can be built for. A task says which it is
# (memreason.eval.tasks); the registry never names a task.
SCENES = "scenes"  # one memory from a set of labelled episodes, then a count asked of each test scene
GRIDS = "grids"  # ARC-style problems: train pairs shown, a program written for the test inputs
PROBLEMS = "problems"  # each problem shows its own labelled episodes and asks its own queries
STREAM = "stream"  # a stream of text problems with text answers (reasoning-gym's tasks by name, rg:NAME)
KINDS = (SCENES, GRIDS, PROBLEMS, STREAM)

BOOL = ("categorical", (True, False))
# The search space every program shares on a task of each kind (a program's own ``space`` comes first): on scenes, the
# reader's chain of thought and per-object reading, and up to 8 demonstrations on the per-scene predictor; on grids, up
# to 2 bootstrapped demonstrations; on problems (each run through the task's own loop, which places no demos), CoT.
# ``demos`` is no constructor argument: a study places that many demonstrations (memreason.optimize.demos).
KIND_SPACES: dict[str, dict[str, tuple]] = {
    SCENES: {"cot": BOOL, "per_object": BOOL, "demos": ("int", 0, 8)},
    GRIDS: {"demos": ("int", 0, 2)},
    PROBLEMS: {"cot": BOOL},
}
SOLVER_SPACE = {"attempts": ("int", 1, 3), "retries": ("int", 0, 2)}  # an ARC solver's tries at a task
SELECTING_SPACE = {"top_k": ("int", 1, 10), **SOLVER_SPACE}  # ... and the concepts it selects


# the consolidators' prompts as the paper's task has always had them
ET = {"task_description": Imported("memreason.signatures:EXPERIENCE_TRANSFER_TASK")}


@runtime_checkable
class ProblemTaskSpec(Protocol):
    """What a program built for a task of :data:`PROBLEMS` reads from that task.

    ``signature``: the reader's task (a query's inputs, one output ``answer``); ``description``: the
    consolidator's words for the task; ``has_oracle``: its problems give their true rule (``Problem.oracle``);
    ``checked_program``: the factory of its hypothesis-checked program (knobs in, a module out), or None.
    """

    name: str
    signature: type[dspy.Signature]
    description: TaskDescription
    has_oracle: bool
    checked_program: Callable[..., dspy.Module] | None


@dataclass(frozen=True)
class ProgramSpec:
    """A registered program: everything the library knows of it, in one place.

    ``kind``: the kind of task it is written for (:data:`SCENES`, :data:`GRIDS`, or :data:`PROBLEMS` for a program
    of problem tasks only); ``build`` makes it for that kind from its knobs. ``on_problems``: how it is built for a
    task of :data:`PROBLEMS` (given the task, a factory of knobs), when it runs on such tasks at all; ``needs``:
    what it needs of such a task (``"oracle"``: the true rule; ``"checked_program"``: a checked program of the
    task's own). ``needs_attributes``: it builds memory from the episodes' structured attributes and perceives
    none, so it runs in text modality only. ``memory_format``: the concept memory it reads and writes (``"oe"``,
    ``"ps"``, ``"cheatsheet"``; None: none). ``space``: its knobs' Optuna search space beyond the one every
    program shares on a task of a kind (:data:`KIND_SPACES`, which follows it): name -> ``("int", low, high)`` or
    ``("categorical", choices)``. ``selects``: it reads its memory with an LM call of its own (one more call per
    problem in a budget's estimate). ``program``: the class it builds, imported when first built
    (:class:`memreason.lazy.Imported`; None: one built for problem tasks alone, by the task's own factory).
    """

    name: str
    kind: str
    build: Callable[..., dspy.Module]
    summary: str
    needs_attributes: bool = False
    on_problems: Callable[[ProblemTaskSpec], Callable[..., dspy.Module]] | None = None
    needs: tuple[str, ...] = ()
    memory_format: str | None = None
    space: Mapping[str, tuple] = field(default_factory=dict)
    selects: bool = False
    program: Imported | None = None

    def runs_on(self, task: Any) -> bool:
        """Whether it runs on ``task`` (any object with a ``kind``; a :class:`ProblemTaskSpec` for :data:`PROBLEMS`)."""
        if task.kind != PROBLEMS:
            return task.kind == self.kind
        return self.on_problems is not None and all(getattr(task, need, None) for need in self.needs)

    def build_for(self, task: Any, **knobs: Any) -> dspy.Module:
        """The program built for ``task`` (an object with a ``kind``) with ``knobs``."""
        if not self.runs_on(task):
            raise KeyError(f"{self.name} does not run on {task.name}")
        if task.kind != PROBLEMS:
            return self.build(**knobs)
        return self.on_problems(task)(**knobs)

    @property
    def reads_attempts(self) -> bool:
        """A stream program whose writes read the solver's reasoning where the run keeps it (its class's
        ``reads_attempts``; asking imports the class)."""
        return self.program is not None and bool(getattr(self.program.load(), "reads_attempts", False))

    @property
    def reader_knobs(self) -> tuple[str, ...]:
        from .shared import READER_KNOBS

        return READER_KNOBS if self.kind == SCENES else ()


def _spec(
    name: str,
    kind: str,
    cls: str | None,
    summary: str,
    *,
    needs_attributes: bool = False,
    on_problems: Callable[[ProblemTaskSpec], Callable[..., dspy.Module]] | None = None,
    needs: tuple[str, ...] = (),
    space: Mapping[str, tuple] | None = None,
    selects: bool = False,
    memory_format: str | None = None,
    **fixed: Any,
) -> ProgramSpec:
    """A program of the class ``cls`` names (``".module:Class"``, imported when first built) with ``fixed`` knobs."""
    program = Imported(cls, __package__) if cls is not None else None
    return ProgramSpec(
        name,
        kind,
        (lambda **knobs: program.load()(**{**_loaded(fixed), **knobs})) if program is not None else _no_kind(name),
        summary,
        needs_attributes,
        on_problems,
        needs,
        memory_format,
        dict(space or {}),
        selects,
        program,
    )


def _loaded(knobs: Mapping[str, Any]) -> dict[str, Any]:
    """``knobs`` with each :class:`Imported` value imported."""
    return {key: value.load() if isinstance(value, Imported) else value for key, value in knobs.items()}


def _no_kind(name: str) -> Callable[..., dspy.Module]:
    def build(**knobs: Any) -> dspy.Module:
        raise KeyError(f"{name} is built for a problem task: give the task")

    return build


def _on_problems(cls: str, *, described: bool = False, **fixed: Any) -> Callable[[ProblemTaskSpec], Callable[..., dspy.Module]]:
    """The class ``cls`` names built for a problem task: the task's reader signature (and, ``described``, its task
    description)."""

    def build(task: ProblemTaskSpec) -> Callable[..., dspy.Module]:
        words = {"task_description": task.description} if described else {}
        return lambda **knobs: Imported(cls, __package__).load()(**{**fixed, "signature": task.signature, **words, **knobs})

    return build


def _checked(task: ProblemTaskSpec) -> Callable[..., dspy.Module]:
    return task.checked_program


PROGRAMS: dict[str, ProgramSpec] = {
    spec.name: spec
    for spec in [
        _spec("episodic", SCENES, ".hdr:EpisodicMemory", "all raw episodes in context", cot=False),
        _spec(
            "episodic_cot",
            SCENES,
            ".hdr:EpisodicMemory",
            "all raw episodes, chain of thought (on an inductive task: the examples only, no memory built)",
            on_problems=_on_problems(".hdr:EpisodicMemory", cot=True),
            cot=True,
        ),
        _spec("semantic_oracle", SCENES, ".hdr:SemanticOracle", "oracle hypotheses only", cot=False),
        _spec(
            "semantic_oracle_cot",
            SCENES,
            ".hdr:SemanticOracle",
            "oracle hypotheses, chain of thought (on ACRE: the true blickets)",
            on_problems=_on_problems(".hdr:SemanticOracle", cot=True),
            needs=("has_oracle",),
            cot=True,
        ),
        _spec("episodic_semantic_oracle", SCENES, ".hdr:EpisodicSemanticOracle", "episodes and oracle hypotheses", cot=False),
        _spec(
            "episodic_semantic_oracle_cot",
            SCENES,
            ".hdr:EpisodicSemanticOracle",
            "episodes and oracle hypotheses, chain of thought (on ACRE: the examples and the true blickets)",
            on_problems=_on_problems(".hdr:EpisodicSemanticOracle", cot=True),
            needs=("has_oracle",),
            cot=True,
        ),
        _spec(
            "hdr",
            SCENES,
            ".hdr:HDR",
            "episodes and verified hypotheses (knobs: K, N, cot, resample)",
            on_problems=_on_problems(".hdr:HDR", described=True),
            **ET,
            space={"K": ("int", 1, 4), "N": ("int", 1, 5)},
        ),
        _spec(
            "hdr_checked",
            PROBLEMS,
            None,
            "problem tasks only: hypotheses proposed by the LM and checked in code against every example "
            "(ACRE: blickets and a rule; List Functions: a Python f(xs) run in the sandbox), counterexamples fed "
            "back for N rounds, the kept one applied in code (knobs: N, samples); not the paper's",
            on_problems=_checked,
            needs=("checked_program",),
            space={"N": ("int", 1, 5), "samples": ("int", 1, 3)},
        ),
        _spec(
            "hdr_grounded",
            SCENES,
            ".hdr:HDRGrounded",
            "episodes and rules checked by code against every episode, counterexamples fed back (knobs: K, N, cot, refine, "
            "generalise, apply_rules; the last two off until measured); "
            "not the paper's",
            **ET,
            space={"K": ("int", 0, 4), "N": ("int", 1, 5)},
        ),
        _spec(
            "hdr_grounded_unrefined",
            SCENES,
            ".hdr:HDRGrounded",
            "hdr_grounded with refine=False: refuted rules never narrowed, no stop when a round brings nothing new (the "
            "earlier loop); a comparison row",
            refine=False,
            **ET,
        ),
        _spec(
            "rule_learner",
            SCENES,
            ".hdr:RuleLearner",
            "episodes and the fewest general rules consistent with every episode, found by a greedy set cover "
            "with no LM (knob: cot); a reference row, not HDR; text modality only",
            needs_attributes=True,
        ),
        _spec(
            "reflexion_individual",
            SCENES,
            ".hdr:ReflexionIndividual",
            "episodes and one reflection per episode (knob: cot)",
        ),
        _spec("reflexion_all", SCENES, ".hdr:ReflexionAll", "episodes and one reflection on all episodes (knob: cot)"),
        _spec(
            "direct_hypothesis",
            SCENES,
            ".hdr:DirectHypothesis",
            "episodes and unverified hypotheses, no factors (knob: cot)",
            **ET,
        ),
        _spec(
            "two_stage",
            SCENES,
            ".hdr:TwoStage",
            "episodes, factors, then unverified hypotheses (knobs: K, cot)",
            space={"K": ("int", 1, 4)},
            **ET,
        ),
        _spec(
            "baseline",
            GRIDS,
            ".arcmemo:Baseline",
            "program synthesis without memory (knobs: attempts, retries, cot)",
            space=SOLVER_SPACE,
        ),
        _spec(
            "cheatsheet",
            GRIDS,
            ".arcmemo:Cheatsheet",
            "Dynamic Cheatsheet (cumulative), whole cheatsheet in context, frozen unless continual_every",
            memory_format="cheatsheet",
            space=SOLVER_SPACE,
        ),
        _spec(
            "arcmemo_oe",
            GRIDS,
            ".arcmemo:ArcMemoOE",
            "open-ended concepts, caption + top-k selection (knobs: top_k, continual_every, ...)",
            memory_format="oe",
            selects=True,
            space=SELECTING_SPACE,
        ),
        _spec(
            "arcmemo_ps",
            GRIDS,
            ".arcmemo:ArcMemoPS",
            "program-synthesis concepts, reasoning-based selection (knobs: top_k, continual_every, ...)",
            memory_format="ps",
            selects=True,
            space=SELECTING_SPACE,
        ),
        _spec(
            "arcmemo_ps_noselect",
            GRIDS,
            ".arcmemo:ArcMemoPS",
            "program-synthesis concepts, all of memory in context (ablation)",
            memory_format="ps",
            select=False,
            space=SOLVER_SPACE,
        ),
        _spec(
            "arcmemo_ps_oracle",
            GRIDS,
            ".arcmemo:ArcMemoPS",
            "program-synthesis concepts, those abstracted from tasks of the task's own concept (reference, no selection LM)",
            memory_format="ps",
            select="oracle",
            space=SOLVER_SPACE,
        ),
        _spec(
            "arcmemo_ps_exec",
            GRIDS,
            ".arcmemo:ArcMemoPS",
            "program-synthesis concepts ranked by running their stored programs on the task's train pairs, "
            "no LM call to select (knobs: top_k, default 3, continual_every, ...); not the paper's",
            memory_format="ps",
            select="execute",
            space=SELECTING_SPACE,
        ),
        _spec(
            "arcmemo_ps_exec_solution",
            GRIDS,
            ".arcmemo:ArcMemoPS",
            "program-synthesis concepts: every concept abstracted with the stored program that comes closest on the "
            "task's train pairs, no LM call to select (knobs: top_k = programs, default 1, continual_every, ...); not the paper's",
            memory_format="ps",
            select="execute",
            read_by="solution",
            space=SELECTING_SPACE,
        ),
    ]
}

# The library's programs that register themselves (``register_program`` on their classes, their facts there):
# read from these modules' source when this module is imported, so that listing them imports none of them (nor
# DSPy); registered again, as the same, when a module is imported. In the order they are listed.
SELF_REGISTERED = (
    ".stream.baseline",
    ".stream.fewshot",
    ".stream.reflexion",
    ".stream.cheatsheet",
    ".stream.concepts",
    ".stream.failure_memory",
    ".stream.stored_programs",
    ".stream.ace",
)


PLUGINS_VARIABLE = "MEMREASON_PROGRAMS"  # modules (or .py files) that register memory programs of their own
ENTRY_POINTS = "memreason.programs"
PLUGINS = Plugins(PLUGINS_VARIABLE, ENTRY_POINTS)
FACTS = ("kind", "summary", "memory_format", "space", "needs", "needs_attributes", "selects")  # read off a class


def register_program(
    cls: type | None = None, /, *, name: str | None = None, knobs: Mapping[str, Any] | None = None, **facts: Any
):
    """Register a memory program (a ``dspy.Module`` subclass) under its name, with its facts declared on the class;
    returns the class, so it works as a class decorator, bare or called::

        @register_program
        class KeepLast(StreamProgram):        # a stream program: kind "stream" comes with the base class
            name = "keep_last"                # default: the class's name in snake_case
            summary = "stream tasks: the last k solved problems (knob: k)"   # default: the docstring's first line
            memory_format = "examples"        # the memory it keeps (None: none)
            space = {"k": ("int", 1, 8)}      # its knobs' Optuna search space (ProgramSpec.space)

        @register_program(name="keep_last_2", knobs={"k": 2})   # a second name: the same class, knobs fixed

    The class attributes read are ``name`` and ``summary`` (the class's own, never inherited), and ``kind``,
    ``memory_format``, ``space``, ``needs``, ``needs_attributes``, ``selects`` (as :class:`ProgramSpec` holds
    them; inherited); a keyword given here overrides the class's. A name another class holds, a class with no
    ``kind`` (or one not in :data:`KINDS`), or one that is not a ``dspy.Module`` is refused: a TypeError or
    ValueError of one line. The same class registered again under its name (a module imported twice) replaces it.
    """
    unknown = set(facts) - set(FACTS)
    if unknown:
        raise TypeError(f"register_program: unknown fact {', '.join(sorted(unknown))}; known: name, knobs, {', '.join(FACTS)}")

    def register(cls: type) -> type:
        spec = _spec_of(cls, name, dict(knobs or {}), facts)
        held = PROGRAMS.get(spec.name)
        if held is not None and _class_path(held.program) != _class_path(spec.program):
            where = held.program.path if held.program is not None else "the library"
            raise ValueError(f"register_program: the name {spec.name!r} is taken (by {where}); give {cls.__name__} another name")
        PROGRAMS[spec.name] = spec
        return cls

    return register if cls is None else register(cls)


def _spec_of(cls: Any, name: str | None, fixed: dict[str, Any], given: Mapping[str, Any]) -> ProgramSpec:
    """The :class:`ProgramSpec` of ``cls`` from its class attributes, ``given`` overriding them."""
    import dspy  # the class was defined with DSPy: importing it costs nothing more

    if not isinstance(cls, type) or not issubclass(cls, dspy.Module):
        raise TypeError(f"register_program takes a dspy.Module subclass, got {getattr(cls, '__qualname__', repr(cls))}")
    inherited = {fact: _plain(getattr(cls, fact, None)) for fact in FACTS}
    return _spec_from(cls.__name__, name, inherited, vars(cls), given, fixed, Defined(cls))


def _spec_from(
    class_name: str,
    name: str | None,
    inherited: Mapping[str, Any],
    own: Mapping[str, Any],
    given: Mapping[str, Any],
    fixed: Mapping[str, Any],
    program: Imported,
) -> ProgramSpec:
    """The :class:`ProgramSpec` of a class (``class_name``, built from ``program``) from its attributes
    (``inherited``: as the class reads them; ``own``: its own, docstring included) and the decorator's ``name``,
    ``given`` facts and ``fixed`` knobs: one rule for a class registered at import and one read from source."""
    facts = {fact: given[fact] if fact in given else inherited.get(fact) for fact in FACTS}
    facts["summary"] = given.get("summary") or own.get("summary") or _first_line(own.get("__doc__"))
    name = name or own.get("name") or _snake(class_name)
    unread = [fact for fact, value in [*facts.items(), ("name", name)] if isinstance(value, NotRead)]
    if unread:
        raise DeclarationError(f"register_program: {class_name}'s {', '.join(unread)} must be literals to be read unimported")
    kind = facts["kind"]
    if kind not in KINDS:
        said = "has no kind" if kind is None else f"has kind {kind!r}"
        raise ValueError(f"register_program: {class_name} {said}; set kind = one of {', '.join(KINDS)} on the class")
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"register_program: {class_name}'s name {name!r} is not a name one can type (letters, digits, _)")

    def build(**knobs: Any) -> dspy.Module:
        return program.load()(**{**fixed, **knobs})

    def on_problems(task: ProblemTaskSpec) -> Callable[..., dspy.Module]:
        return lambda **knobs: program.load()(**{**fixed, "signature": task.signature, **knobs})

    return ProgramSpec(
        name,
        kind,
        build if kind != PROBLEMS else _no_kind(name),
        facts["summary"] or name,
        bool(facts["needs_attributes"]),
        on_problems if kind == PROBLEMS else None,
        tuple(facts["needs"] or ()),
        facts["memory_format"],
        dict(facts["space"] or {}),
        bool(facts["selects"]),
        program,
    )


def _class_path(program: Imported | None) -> str | None:
    """``module:name`` of ``program`` with its module made absolute (a class read from source and the same class
    registered at import name the same)."""
    if program is None:
        return None
    module, _, name = program.path.partition(":")
    return f"{resolve_name(module, program.package) if module.startswith('.') else module}:{name}"


@dataclass(frozen=True, init=False)
class Defined(Imported):
    """Where a registered class is defined (``module:qualname``, as :class:`Imported` names it), holding the class:
    a class defined anywhere, a function's body included, loads as itself."""

    cls: Any = field(default=None, compare=False, repr=False)

    def __init__(self, cls: type):
        object.__setattr__(self, "path", f"{cls.__module__}:{cls.__qualname__}")
        object.__setattr__(self, "package", None)
        object.__setattr__(self, "cls", cls)

    def load(self) -> Any:
        return self.cls


def _plain(value: Any) -> Any:
    """A class attribute as a fact: one an instance computes (a property) is none the class declares."""
    return None if isinstance(value, property) else value


def _first_line(doc: str | None) -> str:
    return (doc or "").strip().split("\n")[0].strip()


def _snake(name: str) -> str:
    """``KeepLast`` -> ``keep_last``."""
    return "".join(f"_{c.lower()}" if c.isupper() and i else c.lower() for i, c in enumerate(name))


def load_programs(*, error: type[Exception] = PluginError) -> None:
    """Import the modules named in ``MEMREASON_PROGRAMS`` and the ``memreason.programs`` entry points (each once a
    process): their :func:`register_program` classes register. One that cannot be loaded is one ``error`` line
    naming it (the command line: exit 2). Every command calls it before it looks a program up."""
    PLUGINS.load(on_entry=_register_entry, error=error)


def _register_entry(found: Any) -> None:
    """An entry point's object: a class not yet registered registers (a module's import registers its own)."""
    if isinstance(found, type) and not any(_class_path(spec.program) == Defined(found).path for spec in PROGRAMS.values()):
        register_program(found)


def _register_declared() -> None:
    """Register the classes of :data:`SELF_REGISTERED`, read from source (:mod:`memreason.programs.declared`)."""
    for found in declared(SELF_REGISTERED, __package__):
        program = Imported(found.path, __package__)
        spec = _spec_from(
            found.class_name, found.name, found.facts, {**found.own, "__doc__": found.doc}, found.given, found.knobs, program
        )
        if spec.name in PROGRAMS:
            raise DeclarationError(
                f"register_program: {found.path} takes the name {spec.name!r}, which {PROGRAMS[spec.name].program} holds"
            )
        PROGRAMS[spec.name] = spec


_register_declared()


def programs_for(kind: str) -> list[str]:
    """The names of the registered programs written for tasks of ``kind``, in the order they registered."""
    load_programs()
    return [name for name, spec in PROGRAMS.items() if spec.kind == kind]


def build_program(name: str, *, task: Any = None, **knobs: Any) -> dspy.Module:
    """Build the registered program ``name`` with its knobs (constructor arguments), for ``task`` when given
    (a task object with a ``kind``: a problem task's signature and words go into the program; default: the
    program built for its own kind)."""
    load_programs()
    if name not in PROGRAMS:
        raise KeyError(f"unknown program {name!r}; known: {', '.join(PROGRAMS)}")
    return PROGRAMS[name].build(**knobs) if task is None else PROGRAMS[name].build_for(task, **knobs)
