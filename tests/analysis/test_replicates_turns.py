"""Replicate runs keep the turn test's position strata: averaging a question's k replicates within
level stacks their per-position turn masks side by side (``analysis.replicates``), so the turn
test (``analysis.turns``) stratifies by question × (replicate, position) instead of falling back
to question strata."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from edufair_metrics.analysis.cells import cell_matrices
from edufair_metrics.analysis.frames import scores_frame
from edufair_metrics.analysis.grid import contrast_grid
from edufair_metrics.analysis.replicates import MASK_BITS, average_replicates, stack_replicate_masks
from edufair_metrics.analysis.turns import MASK_COLUMNS, turn_contributions
from edufair_metrics.records import DialogueScores

M = "actionability"


def _dialogue(level, replicate, app, pos):
    n, y = bin(app).count("1"), bin(app & pos).count("1")
    return DialogueScores("q1", "physics", "explicit", "gender", level, {M: y / n}, tutor="t", task="x",
                          replicate=replicate, turn_counts={M: [n, y]}, turn_masks={M: [app, pos]})


def test_replicate_masks_are_stacked_and_the_strata_count_by_hand():
    # replicate 1: female turns 0,1,2 (positive 1,2), male turn 0 (positive);
    # replicate 2: female turns 0,1 (positive 0), male turns 0,1 (none positive)
    scores = [_dialogue("female", 1, 0b111, 0b110), _dialogue("male", 1, 0b1, 0b1),
              _dialogue("female", 2, 0b11, 0b01), _dialogue("male", 2, 0b11, 0b0)]
    df = scores_frame(scores)
    row = df[df["metric"] == M].set_index("level")
    # stride 3 bits (the longest dialogue's positions): replicate 2's masks sit at bits 3..5
    assert row.loc["female", "turn_app_mask"] == 0b011_111 and row.loc["female", "turn_pos_mask"] == 0b001_110
    assert row.loc["male", "turn_app_mask"] == 0b011_001 and row.loc["male", "turn_pos_mask"] == 0b000_001
    assert row.loc["female", "n_applicable"] == 5 and row.loc["female", "value"] == pytest.approx((2 / 3 + 1 / 2) / 2)
    (cell,) = cell_matrices(df[df["metric"] == M], extras=("n_applicable", "n_positive") + MASK_COLUMNS)
    d = cell.column("female") - cell.column("male")
    c, w, var, na, nb, strata = turn_contributions(cell, ("female",), ("male",), d)
    # strata: (r1, t0): 0 of 1 vs 1 of 1 -> -1/2; (r2, t0): 1 vs 0 -> +1/2; (r2, t1): 0 vs 0 -> 0
    assert strata == 3 and c == pytest.approx([0.0]) and w == pytest.approx([1.5]) and var == pytest.approx([0.5])
    # swapping the level labels of the question flips its contribution
    c_swap = turn_contributions(cell, ("male",), ("female",), -d)[0]
    assert c_swap == pytest.approx(-c)


def test_masks_that_do_not_fit_fall_back_and_a_missing_mask_is_missing():
    base = {"tutor": "t", "task": "x", "domain": "d", "condition": "explicit", "dimension": "gender", "metric": M,
            "question_id": "q1", "value": 0.5, "n_applicable": 2.0, "n_positive": 1.0}
    k = 4
    rows = [{**base, "level": lv, "dialogue_replicate": r, "turn_app_mask": float(2 ** 15 - 1), "turn_pos_mask": 1.0}
            for lv in ("female", "male") for r in range(1, k + 1)]
    wide = pd.DataFrame(rows)
    assert 15 * k > MASK_BITS  # 15-bit masks x 4 replicates = 60 bits: more than a float holds exactly
    assert not set(MASK_COLUMNS) & set(stack_replicate_masks(wide).columns)
    assert not set(MASK_COLUMNS) & set(average_replicates(wide).columns)
    short = wide.assign(turn_app_mask=3.0)
    short.loc[0, "turn_app_mask"] = np.nan  # female, replicate 1: no mask
    out = average_replicates(short).set_index("level")
    assert np.isnan(out.loc["female", "turn_app_mask"]) and out.loc["male", "turn_app_mask"] == 0b11_11_11_11


def _two_replicates(frame_a, frame_b):
    from edufair_metrics.analysis.replicates import REPLICATE_COLUMN

    both = pd.concat([frame_a.assign(**{REPLICATE_COLUMN: 1}), frame_b.assign(**{REPLICATE_COLUMN: 2})],
                     ignore_index=True)
    return average_replicates(both)


def test_replicate_runs_compare_turns_at_the_same_position():
    """The case position strata exist for (``test_turns.test_turns_are_compared_at_the_same_position``)
    with k = 2: the same per-turn curve, 8-10 vs 2-4 turns. With the replicates' masks stacked the
    rows are stratified by position and not confirmed; with question strata (masks dropped, as
    before) the length difference reads as a per-turn gap."""
    from tests.analysis.sim_verdicts import simulate_frame

    kw = dict(length=True, slope=0.35, short=(2, 4), conditions=("explicit",))
    df = _two_replicates(simulate_frame(200, {}, seed=21, **kw), simulate_frame(200, {}, seed=22, **kw))
    with_pos = contrast_grid(df, n_boot=200, seed=0)
    without = contrast_grid(df.drop(columns=list(MASK_COLUMNS)), n_boot=200, seed=0)
    a_side = ["female", "immigrant", "other_language", "low_income"]

    def ped(g):
        return g[(g["metric_kind"] == "pedagogical") & g["a"].isin(a_side)]

    rows_p, rows_q = ped(with_pos), ped(without)
    assert len(rows_p) and (rows_p["turn_strata"] > 0).all() and (rows_q["turn_strata"] == 0).all()
    assert (rows_q["verdict"] == "flag").mean() >= 0.5
    assert (rows_p["verdict"] == "flag").mean() <= 0.1
