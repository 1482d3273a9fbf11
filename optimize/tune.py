"""A study from its options to its directory: what ``python -m optimize <program>`` does.

    options = StudyOptions(program="hdr", level=1, trials=8, limit=30, lm="openai/gpt-4o-mini")
    options = StudyOptions(program="hdr_checked", task="acre", trials=8, limit=20)   # any registered task
    outcome = run_study(options)       # the same options again continue the study; ``trials`` is its total
    outcome.best[0].params, outcome.written["best"]

The study lives in ``runs/optimize/<program>-<study>/`` (``out``): ``study.db`` (the
default storage), ``configs/`` (one directory per configuration tried, the files a
``python -m eval`` run writes), ``memories/`` (consolidated memories shared across
trials), ``dspy_cache/``, and the outputs (:mod:`memreason.optimize.outputs`). What a
trial does depends on the kind of its task (:data:`PREPARE`): Experience-Transfer's and
ARC's objectives, or a problem task's own evaluation
(:mod:`memreason.optimize.problem_objective`). Running the same options again continues a
stopped study. How workers on several processes or hosts share one study: see
:mod:`memreason.optimize.study`.

Bad input (unknown program, unknown task or one the program does not run on, bad space
spec, bad storage URL, unknown LM, unknown ARC split, unreadable or mismatched memory file)
raises :class:`UsageError`, :class:`SpaceError`, :class:`StudyError` or
:class:`RuleTableError` before the study directory is made or any model loads. Progress
goes to this module's logger.
"""

from __future__ import annotations

import json
import logging
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from optuna.trial import FrozenTrial

from memreason.datasets.experience_transfer import LEVELS, load_rules, make_level
from memreason.eval.harness.budget import chars_to_tokens, check_prices, log_estimate, new_spend, saved_rates
from memreason.eval.harness.errors import UsageError
from memreason.eval.harness.lms import resolve_lms, retry_policy
from memreason.eval.harness.options import LMOptions
from memreason.eval.harness.resume import read_examples
from memreason.eval.harness.runs import read_json, use_response_cache
from memreason.eval.harness.tracking import check_mlflow, tracking
from memreason.eval.harness.tuned import TunedError, state_digest
from memreason.eval.harness.usage import UsageTally
from memreason.eval.tasks import Task, get_task, task_names
from memreason.lm.cost import price
from memreason.lm.faults import RunAborted
from memreason.lm.spend import Spend
from memreason.programs import PROGRAMS, build_program
from memreason.programs.registry import GRIDS, PROBLEMS, SCENES, STREAM

from .choices import OBJECTIVES
from .lms import resolve
from .objective import Objective, Setup
from .space import RUN_OPTIONS, Space, SpaceError, default_space, parse_value, read_space_file, run_options, split_params
from .stream_objective import StreamSettings
from .study import Budget, load_study, make_pruner, make_sampler, open_storage, run_workers, sqlite_url
from .tracking import trial_runs

if TYPE_CHECKING:
    from memreason.datasets.arc import ArcTask
    from memreason.lm import LMChoice
    from memreason.lm.faults import RetryPolicy

__all__ = ["OBJECTIVES", "StudyData", "StudyOptions", "StudyOutcome", "run_study", "study_task"]

log = logging.getLogger(__name__)


@dataclass(kw_only=True)
class StudyOptions(LMOptions):
    """What a study asks for (``python -m optimize <program>``); field names are the command line's."""

    program: str
    # data
    task: str | None = None  # a registered task (None: the first of the program's kind; required for problem programs)
    level: int | None = None  # Experience-Transfer
    modality: str = "text"
    rules: str | None = None  # a rule table as JSON (None: the HDR paper's Table 1)
    program_state: Path | None = None  # Experience-Transfer: a DSPy state every trial's program starts from
    split: str | None = None  # ARC (None: val100)
    memory: str | None = None  # ARC: the concept memory file the program reads, frozen during the study
    seed: int = 0  # data seed; demos come from seed + 1000
    limit: int | None = None  # each configuration on the first N examples
    # a stream task (None: python -m eval's default; given on another task: refused)
    size: int | None = None  # tuning items (default 20; --limit says the same)
    report_size: int | None = None  # the first N items of the report seed's stream kept out of tuning (default 50)
    seed_size: int | None = None
    task_config: str | None = None
    answer: str | None = None
    retries: int | None = None
    learn_from: str | None = None
    lesson: str | None = None
    order_seed: int | None = None
    orders: int | None = None
    # study
    trials: int = 20  # the study's total, all workers together
    study: str | None = None  # study name (None: L<level>, the split's name, or the problem task's)
    storage: str | None = None  # an Optuna RDB URL (None: sqlite in the study directory)
    out: Path | None = None  # the study directory (None: runs/optimize/<program>-<study>)
    objectives: str = "accuracy"  # one of OBJECTIVES
    param: list[str] = field(default_factory=list)  # NAME=SPEC overrides of the declared space
    space: str | None = None  # a JSON file of NAME: SPEC overrides
    enqueue: list[str] = field(default_factory=list)  # configurations tried first, "K=2,N=3,..."
    sampler: str = "tpe"
    sampler_seed: int | None = None
    pruner: str = "median"
    chunks: int = 3  # examples answered in this many growing chunks, accuracy to the pruner after each
    demo_source: str = "labeled"
    train_size: int = 40  # training examples demos are drawn from
    n_jobs: int = 1  # trials at once in this process (threads)
    threads: int = 1  # examples answered in parallel within a trial
    heartbeat: int = 60  # seconds between a running trial's heartbeats
    mlflow: str | None = None  # None: no tracking; "": a SQLite store beside the study directory; else a tracking URI


@dataclass
class StudyOutcome:
    """A study after this worker's trials: where it is, what this worker did, the best trial(s), the files written."""

    name: str
    directory: Path
    ran: int  # trials this worker finished
    memories_built: int
    memories_reused: int
    best: list[FrozenTrial]  # the best trial, or the Pareto front (most accurate first); empty when none finished
    written: dict[str, Path]  # "best", "state", "pareto", "history", "summary", ... -> file
    eval_words: list[str] = field(default_factory=list)  # python -m eval's words for the best trial beyond --task, --config


def run_study(options: StudyOptions) -> StudyOutcome:
    """Run trials of ``options.program``'s study until it holds ``options.trials`` finished ones (continuing it when it
    exists), then write its outputs."""
    if options.program not in PROGRAMS:
        raise UsageError(f"unknown program {options.program!r}; choose from: {', '.join(PROGRAMS)}")
    benchmark = study_task(options)
    check_mlflow(options)
    objectives = parse_objectives(options.objectives)
    space = resolve_space(
        options.program, options.param, options.space, kind=benchmark.kind, verifiable=writes_verifiable(options, benchmark)
    )
    check_program(options.program, space, benchmark)
    enqueue = [parse_enqueue(text, space) for text in options.enqueue]
    multi = len(objectives) > 1
    sampler = make_sampler(options.sampler, space_grid=space.grid(), seed=options.sampler_seed, multi=multi)
    pruner = make_pruner(options.pruner, multi=multi)
    data = PREPARE[benchmark.kind](options, benchmark)  # bad data, memory files and states fail here
    if data.check_space is not None:
        data.check_space(space)
    study_name = f"{options.program}-{options.study or data.default_name}"
    study_dir = options.out or Path("runs") / "optimize" / study_name
    remote = options.storage and not options.storage.startswith("sqlite")  # a SQLite file may live in the study directory
    storage = open_storage(options.storage, heartbeat=options.heartbeat) if remote else None  # a bad URL fails now

    check_prices(options.budget_usd, [options.lm, options.memory_lm or options.lm])  # before any model work
    task, memory = resolve_lms(options, slots=options.threads * options.n_jobs, resolve=resolve)
    if options.modality == "image" and (task.local or memory.local):
        raise UsageError("the local model reads text only: use --modality text, or a vision model with --lm")
    study_dir.mkdir(parents=True, exist_ok=True)  # only now: bad input leaves nothing behind
    storage = storage or open_storage(options.storage or sqlite_url(study_dir / "study.db"), heartbeat=options.heartbeat)
    use_response_cache(options.cache or study_dir / "dspy_cache")

    setup = Setup(
        program=options.program,
        level=options.level,
        split=options.split,
        modality=options.modality,
        rules=options.rules,
        seed=options.seed,
        limit=options.limit,
        objectives=objectives,
        chunks=options.chunks,
        demo_source=options.demo_source,
        train_size=options.train_size,
        threads=options.threads,
        lm=task.spec,
        memory_lm=memory.spec,
        temperature=options.temperature,
        max_tokens=options.max_tokens,
        memory_file=options.memory,
        program_state=str(options.program_state) if options.program_state else None,
        program_state_sha256=data.state,
        task=data.task,
        lm_args=dict(options.lm_args) or None,
        memory_lm_args=dict(options.memory_lm_args) or None,
        extra=data.identity,
    )
    objective = data.objective(setup, space, study_dir, task, memory, retry_policy(options))

    study = load_study(study_name, storage, objectives, sampler, pruner)
    study.set_user_attr("space", space.describe())
    log.info("study %s in %s: %s trials over %s", study_name, study_dir, options.trials, space.describe())
    limit = StudyLimit(options, study, study_dir, task.spec, memory.spec) if new_spend(options) else None
    if limit is not None:
        _estimate(options, study, study_dir, task.spec, memory.spec, data)

    from .outputs import best_trials, write_outputs

    setup_record = {
        "program": options.program,
        "task": benchmark.name,
        "level": options.level,
        "split": options.split,
        "memory": options.memory,
        "modality": options.modality,
        "rules": options.rules,
        "seed": options.seed,
        "limit": options.limit,
        **data.record,
        "lm": task.spec,
        "memory_lm": memory.spec,
        "objectives": list(objectives),
        "study": study_name,
        "storage": options.storage or "sqlite (study.db)",
    }
    with tracking(
        options,
        study_dir,
        name=study_name,
        params={**setup_record, "trials": options.trials, "space": space.describe()},
        artifacts=("summary.md", "*.png", "best.json", "pareto.json"),
    ) as run:
        ran = run_workers(
            study,
            trial_runs(objective, run),
            trials=options.trials,
            n_jobs=options.n_jobs,
            enqueue=enqueue,
            stop=limit.reached if limit else None,
        )
        if limit is not None:  # why the study stopped, in its own record (None once it finished)
            study.set_user_attr("stopped", {"reason": "budget", **limit.spend().as_dict()} if limit.stopped else None)
        written = write_outputs(study, study_dir, setup_record)
    if limit is not None and limit.stopped:
        raise RunAborted(limit.spend().why(study_dir))
    best = best_trials(study)
    return StudyOutcome(
        name=study_name,
        directory=study_dir,
        ran=ran,
        memories_built=objective.memories.builds,
        memories_reused=objective.memories.hits,
        best=best,
        written=written,
        eval_words=data.eval_words(best[0].params) if data.eval_words is not None and best else [],
    )


def study_task(options: StudyOptions) -> Task:
    """The task a study runs on: ``options.task``, else the first registered task of the program's own kind (the
    paper's benchmark: Experience-Transfer for programs of scenes, ARC for programs of grids); a program of problem
    tasks only needs ``--task``. :class:`UsageError` for a task the program does not run on."""
    spec = PROGRAMS[options.program]
    if options.task is not None:
        benchmark = get_task(options.task)
    else:
        own = [get_task(name) for name in task_names() if get_task(name).kind == spec.kind]
        if spec.kind == STREAM:
            raise UsageError(f"{options.program} runs on stream tasks: give --task rg:NAME (a reasoning-gym dataset) or et:LN")
        if spec.kind == PROBLEMS or not own:
            runs_on = [name for name in task_names() if spec.runs_on(get_task(name))]
            raise UsageError(f"{options.program} runs on problem tasks: give --task ({', '.join(runs_on)})")
        benchmark = own[0]
    if not spec.runs_on(benchmark):
        raise UsageError(
            f"{options.program} does not run on {benchmark.name}; programs that do: {', '.join(benchmark.programs())}"
        )
    if benchmark.kind not in PREPARE:
        raise UsageError(f"studies run on tasks of kind {', '.join(PREPARE)}; {benchmark.name} is of kind {benchmark.kind}")
    return benchmark


ObjectiveFactory = Callable[["Setup", Space, Path, "LMChoice", "LMChoice", "RetryPolicy"], Objective]


@dataclass
class StudyData:
    """What a study needs of its task, read before the study directory is made (bad input fails here).

    ``default_name``: the study's name without ``--study``; ``objective``: makes the trial objective from the
    setup, space, study directory, LMs and retry policy; ``examples``: the items a trial answers (for the budget's
    estimate) and ``first_rates``: (LM calls an item, prompt tokens a call, basis) before the study has records;
    ``state``: the sha256 of a state every trial starts from; ``task``: the task's name where it is part of a
    configuration's identity (None: the study's kind of task has always had one task); ``identity``: more of what
    decides a configuration's results (absent: none, as studies of the papers' tasks have always had); ``record``:
    more for the study's record; ``check_space``: refuses a search space the task cannot run."""

    default_name: str
    objective: ObjectiveFactory
    examples: int
    first_rates: Callable[[], tuple[float, float, str]]
    state: str | None = None
    task: str | None = None
    identity: dict[str, Any] = field(default_factory=dict)  # more of what decides a configuration's results
    record: dict[str, Any] = field(default_factory=dict)  # more for best.json and summary.md
    check_space: Callable[[Space], None] | None = None  # refuses a space the task cannot run, in one line
    eval_words: Callable[[dict[str, Any]], list[str]] | None = None  # python -m eval's words for a trial's params


def _scenes(options: StudyOptions, benchmark: Task) -> StudyData:
    """Experience-Transfer: the level's scenes; memories shared by trials whose consolidation knobs match."""
    from .objective import ExperienceTransferObjective

    refuse_stream_options(options, benchmark)
    if options.level not in LEVELS:
        raise UsageError(
            f"{options.program} needs --level {{1,2,3}}"
            if options.level is None
            else f"--level must be 1, 2 or 3, got {options.level}"
        )
    if options.modality == "image" and PROGRAMS[options.program].needs_attributes:
        raise UsageError(
            f"{options.program} learns from the episodes' attributes, which images do not carry: use --modality text"
        )
    data = make_level(options.level, seed=options.seed, rules=load_rules(options.rules))
    state = consolidation_digest(options.program, options.program_state)  # a bad state fails now

    def first_rates() -> tuple[float, float, str]:
        context = " ".join(e.text() for e in data.episodes)
        prompt = chars_to_tokens([s.text() for s in data.test[:3]], context)
        return 1.0, prompt, "the first 3 scenes' text and the level's episodes, 4 characters a token"

    return StudyData(
        default_name=f"L{options.level}",
        objective=lambda *args: ExperienceTransferObjective(*args, data=data),
        examples=min(options.limit or len(data.test), len(data.test)),
        first_rates=first_rates,
        state=state,
    )


def _grids(options: StudyOptions, benchmark: Task) -> StudyData:
    """ARC: the split's tasks, the concept memory frozen."""
    from memreason.eval.arc.evaluate import split_name

    from .arc_objective import ArcObjective

    refuse_stream_options(options, benchmark)
    if options.level is not None:
        raise UsageError(f"{options.program} is an ARC program: use --split, not --level")
    if options.program_state is not None:
        raise UsageError("--program-state starts Experience-Transfer studies only")
    tasks = load_arc(options)  # bad splits and memory files fail here, before the study directory is made

    def first_rates() -> tuple[float, float, str]:
        from memreason.eval.arc import ArcConfig
        from memreason.eval.arc.evaluate import arc_rates

        rates = arc_rates(ArcConfig(program=options.program, memory=options.memory), tasks, {})
        return rates["calls"], rates["prompt"], rates["basis"]

    return StudyData(
        default_name=split_name(options.split or "val100"),
        objective=lambda *args: ArcObjective(*args, tasks=tasks),
        examples=len(tasks),
        first_rates=first_rates,
    )


NOT_ON_PROBLEMS = {"level": "--level", "rules": "--rules", "program_state": "--program-state", "split": "--split"}
# A stream's options (python -m eval's for stream tasks): refused on a task of another kind.
STREAM_ONLY = {
    "size": "--size",
    "report_size": "--report-size",
    "seed_size": "--seed-size",
    "task_config": "--task-config",
    "answer": "--answer",
    "retries": "--retries",
    "learn_from": "--learn-from",
    "lesson": "--lesson",
    "order_seed": "--order-seed",
    "orders": "--orders",
}


def refuse_stream_options(options: StudyOptions, benchmark: Task) -> None:
    """A stream's option given for a task of another kind: one line."""
    given = options.as_dict()
    for key, flag in STREAM_ONLY.items():
        if given[key] is not None:
            raise UsageError(f"{flag} is an option of a study on a stream task (rg:NAME, et:LN), not on {benchmark.name}")


def _problems(options: StudyOptions, benchmark: Task) -> StudyData:
    """A problem task (ACRE, List Functions, one of your own): each trial the task's own run with the trial's knobs."""
    from .problem_objective import ProblemObjective

    refuse_stream_options(options, benchmark)
    given = options.as_dict()
    for key, flag in {**NOT_ON_PROBLEMS, "memory": "--memory"}.items():
        if given[key] is not None:
            raise UsageError(f"{flag} is not an option of a study on {benchmark.name}")
    if options.modality != "text":
        raise UsageError(f"--task {benchmark.name} is text only: leave out --modality {options.modality}")
    problems = benchmark.problems(seed=options.seed, limit=options.limit)
    queries = [(p, q) for p in problems for q in p.queries]

    def first_rates() -> tuple[float, float, str]:
        first = queries[:3]
        texts = [" ".join(e.text for e in p.episodes) + " " + q.text for p, q in first]
        return 1.0, chars_to_tokens(texts), "the first 3 queries' text and their problems' episodes, 4 characters a token"

    return StudyData(
        default_name=benchmark.name,
        objective=lambda *args: ProblemObjective(*args, benchmark=benchmark),
        examples=len(queries),
        first_rates=first_rates,
        task=benchmark.name,
    )


def _stream(options: StudyOptions, benchmark: Task) -> StudyData:
    """A stream task (rg:NAME, et:LN, one of your own): each trial the task's own run of the stream with the trial's
    knobs, on the tuning stream's items (:mod:`memreason.optimize.held_out`), never the reported ones."""
    from memreason.eval.stream.evaluate import stream_config
    from memreason.eval.stream.options import StreamOptions

    from .held_out import TuningStream
    from .stream_objective import StreamObjective

    given = options.as_dict()
    for key, flag in {**NOT_ON_PROBLEMS, "memory": "--memory"}.items():
        if given[key] is not None:
            raise UsageError(f"{flag} is not an option of a study on {benchmark.name}")
    if options.modality != "text":
        raise UsageError(f"--task {benchmark.name} is text only: leave out --modality {options.modality}")
    if options.size is not None and options.limit is not None and options.size != options.limit:
        raise UsageError(f"--size {options.size} and --limit {options.limit} say the same (tuning items): give one")
    stream = {key: value for key, value in given.items() if key in STREAM_ONLY and value is not None}
    stream["size"] = options.size or options.limit or StreamSettings.size
    settings = StreamSettings(**stream)
    tuning = TuningStream(benchmark, report_seed=options.seed, report_size=settings.report_size)
    # the study's stream checked as python -m eval checks a run, before the study directory is made
    run = StreamOptions(program=options.program, task=benchmark.name, seed=tuning.seed, **_run_fields(settings))
    learn_from = stream_config(run, tuning).learn_from

    def check_space(space: Space) -> None:
        """Verified writes need a score of the probes; run options within what python -m eval takes."""
        if learn_from not in ("reference", "check") and any(v for v in _values(space, "verify")):
            raise UsageError(
                f"verify: writes learn from {learn_from} here, which cannot verify them; --learn-from reference or check "
                "(or --param verify=0)"
            )
        for name, low in (("batch", 0), ("verify", 0), ("verify_margin", 0)):
            if any(not isinstance(v, int) or isinstance(v, bool) or v < low for v in _values(space, name)):
                raise SpaceError(f"{name}: whole numbers from {low}, got {', '.join(map(str, _values(space, name)))}")

    def first_rates() -> tuple[float, float, str]:
        first = tuning.data(json.loads(settings.task_config)).items(tuning.seed, 3, distinct=True)
        return 1.0, chars_to_tokens([item.question for item in first]), "the first 3 tuning items' text, 4 characters a token"

    return StudyData(
        default_name=benchmark.name.replace(":", "-"),
        objective=lambda *args: StreamObjective(*args, benchmark=tuning, settings=settings),
        examples=settings.size * settings.orders,
        first_rates=first_rates,
        task=benchmark.name,
        identity={"stream": settings.identity(), "tuning_seed": tuning.seed},
        record={"size": settings.size, "tuning_seed": tuning.seed, "report_size": settings.report_size, "stream": stream},
        check_space=check_space,
        eval_words=lambda params: _eval_words(options, settings, params),
    )


def _eval_words(options: StudyOptions, settings: Any, params: dict[str, Any]) -> list[str]:
    """``python -m eval``'s words for the items a user reports on, run as the trial with ``params`` ran."""
    words = [f"--seed {options.seed}"] if options.seed else []
    if settings.report_size != 50:
        words.append(f"--size {settings.report_size}")
    run = {name: getattr(settings, name) for name in RUN_OPTIONS} | run_options(params)
    given = {key: getattr(settings, key) for key in STREAM_ONLY if key not in ("size", "report_size")}
    for key, value in {**given, **run}.items():
        if value is not None and value != getattr(StreamSettings, key):
            words.append(f"--{key.replace('_', '-')} " + (shlex.quote(value) if isinstance(value, str) else str(value)))
    return words


def _run_fields(settings: Any) -> dict[str, Any]:
    fields = settings.identity()
    fields.pop("report_size")
    return fields


def _values(space: Space, name: str) -> list[Any]:
    return space[name].values if name in space.names else []


# How a study reads a task of each kind (what its trials do: memreason.optimize.objective, arc_objective,
# problem_objective, stream_objective).
PREPARE: dict[str, Callable[[StudyOptions, Task], StudyData]] = {
    SCENES: _scenes,
    GRIDS: _grids,
    PROBLEMS: _problems,
    STREAM: _stream,
}


def example_files(study_dir: Path) -> list[Path]:
    """Every configuration's example records: in its directory, or in its run's (a problem task's trials)."""
    return sorted(study_dir.glob("configs/*/examples.jsonl")) + sorted(study_dir.glob("configs/*/run/examples.jsonl"))


def study_spend(options: StudyOptions, study_dir: Path, task_spec: str, memory_spec: str) -> Spend:
    """What the study has spent against its limit: its configurations' example records (every trial, every worker
    on this host) and the memories it built (each once, whatever number of trials read it; on a problem task, each
    trial's own)."""
    spend = new_spend(options) or Spend()
    tally = UsageTally()
    for path in example_files(study_dir):
        for record in read_examples(path, repair=False).values():
            tally.add(record, role="task")
    for path in sorted(study_dir.glob("memories/*.json")) + sorted(study_dir.glob("configs/*/run/memory/run*/*.json")):
        tally.add(read_json(path), role="memory")
    roles = tally.roles()
    spend.add(roles["task"], price(task_spec), earlier=True)
    spend.add(roles["memory"], price(memory_spec), earlier=True)
    return spend


@dataclass
class StudyLimit:
    """A study's spending limit, asked before each trial starts (:func:`run_workers`'s ``stop``): reached once what the
    study's records hold meets the cap while trials are still missing (``stopped``)."""

    options: StudyOptions
    study: Any
    study_dir: Path
    task_spec: str
    memory_spec: str
    stopped: bool = False

    def spend(self) -> Spend:
        return study_spend(self.options, self.study_dir, self.task_spec, self.memory_spec)

    def reached(self) -> bool:
        if not self.stopped and self.spend().reached:
            self.stopped = Budget(self.options.trials).finished(self.study) < self.options.trials
        return self.stopped


def _estimate(options: StudyOptions, study, study_dir: Path, task_spec: str, memory_spec: str, data: StudyData) -> None:
    """Log the study's rough spend against its cap: trials left x examples a trial x calls x prompt tokens a call
    (from the study's records, else from the first examples' inputs)."""
    left = max(0, options.trials - Budget(options.trials).finished(study))
    records = [r for path in example_files(study_dir) for r in read_examples(path, repair=False).values()]
    rates = saved_rates(records)
    if rates is not None:
        (calls, prompt), basis = rates, f"from the {len(records)} examples the study has"
    else:
        calls, prompt, basis = data.first_rates()
    log_estimate(
        study_spend(options, study_dir, task_spec, memory_spec),
        unit=f"examples ({left} trials left, {data.examples} examples a trial, memory builds besides)",
        todo=left * data.examples,
        done=0,
        calls=calls,
        prompt=prompt,
        basis=basis,
        spec=task_spec,
    )


def writes_verifiable(options: StudyOptions, benchmark: Task) -> bool:
    """Whether a stream's writes can be verified: they learn from a reference or the task's check (as python -m eval
    chooses: check where the task has one, else the model's own judgement)."""
    learn_from = options.learn_from or ("check" if getattr(benchmark, "checker", None) is not None else "self")
    return learn_from in ("reference", "check")


def parse_objectives(text: str) -> tuple[str, ...]:
    """``"accuracy"`` or ``"accuracy,tokens"`` as the objectives' names."""
    objectives = tuple(o.strip() for o in text.split(",") if o.strip())
    if ",".join(objectives) not in OBJECTIVES:
        raise UsageError(f"--objectives must be accuracy or accuracy,tokens, got {text!r}")
    return objectives


def resolve_space(
    program: str, params: list[str], space_file: str | None, *, kind: str | None = None, verifiable: bool = True
) -> Space:
    """The declared space of ``program`` on a task of ``kind`` (default: its own; on a stream task, ``verifiable``:
    its writes can be verified), overridden by a space file, then by ``NAME=SPEC`` params."""
    space = default_space(program, kind, verifiable=verifiable)
    if space_file:
        space = space.override(read_space_file(space_file))
    return space.override(params)


def parse_enqueue(text: str, space: Space) -> dict[str, Any]:
    """A configuration to try first, ``"K=2,N=3,..."``, every parameter of ``space`` given."""
    params = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        if not sep:
            raise UsageError(f"--enqueue wants NAME=VALUE,NAME=VALUE, got {text!r}")
        params[name.strip()] = parse_value(value.strip())
    missing = [n for n in space.names if n not in params]
    unknown = [n for n in params if n not in space.names]
    if missing or unknown:
        raise UsageError(
            f"--enqueue {text!r}: "
            + "; ".join(
                ([f"missing {', '.join(missing)}"] if missing else []) + ([f"unknown {', '.join(unknown)}"] if unknown else [])
            )
        )
    return params


def check_program(program: str, space: Space, task: Task | None = None) -> None:
    """Build the program (for ``task``, when given) at one point of the space, so a bad knob name fails before any
    model loads."""
    knobs, _ = split_params({p.name: p.values[0] for p in space.params})
    try:
        build_program(program, task=task, **knobs)
    except (TypeError, ValueError) as exc:
        raise SpaceError(f"{program} does not take these knobs ({', '.join(knobs)}): {exc}") from None


def load_arc(options: StudyOptions) -> list[ArcTask]:
    """The ARC tasks of ``split`` (first ``limit``), with ``memory`` checked against the program."""
    from memreason.datasets.arc import ArcDataError
    from memreason.eval.arc import ArcConfig

    config = ArcConfig(program=options.program, split=options.split or "val100", limit=options.limit, memory=options.memory)
    try:
        tasks = config.load_tasks()
        config.load_memory()
    except (ArcDataError, ValueError) as exc:  # MemoryFileError is a ValueError
        raise UsageError(str(exc)) from None
    return tasks


def consolidation_digest(program: str, state: Path | None) -> str | None:
    """The sha256 of ``state``, after checking its consolidation loads into ``program`` (None without one)."""
    built = build_program(program)
    if state is not None and not hasattr(built, "load_consolidation"):
        raise UsageError(f"--program-state: {program} builds no memory, so it has no consolidator to start from")
    try:
        return state_digest(built, f"{program}'s consolidator", state, load="load_consolidation")
    except TunedError as exc:
        raise UsageError(str(exc)) from None
