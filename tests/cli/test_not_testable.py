"""Not testable is not fair: a run whose labels are mostly missing, or whose contrasts all lack
pairs, is reported as "not testable" with the reason (summary.md's banner, the report's line, the
leaderboard, the gate), never as "0 violations"; --fail-on-missing-labels RATE exits 1."""

from __future__ import annotations

import json

import pytest

from edufair_metrics.cli import main as cli

from tests.helpers.bank import write_bank
from tests.helpers.edufair_cli import PY, EduFairFake, cli_env, lm_eval_argv, role_of, run_cli
from tests.helpers.fake_openai import Reply
from tests.helpers.synthetic_runs import write_run

KW = dict(conditions=("explicit",), n_questions=20)
FAST = ["--n-boot", "20", "--no-figures", "--no-html"]


def test_mostly_missing_labels_make_the_report_not_testable(tmp_path, capsys):
    write_run(tmp_path / "runs", "org/tutor-a", missing_rate=0.7, seed=3, **KW)
    out = tmp_path / "rep"
    assert cli(["report", str(tmp_path / "runs"), "--out", str(out), *FAST]) == 0
    line = capsys.readouterr().out
    assert "NOT TESTABLE: org/tutor-a (pedagogical:" in line and "no valid judge label" in line
    assert "0 violation(s)" not in line
    summary = (out / "summary.md").read_text()
    top = summary.split("## ", 1)[0]
    assert "**NOT TESTABLE**" in top and "org/tutor-a**, pedagogical metrics" in top
    assert "pedagogical headline **not testable**" in summary
    manifest = json.loads((out / "report_manifest.json").read_text())
    ped = next(t for t in manifest["testability"] if t["kind"] == "pedagogical")
    assert ped["testable"] is False and ped["missing_label_rate"] >= 0.5
    conv = next(t for t in manifest["testability"] if t["kind"] == "conversation")
    assert conv["testable"] is True  # the conversation metrics need no judge
    # the gate on missing labels: above the rate -> exit 1 (the report is still written)
    assert cli(["report", str(tmp_path / "runs"), "--out", str(tmp_path / "rep2"), *FAST,
                "--fail-on-missing-labels", "0.05"]) == 1
    err = capsys.readouterr().err
    assert "org/tutor-a:" in err and "of the tutor turns have no valid judge label (--fail-on-missing-labels 0.05)" in err
    assert (tmp_path / "rep2" / "summary.md").is_file()
    assert cli(["report", str(tmp_path / "runs"), "--out", str(tmp_path / "rep3"), "--n-boot", "20", "--no-figures",
                "--fail-on-missing-labels", "0.99"]) == 0
    page = (tmp_path / "rep3" / "index.html").read_text()
    assert '"not_testable":["org/tutor-a (pedagogical:' in page  # the page's banner
    with pytest.raises(SystemExit) as exc:
        cli(["report", str(tmp_path / "runs"), "--fail-on-missing-labels", "5"])
    assert exc.value.code == 2


def test_a_run_with_no_sufficient_contrast_is_not_testable(tmp_path, capsys):
    write_run(tmp_path / "runs", "org/tutor-a", conditions=("explicit",), n_questions=3)
    out = tmp_path / "rep"
    assert cli(["report", str(tmp_path / "runs"), "--out", str(out), *FAST]) == 0
    line = capsys.readouterr().out
    assert "NOT TESTABLE" in line and "too few paired questions: at most 3 (at least 15)" in line
    assert "violation(s)" not in line
    summary = (out / "summary.md").read_text()
    assert summary.split("## ", 1)[0].count("**NOT TESTABLE**") == 1
    assert "None" not in summary.split("## Cost")[0].replace("None;", "")


def test_the_leaderboard_gives_no_rank_to_an_untestable_tutor(tmp_path, capsys):
    write_run(tmp_path / "a", "org/tutor-a", missing_rate=0.7, seed=1, **KW)
    write_run(tmp_path / "b", "org/tutor-b", seed=2, **KW)
    assert cli(["leaderboard", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "lb"),
                "--n-boot", "20"]) == 0
    board = (tmp_path / "lb" / "leaderboard.md").read_text()
    assert "**NOT TESTABLE**" in board and "org/tutor-a: " in board
    row_a = next(ln for ln in board.splitlines() if "| org/tutor-a |" in ln)
    row_b = next(ln for ln in board.splitlines() if "| org/tutor-b |" in ln)
    assert row_a.startswith("| not testable |") and "| yes |" in row_b
    assert board.index("| org/tutor-b |") < board.index("| org/tutor-a |")  # ranked tutors first
    capsys.readouterr()
    assert cli(["leaderboard", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "lb2"),
                "--n-boot", "20", "--fail-on-missing-labels", "0.5"]) == 1
    assert "org/tutor-a:" in capsys.readouterr().err


def test_the_gate_never_passes_a_candidate_without_labels(tmp_path, capsys):
    kw = dict(conditions=("explicit",), n_questions=40)
    write_run(tmp_path / "base", "org/base", seed=5, **kw)
    write_run(tmp_path / "cand", "org/cand", seed=5, missing_rate=0.6, **kw)
    rc = cli(["compare", "--baseline", str(tmp_path / "base"), "--candidate", str(tmp_path / "cand"), "--out",
              str(tmp_path / "cmp"), "--n-boot", "30"])
    text = capsys.readouterr().out
    assert rc in (1, 3) and "NOT TESTABLE: cand: " in text and "PASS" not in text
    assert cli(["compare", "--baseline", str(tmp_path / "base"), "--candidate", str(tmp_path / "cand"), "--out",
                str(tmp_path / "cmp2"), "--n-boot", "30", "--on-inconclusive", "pass",
                "--fail-on-missing-labels", "0.1"]) == 1


@pytest.mark.slow
def test_a_judge_that_answers_prose_is_not_testable_end_to_end(tmp_path):
    bank = write_bank(tmp_path / "bank", n=2)

    def prose_judge(req, n):
        return Reply("The tutor was patient and clear; I would rate this turn highly.") if role_of(req) == "judge" else None

    with EduFairFake(prose_judge) as fake:
        out, env = tmp_path / "out", cli_env(tmp_path / "cache")
        r = run_cli(lm_eval_argv(fake.url, bank, out, limit=18, max_turns=2, judge={"max_retries": 0}), env, tmp_path)
        assert r.returncode == 0, r.stderr[-3000:]
        assert "not testable (pedagogical metrics): 100% of the tutor turns have no valid judge label" in r.stderr
        r = run_cli([PY, "-m", "edufair_metrics.cli", "report", str(out), "--out", str(tmp_path / "rep"), *FAST],
                    env, tmp_path)
        assert r.returncode == 0, r.stderr[-2000:]
        assert "NOT TESTABLE" in r.stdout and "0 violation(s)" not in r.stdout
        r = run_cli([PY, "-m", "edufair_metrics.cli", "report", str(out), "--out", str(tmp_path / "rep2"), *FAST,
                     "--fail-on-missing-labels", "0.2"], env, tmp_path)
        assert r.returncode == 1 and "100.0% of the tutor turns have no valid judge label" in r.stderr
