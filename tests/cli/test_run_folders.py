"""Runs on the command line: a labelled folder is a run, a parent folder holds runs, and compare
names its two runs after their folders unless told otherwise."""

from __future__ import annotations

import json

import pytest

from edufair_metrics.cli import main as cli
from edufair_metrics.errors import EduFairError
from edufair_metrics.runlog import load_run, load_runs

from tests.helpers.synthetic_runs import write_run

KW = dict(conditions=("explicit",), n_questions=20)


def test_a_labelled_folder_is_a_run(tmp_path, capsys):
    write_run(tmp_path / "a", "org/tutor-a", seed=1, **KW)
    write_run(tmp_path / "b", "org/tutor-b", seed=2, **KW)
    out = tmp_path / "rep"
    assert cli(["report", str(tmp_path / "a"), "--label", f"Mine={tmp_path / 'b'}", "--out", str(out), "--n-boot", "10",
                "--no-figures"]) == 0
    tutors = {r["label"] for r in json.loads((out / "report_manifest.json").read_text())["inputs"]}
    assert tutors == {"org/tutor-a", "Mine"}
    # only labels, no positional folder at all
    assert cli(["leaderboard", "--label", f"A={tmp_path / 'a'}", "--label", f"B={tmp_path / 'b'}", "--out",
                str(tmp_path / "lb"), "--n-boot", "10"]) == 0
    board = (tmp_path / "lb" / "leaderboard.md").read_text()
    assert "| A |" in board and "| B |" in board
    capsys.readouterr()
    assert cli(["report", "--out", str(out)]) == 2
    assert "no run given" in capsys.readouterr().err


def test_a_parent_folder_lists_the_runs_it_holds(tmp_path):
    write_run(tmp_path / "results" / "exp1" / "a", "org/tutor-a", seed=1, **KW)
    write_run(tmp_path / "results" / "exp1" / "b", "org/tutor-b", seed=2, **KW)
    runs = load_runs([tmp_path / "results"])
    assert sorted(r.label for r in runs) == ["org/tutor-a", "org/tutor-b"]
    with pytest.raises(EduFairError, match=r"holds 2 runs; pass one of them: .*org__tutor-a.*org__tutor-b"):
        load_run(tmp_path / "results")


def test_compare_names_its_runs_after_their_folders(tmp_path, capsys):
    write_run(tmp_path / "base", "org/same-model", seed=1, **KW)
    write_run(tmp_path / "tuned", "org/same-model", seed=2, **KW)
    out = tmp_path / "cmp"
    rc = cli(["compare", "--baseline", str(tmp_path / "base"), "--candidate", str(tmp_path / "tuned"), "--n-boot", "20",
              "--out", str(out)])
    assert rc in (0, 1, 3)
    manifest = json.loads((out / "compare_manifest.json").read_text())
    assert manifest["baseline"]["label"] == "base" and manifest["candidate"]["label"] == "tuned"
    rc = cli(["compare", "--baseline", str(tmp_path / "base"), "--candidate", str(tmp_path / "tuned"), "--n-boot", "20",
              "--out", str(out), "--baseline-label", "v1", "--candidate-label", "v2"])
    manifest = json.loads((out / "compare_manifest.json").read_text())
    assert manifest["baseline"]["label"] == "v1" and manifest["candidate"]["label"] == "v2"
