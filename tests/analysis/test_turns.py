"""Length-robust pedagogy: the score frame carries per dialogue and pedagogical metric the turn
counts, the turn-level test (analysis.turns) is the Mantel–Haenszel statistic over judged turns
stratified by question with a within-question permutation p, and a pedagogical row whose
per-dialogue difference it does not confirm is ``unconfirmed``, not ``flag``. Records written
before the counts get them from their stored judgements on the read pass."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from edufair_metrics.analysis.cells import cell_matrices
from edufair_metrics.analysis.frames import scores_frame
from edufair_metrics.analysis.grid import contrast_grid, dimension_summary
from edufair_metrics.analysis.turns import turn_contributions, turn_tests
from edufair_metrics.records import JUDGE_OK, DialogueRecord, DialogueScores, Transcript, Turn, TurnJudgement
from edufair_metrics.scores import TURN_COUNTS_VERSION, pedagogical_counts, score_dialogue
from tests.analysis.sim_verdicts import deltas_for, simulate_frame


def _judgement(i, **labels):
    base = {"student_mistake_prev_turn": True, "correction_tone": 1, "mistake_recognize": 1, "answer_leakage": 0,
            "scaffolding_guidance": 1, "actionability": 0, "_forced_na": []}
    base.update(labels)
    return TurnJudgement(i, JUDGE_OK, labels=base)


def _transcript(n_tutor: int) -> Transcript:
    turns = [Turn("question", "Q?")]
    for _ in range(n_tutor):
        turns += [Turn("student", "I think 4."), Turn("tutor", "Why?")]
    return Transcript("q", "physics", "explicit", "gender", "female", "T", "S", turns, "max_turns")


def test_scores_carry_turn_counts_and_the_frame_carries_them_beside_value():
    t = _transcript(3)
    js = [_judgement(2, actionability=1), _judgement(4, correction_tone=-1, mistake_recognize=-1), _judgement(6)]
    s = score_dialogue(t, js)
    assert s.turn_counts["actionability"] == [3, 1] and s.turn_counts["corrective_tone"] == [2, 2]
    assert s.turn_counts["mistake_recognize"] == [2, 2]
    assert s.scores["actionability"] == pytest.approx(1 / 3)
    assert pedagogical_counts(js) == s.turn_counts
    back = DialogueScores.from_dict(json.loads(json.dumps(s.to_dict())))
    assert back.turn_counts == s.turn_counts
    df = scores_frame([s])
    act = df[df["metric"] == "actionability"].iloc[0]
    assert (act["n_applicable"], act["n_positive"]) == (3, 1) and act["value"] == pytest.approx(1 / 3)
    assert df.loc[df["metric"] == "tutor_turns", "n_applicable"].isna().all()


def test_old_records_get_their_counts_from_the_stored_judgements():
    from edufair_metrics.runlog import build_record, complete

    t = _transcript(2)
    rec = build_record(t, [_judgement(2, actionability=1), _judgement(4)], judge_info=None).to_dict()
    assert rec["scorers"]["judge"]["version"] == TURN_COUNTS_VERSION
    # as an older EduFair wrote it (schema v2): no counts, no version marker
    rec = {k: v for k, v in rec.items() if k not in ("run", "scorers", "per_turn")} | {"schema_version": 2}
    del rec["scores"]["turn_counts"]
    old = DialogueRecord.from_dict(rec)
    assert old.turn_counts_version is None and not old.scores.turn_counts
    new, ran = complete(old)
    assert "judge" in ran and not old.scores.turn_counts  # a new record; the stored one is left as it was
    assert new.scores.turn_counts["actionability"] == [2, 1] and new.turn_counts_version == TURN_COUNTS_VERSION
    assert "judge" not in complete(new)[1]  # done once
    bare = DialogueRecord.from_dict({"scores": {"question_id": "q", "domain": "physics", "condition": "explicit",
                                                "dimension": "gender", "level": "female", "scores": {}}})
    assert "judge" not in complete(bare)[1] and not complete(bare)[0].scores.turn_counts  # no judgements: nothing to count


def test_mantel_haenszel_contributions_by_hand_and_the_label_swap_is_a_sign_flip():
    df = pd.DataFrame({
        "tutor": "t", "task": "x", "domain": "d", "condition": "explicit", "dimension": "gender", "metric": "actionability",
        "level": ["female", "male"] * 3, "question_id": ["q1", "q1", "q2", "q2", "q3", "q3"],
        "value": [2 / 4, 1 / 2, 0.0, 1.0, 1 / 3, 1 / 3],
        "n_applicable": [4, 2, 5, 1, 3, 3], "n_positive": [2, 1, 0, 1, 1, 1]})
    (cell,) = cell_matrices(df, extras=("n_applicable", "n_positive"))
    d = cell.column("female") - cell.column("male")
    c, w, var, na, nb, strata = turn_contributions(cell, ("female",), ("male",), d)
    assert strata == 0  # no per-position masks: question strata
    # q1: y_a 2 of 4, y_b 1 of 2 -> c = 2 - 4·3/6 = 0; q2: 0 - 5·1/6; q3: 1 - 3·2/6 = 0
    assert c == pytest.approx([0.0, -5 / 6, 0.0])
    assert w == pytest.approx([8 / 6, 5 / 6, 9 / 6])
    assert var[1] == pytest.approx(5 * 1 * 1 * 5 / (36 * 5))
    c2, *_ = turn_contributions(cell, ("male",), ("female",), -d)
    assert c2 == pytest.approx(-c)  # swapping the level labels of a question flips its contribution
    out = turn_tests([(c, w, var, na, nb)], n_boot=999, seed=0, min_questions=3)
    assert out["turn_rd"][0] == pytest.approx(c.sum() / w.sum())
    from scipy.stats import chi2

    assert out["turn_p_cmh"][0] == pytest.approx(chi2.sf(c.sum() ** 2 / var.sum(), 1))
    assert out["turns_a"][0] == pytest.approx(4) and out["turns_b"][0] == pytest.approx(2)
    few = turn_tests([(c, w, var, na, nb)], n_boot=99, seed=0, min_questions=4)
    assert few["turn_n"][0] == 3 and math.isnan(few["turn_p"][0])  # too few questions: not tested


def _ped_rows(grid):
    return grid[(grid["metric_kind"] == "pedagogical") & (grid["condition"] == "explicit")
                & (grid["kind"] == "binary") & grid["sufficient"]]


@pytest.mark.slow
def test_length_differences_alone_are_not_flagged_a_per_turn_bias_is():
    """One level's dialogues last 8–10 turns, the other's 1–2, per-turn behaviour identical: rows
    the per-dialogue test flags are ``unconfirmed``, with the turn counts beside them. A per-turn
    bias without length differences is flagged and confirmed."""
    length = contrast_grid(simulate_frame(500, {}, length=True, seed=3, conditions=("explicit",)), n_boot=200, seed=0)
    rows = _ped_rows(length)
    flagged = rows[rows["flagged"]]
    assert len(flagged) >= 2  # the per-dialogue rates do differ
    assert (flagged["verdict"] == "unconfirmed").mean() >= 0.75
    biased_side = flagged[flagged["a"].isin(["female", "immigrant", "other_language", "low_income"])]
    assert (biased_side["turns_a"] > 7.5).all() and (biased_side["turns_b"] < 2.5).all()
    units = dimension_summary(length)
    assert (units.loc[units["metric_kind"] == "pedagogical", "verdict"] != "flag").mean() >= 0.8
    real = contrast_grid(simulate_frame(300, deltas_for(0.4), seed=4, conditions=("explicit",)), n_boot=200, seed=0)
    rows = _ped_rows(real)
    biased = rows[rows["a"].isin(["female", "immigrant", "other_language", "low_income"]) & (rows["dimension"] != "ses")]
    assert (biased["verdict"] == "flag").mean() >= 0.8
    assert (biased["turn_confirmed"] == True).mean() >= 0.8  # noqa: E712 (pandas nullable boolean)


def test_rows_without_counts_keep_the_per_dialogue_verdict():
    df = simulate_frame(120, deltas_for(0.4), seed=5, conditions=("explicit",))
    plain = contrast_grid(df.drop(columns=["n_applicable", "n_positive"]), n_boot=100, seed=0)
    assert plain["turn_p"].isna().all() and plain["turn_confirmed"].isna().all()
    assert set(plain["verdict"]) <= {"flag", "certify", "inconclusive", "insufficient"}
    assert not math.isnan(contrast_grid(df, n_boot=100, seed=0)["turn_p"].max())
    # the verdicts of metrics the test does not touch are the same
    full = contrast_grid(df, n_boot=100, seed=0)
    conv = full["metric_kind"] != "pedagogical"
    pd.testing.assert_series_equal(full.loc[conv, "verdict"], plain.loc[conv, "verdict"])
    np.testing.assert_array_equal(full["r"], plain["r"])


def test_turns_are_compared_at_the_same_position():
    """both levels have the same per-turn curve over positions (logit rises 0.35
    a turn) but 8–10 vs 2–4 turns. Pooled over a question's turns the long dialogues look better
    per turn (their later turns); stratified by question × turn position, only the positions both
    reached count, and the rows are not confirmed."""
    kw = dict(length=True, slope=0.35, short=(2, 4), seed=21, conditions=("explicit",))
    with_pos = contrast_grid(simulate_frame(300, {}, **kw), n_boot=200, seed=0)
    without = contrast_grid(simulate_frame(300, {}, positions=False, **kw), n_boot=200, seed=0)
    a_side = ["female", "immigrant", "other_language", "low_income"]
    rows_p, rows_q = _ped_rows(with_pos), _ped_rows(without)
    rows_p, rows_q = rows_p[rows_p["a"].isin(a_side)], rows_q[rows_q["a"].isin(a_side)]
    assert (rows_p["turn_strata"] > 0).all() and (rows_q["turn_strata"] == 0).all()
    assert (rows_q["verdict"] == "flag").mean() >= 0.5  # question strata: the curve reads as a per-turn gap
    assert (rows_p["verdict"] == "flag").mean() <= 0.1
    assert (rows_p["turn_rd"].abs().mean()) < 0.5 * rows_q["turn_rd"].abs().mean()


def test_position_strata_by_hand():
    """Two questions; at each position a stratum counts only when both sides have an applicable turn."""
    df = pd.DataFrame({
        "tutor": "t", "task": "x", "domain": "d", "condition": "explicit", "dimension": "gender", "metric": "actionability",
        "level": ["female", "male"] * 2, "question_id": ["q1", "q1", "q2", "q2"],
        "value": [2 / 3, 1 / 1, 1 / 2, 0 / 2],
        "n_applicable": [3, 1, 2, 2], "n_positive": [2, 1, 1, 0],
        # q1: female turns 0,1,2 applicable, positive 1,2; male turn 0 applicable, positive
        # q2: female turns 0,3 applicable, positive 3; male turns 0,1, none positive
        "turn_app_mask": [0b111, 0b1, 0b1001, 0b11], "turn_pos_mask": [0b110, 0b1, 0b1000, 0b0]})
    from edufair_metrics.analysis.turns import MASK_COLUMNS

    (cell,) = cell_matrices(df, extras=("n_applicable", "n_positive") + MASK_COLUMNS)
    d = cell.column("female") - cell.column("male")
    c, w, var, na, nb, strata = turn_contributions(cell, ("female",), ("male",), d)
    # q1: only position 0 is shared: female 0 of 1, male 1 of 1 -> c = 0 - 1·1/2; q2: position 0: 0 vs 0 -> 0
    assert c == pytest.approx([-0.5, 0.0]) and w == pytest.approx([0.5, 0.5]) and strata == 2
    assert var == pytest.approx([0.25, 0.0])
    assert na == pytest.approx([3, 2]) and nb == pytest.approx([1, 2])
