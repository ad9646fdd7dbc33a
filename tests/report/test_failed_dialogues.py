"""Dialogues ended by a failed student or tutor call (statistics side): left out
of the paired statistics by default (their pairs drop out), counted in failures.md and the
manifest; ``--keep-failed-dialogues`` keeps the old behaviour (scored on their partial turns)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from edufair_metrics.lmeval import aggregations
from edufair_metrics.analysis.frames import scores_frame
from edufair_metrics.analysis.params import StatParams, analyse
from edufair_metrics.cli import main as cli
from edufair_metrics.runlog import load_run
from tests.helpers.synthetic_runs import make_scores, write_run

N = 30
FAILED_TUTOR = 8  # female dialogues of questions 0..7: the tutor call failed after one turn
FAILED_EMPTY = 3  # female dialogues of questions 8..10: an error recorded (empty_visible_turn)


def _scores():
    scores = make_scores(conditions=("explicit",), domains=("physics",), n_questions=N, seed=5)
    for s in scores:
        q = int(s.question_id[-4:])
        if s.level == "female" and q < FAILED_TUTOR + FAILED_EMPTY:
            # a partial dialogue: one short tutor turn -> artefactual conversation differences
            s.scores.update(tutor_turns=1.0, tutor_avg_word=5.0, tutor_student_word_ratio=0.2)
    return scores


def _stop(s):
    q = int(s.question_id[-4:])
    return "tutor_failed" if s.level == "female" and q < FAILED_TUTOR else "max_turns"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("failed") / "o"
    model_dir = write_run(root, "org/t", scores=_scores(), stop_reason=_stop)
    sf = next(model_dir.glob("samples_*.jsonl"))
    lines = [json.loads(x) for x in sf.read_text().splitlines()]
    for line in lines:
        rec = line["complete_dialogues"]
        sc, tr = rec["scores"], rec["transcript"]
        q = int(sc["question_id"][-4:])
        if sc["level"] == "female" and q < FAILED_TUTOR:
            tr.update(error="tutor call failed: HTTP 500", error_kind="http_5xx")
        elif sc["level"] == "female" and q < FAILED_TUTOR + FAILED_EMPTY:
            # another helper's failure kind: whatever the stop reason, a recorded error is a failure
            tr.update(error="tutor turn empty once reasoning is stripped", error_kind="empty_visible_turn")
    sf.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return root


def _gender(grid, metric):
    return grid[(grid["dimension"] == "gender") & (grid["metric"] == metric)].iloc[0]


def test_failed_dialogues_leave_the_contrasts_by_default(run_dir):
    run = load_run(run_dir)
    n_failed = FAILED_TUTOR + FAILED_EMPTY
    assert sum(s.failed for s in run.scores) == n_failed
    _, grid, _ = analyse([run], StatParams(n_boot=100))
    _, kept, _ = analyse([run], StatParams(n_boot=100, keep_failed_dialogues=True))
    g, k = _gender(grid, "tutor_turns"), _gender(kept, "tutor_turns")
    assert g["n_pairs"] == N - n_failed and k["n_pairs"] == N  # the failed dialogues' pairs drop out
    # kept, the partial dialogues make female look like she got fewer tutor turns
    assert k["r"] < -0.3 and k["violation"]
    assert abs(g["r"]) < abs(k["r"])
    # other dimensions are untouched (no failed dialogue there)
    assert _gender(grid, "actionability")["n_pairs"] == N - n_failed
    imm = grid[(grid["dimension"] == "immigration") & (grid["metric"] == "tutor_turns")].iloc[0]
    assert imm["n_pairs"] == N


def test_report_counts_and_option(run_dir, tmp_path):
    n_failed = FAILED_TUTOR + FAILED_EMPTY
    out = tmp_path / "rep"
    assert cli(["report", str(run_dir), "--out", str(out), "--n-boot", "20", "--no-figures"]) == 0
    fail = pd.read_csv(out / "failures.csv")
    kinds = fail.groupby("kind")["count"].sum().to_dict()
    assert kinds == {"http_5xx": FAILED_TUTOR, "empty_visible_turn": FAILED_EMPTY}
    md = (out / "failures.md").read_text()
    assert f"{n_failed} failed dialogue(s) left out of the contrasts" in md
    man = json.loads((out / "report_manifest.json").read_text())
    assert man["failed_dialogues"] == n_failed and man["parameters"]["keep_failed_dialogues"] is False
    assert f"left out of the contrasts: {n_failed}" in (out / "summary.md").read_text()
    lv = pd.read_csv(out / "levels.csv").set_index("level")
    assert lv.loc["female", "failures"] == n_failed and lv.loc["female", "dialogues"] == N  # descriptive: kept
    grid = pd.read_csv(out / "grid.csv")
    assert _gender(grid, "tutor_turns")["n_pairs"] == N - n_failed
    out2 = tmp_path / "rep_keep"
    assert cli(["report", str(run_dir), "--out", str(out2), "--n-boot", "20", "--no-figures",
                "--keep-failed-dialogues"]) == 0
    assert _gender(pd.read_csv(out2 / "grid.csv"), "tutor_turns")["n_pairs"] == N
    assert "kept in the contrasts" in (out2 / "failures.md").read_text()
    assert json.loads((out2 / "report_manifest.json").read_text())["parameters"]["keep_failed_dialogues"] is True


def test_lm_eval_aggregations_leave_failed_dialogues_out(run_dir):
    run = load_run(run_dir)
    items = [s.to_dict() for s in run.scores]
    clean = [s.to_dict() for s in run.scores if not s.failed]
    assert aggregations.agg_conv_abs_r(items) == pytest.approx(aggregations.agg_conv_abs_r(clean))
    assert len(scores_frame(run.scores)) == len(clean) * 9
    assert len(scores_frame(run.scores, keep_failed=True)) == len(items) * 9
