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
    "STREAM_MEMORY_SPACE",
    "STREAM_VERIFY_SPACE",
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
    STREAM: {"cot": BOOL},
}
# On a stream task a program that keeps memory also tunes how the stream runs it (options of the run, no constructor
# arguments: memreason.optimize.space.RUN_OPTIONS): items between memory updates (0: memory frozen after the seed
# problems), and, where writes can be verified (they learn from a reference or a check), problems already scored that
# each write is tried on (0: none) and the margin it must win by.
STREAM_MEMORY_SPACE = {"batch": ("categorical", (0, 5, 10, 20))}
STREAM_VERIFY_SPACE = {"verify": ("int", 0, 4), "verify_margin": ("int", 0, 2)}


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
    (:class:`memreason.lazy.Imported`; for one built by a problem task's own factory, the class it registers on).
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


def _no_kind(name: str) -> Callable[..., dspy.Module]:
    def build(**knobs: Any) -> dspy.Module:
        raise KeyError(f"{name} is built for a problem task: give the task")

    return build


# Every registered program by the name users type, in the order they registered: the library's own (read from their
# classes' source below, :data:`SELF_REGISTERED`), then those of your own (``register_program`` as they are imported).
PROGRAMS: dict[str, ProgramSpec] = {}


# The library's programs that register themselves (``register_program`` on their classes, their facts there):
# read from these modules' source when this module is imported, so that listing them imports none of them (nor
# DSPy); registered again, as the same, when a module is imported. In the order they are listed.
SELF_REGISTERED = (
    ".hdr.oracle_baselines",
    ".hdr.hdr",
    ".hdr.checked_program",
    ".hdr.hdr_grounded",
    ".hdr.rule_learner",
    ".hdr.reflexion",
    ".hdr.hypothesis_baselines",
    ".arcmemo.arc_program",
    ".arcmemo.cheatsheet",
    ".arcmemo.arcmemo",
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
FACTS = (  # read off a class
    "kind",
    "summary",
    "memory_format",
    "space",
    "needs",
    "needs_attributes",
    "selects",
    "on_problems",
    "described",
)
# How a program is built for a task of PROBLEMS (its ``on_problems``): the class with the task's reader signature, or
# the task's own checked program (the task's ``checked_program`` factory; the class registered says what it is).
ON_PROBLEMS = ("signature", "checked")
# What a program that takes a task's words (``described``) is given on the scenes: the paper's task, as its
# consolidators' prompts have always had it (on a problem task: the task's own ``description``).
SCENES_DESCRIPTION = Imported("memreason.signatures:EXPERIENCE_TRANSFER_TASK")


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
    them; inherited), ``on_problems`` (how a program of another kind is built for a problem task as well:
    ``"signature"``, the class with the task's reader signature; ``"checked"``, the task's own checked program;
    None: it does not run on them; a program of kind ``problems`` is built with the signature unless it says
    ``"checked"``) and ``described`` (its constructor takes ``task_description``: the Experience-Transfer task's
    on the scenes, a problem task's own on one); a keyword given here overrides the class's. A name another class holds, a class with no
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
    how = facts["on_problems"] or ("signature" if kind == PROBLEMS else None)
    if how is not None and how not in ON_PROBLEMS:
        raise ValueError(f"register_program: {class_name}'s on_problems {how!r} is none of {', '.join(ON_PROBLEMS)} (or None)")
    described = bool(facts["described"])

    def build(**knobs: Any) -> dspy.Module:
        words = {"task_description": SCENES_DESCRIPTION.load()} if described and kind == SCENES else {}
        return program.load()(**{**words, **fixed, **knobs})

    def with_signature(task: ProblemTaskSpec) -> Callable[..., dspy.Module]:
        words = {"task_description": task.description} if described else {}
        return lambda **knobs: program.load()(**{**fixed, "signature": task.signature, **words, **knobs})

    def checked(task: ProblemTaskSpec) -> Callable[..., dspy.Module]:
        return task.checked_program

    return ProgramSpec(
        name,
        kind,
        build if kind != PROBLEMS else _no_kind(name),
        facts["summary"] or name,
        bool(facts["needs_attributes"]),
        {"signature": with_signature, "checked": checked, None: None}[how],
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
