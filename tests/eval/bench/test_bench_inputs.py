"""The model benchmarks refuse bad input in one line with exit code 2, before any model loads."""

import pytest

from memreason.eval.bench import arc_threads, prefill


@pytest.fixture
def no_model(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a model was resolved")

    monkeypatch.setattr("memreason.lm.resolve_lm", refuse)


@pytest.mark.parametrize("bench", [arc_threads, prefill])
def test_an_unknown_split_is_refused_before_the_model_loads(bench, no_model, capsys):
    assert bench.main(["--split", "no_such_split"]) == 2
    assert capsys.readouterr().out.startswith("error: ")


@pytest.mark.parametrize("bench", [arc_threads, prefill])
def test_a_model_that_is_not_local_is_refused(bench, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "stub-key")
    assert bench.main(["--limit", "1", "--lm", "openai/gpt-4o-mini"]) == 2
    assert capsys.readouterr().out == (
        "error: this benchmark measures a local model (--lm local:/path, or none for the embedded one)\n"
    )


@pytest.mark.parametrize("threads", ["4,x", "0"])
def test_arc_threads_refuses_bad_thread_counts(threads, no_model, capsys):
    with pytest.raises(SystemExit) as exit:
        arc_threads.main(["--threads", threads])
    assert exit.value.code == 2 and "--threads must" in capsys.readouterr().err


def test_arc_threads_refuses_a_limit_of_0(no_model, capsys):
    assert arc_threads.main(["--limit", "0"]) == 2
    assert capsys.readouterr().out == "error: --limit and --attempts must be at least 1\n"


def test_startup_refuses_no_repetitions(capsys):
    from memreason.eval.bench import startup

    assert startup.main(["--task", "rg:puzzle24", "--repeat", "0"]) == 2
    assert capsys.readouterr().err == "error: --repeat must be at least 1\n"
