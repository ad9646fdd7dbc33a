"""``check_output_path``: lm-eval saves results only at the end, so an unsavable ``--output_path``
must stop the job before any model call (``tests/cli/test_bad_input.py`` runs it through lm_eval)."""

from __future__ import annotations

import os

import pytest

from edufair_metrics.errors import EduFairError
from edufair_metrics.preflight import check_output_path


def test_savable_paths_pass_and_nothing_is_created(tmp_path):
    for p in (tmp_path, tmp_path / "new" / "deeper", tmp_path / "res.json", tmp_path / "a" / "res.json", None, ""):
        check_output_path(p)
    assert sorted(os.listdir(tmp_path)) == []


def test_a_file_in_the_way_is_an_error(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    for p in (f, f / "out", f / "res.json"):
        with pytest.raises(EduFairError, match="is a file"):
            check_output_path(p)
    (tmp_path / "dir.json").mkdir()
    with pytest.raises(EduFairError, match="is a folder"):
        check_output_path(tmp_path / "dir.json")


def test_unwritable_folder_is_an_error(tmp_path, monkeypatch):
    """A folder that ``os.access`` calls writable but that is not: ``/proc`` as root, or (as any
    other user) a read-only folder while ``os.access`` says yes. The check creates a file there."""
    if os.geteuid() == 0:
        target = "/proc/edufair-out"  # os.access("/proc", W_OK) is True for root; nothing can be created there
        assert os.access("/proc", os.W_OK | os.X_OK)
    else:
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(0o500)
        monkeypatch.setattr(os, "access", lambda p, mode: True)
        target = locked / "out"
    with pytest.raises(EduFairError, match="not writable") as ei:
        check_output_path(target)
    assert "\n" not in str(ei.value) and "nothing could be saved" in str(ei.value)


def test_the_write_probe_leaves_nothing_behind(tmp_path):
    check_output_path(tmp_path / "out" / "deeper")
    check_output_path(tmp_path / "res.json")
    assert list(tmp_path.iterdir()) == []
