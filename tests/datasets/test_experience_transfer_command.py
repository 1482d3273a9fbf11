"""``python -m memreason.datasets.experience_transfer``: bad input is one line on stderr, exit 2, nothing written."""

import pytest

from memreason.datasets.experience_transfer.__main__ import main


def _tree(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize(
    "argv, says",
    [
        (["--level", "1", "--out", "afile"], "--out afile is not a directory"),
        (["--level", "1", "--out", ""], "--out must name a directory"),
        (["--level", "1", "--out", "afile/x"], "which is not a directory"),
        (["--level", "1", "--out", "/proc/memreason-level"], "cannot be written"),
        (["--level", "4", "--out", "x"], "argument --level: invalid choice"),
        (["--level", "1"], "required: --out"),
        (["--level", "1", "--out", "x", "--rules", "missing.json"], "missing.json"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, argv, says):
    (tmp_path / "afile").write_text("x")
    before = _tree(tmp_path)
    assert main(argv) == 2
    out, err = capsys.readouterr()
    [line] = err.splitlines()
    assert line.startswith("error: ") and says in line, line
    assert "usage:" not in out + err
    assert _tree(tmp_path) == before


def test_a_level_is_written(tmp_path, capsys):
    assert main(["--level", "1", "--out", "level1"]) == 0
    assert (tmp_path / "level1" / "manifest.json").is_file() and len(list((tmp_path / "level1" / "test").glob("*.png"))) == 150
