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
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if str(p) == str(tmp_path) else real_access(p, mode))
    with pytest.raises(EduFairError, match="not writable") as ei:
        check_output_path(tmp_path / "out")
    assert "\n" not in str(ei.value)
