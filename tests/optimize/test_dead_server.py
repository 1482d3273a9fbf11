"""``python -m optimize`` against a server that is not there: one error line, exit 1, no traceback, never a success.

The address is a loopback port nothing listens on (``127.0.0.1:9``): every call is refused at once, and
``--lm-retries 0`` gives up on the first.
"""

import optuna
import pytest
from optuna.trial import TrialState

import memreason.optimize.cli as cli

pytestmark = pytest.mark.timeout(120)

DEAD = ["--lm", "openai/stub", "--api-base", "http://127.0.0.1:9/v1", "--lm-retries", "0"]


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "stub-key")


def test_a_study_on_a_dead_server_stops_in_one_line_and_keeps_the_failed_trial(tmp_path, capsys):
    out = tmp_path / "study"
    argv = ["hdr", "--level", "1", "--trials", "1", "--limit", "2", "--out", str(out), *DEAD]
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.splitlines()) <= 3, err
    [line] = [line for line in err.splitlines() if line.startswith("error:")]
    assert line.startswith("error: run stopped: the LM failed (connection after 1 attempt") and "Connection refused" in line
    study = optuna.load_study(study_name="hdr-L1", storage=f"sqlite:///{out / 'study.db'}")
    assert [t.state for t in study.trials] == [TrialState.FAIL]  # the study is kept, the trial marked failed


def test_compiling_the_consolidator_on_a_dead_server_is_no_success(tmp_path, capsys):
    out = tmp_path / "compiled"
    argv = ["compile", "consolidator", "--optimizer", "bootstrap", "--val-tables", "2", "--test-tables", "0", "--out", str(out)]
    assert cli.main([*argv, *DEAD]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    [line] = [line for line in err.splitlines() if line.startswith("error:")]
    assert line.startswith("error: run stopped: 2 of 2 memories could not be built before compiling") and "refused" in line
    assert not (out / "program.json").exists()  # nothing compiled, nothing claimed
