"""The task registry: tasks by name, the task of a run's files, tasks of your own from outside the package."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import dspy
import pytest

from memreason.datasets.inductive import Example, Problem, Query
from memreason.eval.harness.errors import UsageError
from memreason.eval.tasks import TASKS, ProblemTask, get_task, register_task, task_names, task_of
from memreason.lm.stub_server import StubServer
from memreason.programs import PROGRAMS

TASK_FILE = textwrap.dedent(
    '''
    import dspy
    from memreason.datasets.inductive import Example, Problem, Query
    from memreason.eval.tasks import ProblemTask, register_task


    class Double(dspy.Signature):
        """Give the number the rule behind the examples gives for the new number."""

        number: int = dspy.InputField()
        answer: int = dspy.OutputField()


    @register_task
    class Doubles(ProblemTask):
        name = "doubles_from_file"
        signature = Double

        def problems(self, seed=0, limit=None):
            return [
                Problem(str(i), tuple(Example(n, 2 * n, str(n), str(2 * n)) for n in (1, 2, 3)),
                        (Query(f"{i}-0", i, str(i), str(2 * i)),))
                for i in range(limit or 3)
            ]
    '''
)


class Double(dspy.Signature):
    """Give the number the rule behind the examples gives for the new number."""

    number: int = dspy.InputField()
    answer: int = dspy.OutputField()


class Doubles(ProblemTask):
    name = "doubles"
    signature = Double

    def problems(self, seed=0, limit=None):
        return [
            Problem(
                str(i), tuple(Example(n, 2 * n, str(n), str(2 * n)) for n in (1, 2, 3)), (Query(f"{i}-0", i, str(i), str(2 * i)),)
            )
            for i in range(limit or 3)
        ]


@pytest.fixture
def doubles():
    register_task(Doubles)
    yield TASKS["doubles"]
    TASKS.pop("doubles", None)


def test_the_library_registers_its_four_tasks_each_with_its_programs():
    assert {"experience_transfer", "arc", "acre", "list_functions"} <= set(task_names())
    assert "hdr_grounded" in get_task("experience_transfer").programs()
    assert "arcmemo_ps" in get_task("arc").programs() and "hdr" not in get_task("arc").programs()
    assert "hdr_checked" in get_task("acre").programs() and "semantic_oracle_cot" in get_task("acre").programs()
    assert "semantic_oracle_cot" not in get_task("list_functions").programs()  # it gives no true rule


def test_an_unknown_task_is_one_line_naming_the_known_ones():
    with pytest.raises(UsageError, match="unknown task 'nope'; choose from: experience_transfer, arc"):
        get_task("nope")


def test_a_run_saved_before_tasks_were_named_in_its_files_belongs_to_its_task():
    assert task_of({"program": "hdr", "level": 1}).name == "experience_transfer"
    assert task_of({"program": "baseline", "split": "val100"}).name == "arc"
    assert task_of({"task": "acre"}).name == "acre"
    assert task_of({"task": "no_such_task"}) is None


def test_a_task_of_your_own_runs_the_programs_of_its_kind(doubles):
    assert doubles.programs() == [name for name, spec in PROGRAMS.items() if spec.runs_on(doubles)]
    assert "episodic_cot" in doubles.programs() and "hdr" in doubles.programs()
    assert "semantic_oracle_cot" not in doubles.programs() and "hdr_checked" not in doubles.programs()
    program = PROGRAMS["hdr"].build_for(doubles)
    assert doubles.query_inputs(doubles.problems(limit=1)[0].queries[0]) == {"number": 0}
    assert program is not None


def test_register_task_refuses_what_is_not_a_task():
    with pytest.raises(TypeError):
        register_task(object())


def _cli(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    environ = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_API_KEY": "stub-key", **env}
    environ.pop("PYTHONPATH", None)
    return subprocess.run(
        [sys.executable, "-m", "memreason.eval", *args], cwd=cwd, env=environ, capture_output=True, text=True, timeout=240
    )


def test_the_command_line_runs_a_task_named_in_memreason_tasks(tmp_path):
    (tmp_path / "doubles_task.py").write_text(TASK_FILE)
    stub = StubServer(latency=0, fail_rate=0).start()
    try:
        args = ["episodic_cot", "--task", "doubles_from_file", "--limit", "2", "--lm", "openai/stub", "--api-base", stub.url]
        done = _cli([*args, "--out", "run", "--no-progress", "--no-report"], tmp_path, MEMREASON_TASKS="doubles_task.py")
    finally:
        stub.stop()
    assert done.returncode == 0, done.stderr
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["task"] == "doubles_from_file" and results["examples"] == 2
    assert len((tmp_path / "run" / "examples.jsonl").read_text().splitlines()) == 2


def test_a_task_module_that_cannot_be_imported_is_one_line_and_exit_2(tmp_path):
    done = _cli(["episodic_cot", "--task", "x"], tmp_path, MEMREASON_TASKS="no_such_module_here")
    assert done.returncode == 2
    assert done.stderr.startswith("error: MEMREASON_TASKS: no_such_module_here could not be loaded: ModuleNotFoundError")
    assert done.stderr.count("\n") == 1


@pytest.mark.parametrize(
    "source, command, said",
    [
        (
            "def broken(:\n",
            ["episodic_cot", "--task", "x"],
            "could not be loaded: SyntaxError: invalid syntax (bad_task.py, line 1)",
        ),
        ("raise ValueError('no table here')\n", ["tasks"], "could not be loaded: ValueError: no table here"),
        ("import sys\nsys.exit(0)\n", ["episodic_cot", "--task", "x"], "called sys.exit(0) while being imported"),
        ("import sys\nsys.exit('bye')\n", ["tasks"], "called sys.exit('bye') while being imported"),
        ("import os\nos.environ['X'] = ''\n1 / 0\n", ["tasks"], "ZeroDivisionError: division by zero"),
    ],
)
def test_a_task_module_that_fails_or_exits_while_loading_is_one_line_naming_it_and_exit_2(source, command, said, tmp_path):
    (tmp_path / "bad_task.py").write_text(source)
    done = _cli(command, tmp_path, MEMREASON_TASKS="bad_task.py")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("error: MEMREASON_TASKS: bad_task.py ") and said in done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_a_failing_task_module_is_tried_again_and_refused_again_in_one_process(tmp_path, monkeypatch):
    from memreason.eval.harness.errors import UsageError
    from memreason.eval.tasks.registry import task_names

    (tmp_path / "exits_task.py").write_text("import sys\nsys.exit(3)\n")
    monkeypatch.setenv("MEMREASON_TASKS", str(tmp_path / "exits_task.py"))
    for _ in range(2):  # never marked loaded: a second look-up cannot skip it silently
        with pytest.raises(UsageError, match=r"exits_task.py called sys.exit\(3\)"):
            task_names()


def test_every_task_says_why_a_program_cannot_run_on_it():
    from memreason.eval.tasks import get_task

    scenes = get_task("experience_transfer")
    assert scenes.why_not("hdr") is None and "hdr" not in scenes.not_applicable()
    assert scenes.why_not("fewshot") == "written for stream tasks"  # a kind with no reason of the task's own
    assert scenes.why_not("nosuch") == "no program named nosuch"
    assert "episodes" in get_task("rg:puzzle24").why_not("hdr")  # a stream task's own reasons
