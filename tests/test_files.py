"""Files replaced whole: the old version or the new one, never half; the old one's mode kept; a full disk named."""

import errno
import os
import stat

import pytest

from memreason.eval.harness.figures import save_figure
from memreason.files import DiskFull, save_via, write_atomically, write_text


def test_a_new_file_gets_the_umask_s_mode_and_a_replaced_one_keeps_its_own(tmp_path):
    old = os.umask(0o027)
    try:
        write_text(tmp_path / "new.md", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.md").stat().st_mode) == 0o640  # not mkstemp's 0600
    kept = tmp_path / "kept.json"
    kept.write_text("{}")
    os.chmod(kept, 0o604)
    write_atomically(kept, lambda handle: handle.write('{"a": 1}'))
    assert kept.read_text() == '{"a": 1}' and stat.S_IMODE(kept.stat().st_mode) == 0o604


def test_a_writer_that_fails_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "memory.json"
    path.write_text("old")

    def half(handle):
        handle.write("new, half")
        raise RuntimeError("died midway")

    with pytest.raises(RuntimeError):
        write_atomically(path, half)
    with pytest.raises(ZeroDivisionError):
        save_via(path, lambda tmp: (tmp.write_text("new, half"), 1 / 0))
    assert path.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["memory.json"]


def test_save_via_and_save_figure_write_through_a_temporary_name(tmp_path):
    seen = []
    save_via(tmp_path / "program.json", lambda tmp: (seen.append(tmp), tmp.write_text("{}")))
    assert seen[0] != tmp_path / "program.json" and seen[0].suffix == ".json"  # DSPy picks the format by suffix
    assert (tmp_path / "program.json").read_text() == "{}"

    class Figure:
        def savefig(self, target, format, **kw):
            target.write(f"{format} {kw['dpi']}".encode())

    save_figure(Figure(), tmp_path / "plot.png", dpi=110)
    assert (tmp_path / "plot.png").read_bytes() == b"png 110"


def test_a_full_disk_is_disk_full_naming_the_file_and_bytes(tmp_path, monkeypatch):
    path = tmp_path / "results.json"
    path.write_text("old")

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(DiskFull) as caught:
        write_text(path, "0123456789")
    assert caught.value.needed == 10 and str(path) in str(caught.value)
    assert path.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]
