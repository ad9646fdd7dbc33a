"""The turn-level test (``analysis.turns``) against oracles: the Mantel–Haenszel contributions by
hand, the within-question permutation p against exact enumeration of all 2^n sign flips on tiny
data, the classical CMH p against scipy's χ², and the edge cases: the first row of a batch and
rows beyond the first 256, questions with 0 or 1 applicable turns, rows whose statistic is 0
(p = 1, never above 1), rows below the question minimum."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.stats import chi2

from edufair_metrics.analysis.turns import TURN_COLUMNS, turn_contributions, turn_tests

B = 4000  # flips: the Monte Carlo p is within ±0.016 (2 s.e. at p = 0.5) of the exact p


def cell(na, ya, nb, yb):
    """A two-level cell (levels a, b), one question per entry."""
    app = np.column_stack([na, nb]).astype(float)
    pos = np.column_stack([ya, yb]).astype(float)
    return SimpleNamespace(levels=["a", "b"], extras={"n_applicable": app, "n_positive": pos})


def exact_p(c: np.ndarray) -> float:
    """The exact within-question permutation p: the share of the 2^n sign flips whose |Σ ε c| is at
    least the observed |Σ c|."""
    obs = abs(c.sum())
    flips = np.array(list(itertools.product((-1, 1), repeat=c.size)))
    return float(np.mean(np.abs(flips @ c) >= obs - 1e-9))


def test_contributions_by_hand():
    # question 1: a 3/4 positive, b 1/4: N = 8, m = 4: c = 3 - 4*4/8 = 1, w = 4*4/8 = 2,
    # var = 4*4*4*4 / (64 * 7) = 4/7; question 2: a 0/2, b 2/2: c = -1, w = 1, var = 2*2*2*2/(16*3) = 1/3
    c, w, var, na, nb, _ = turn_contributions(cell([4, 2], [3, 0], [4, 2], [1, 2]), ["a"], ["b"], np.array([0.5, -1.0]))
    assert c == pytest.approx([1.0, -1.0])
    assert w == pytest.approx([2.0, 1.0])
    assert var == pytest.approx([4 / 7, 1 / 3])
    assert list(na) == [4, 2] and list(nb) == [4, 2]


def test_questions_with_no_or_one_applicable_turn():
    # 0 turns on both sides: nothing (c = w = var = 0); one turn in all: c and w defined, var 0
    c, w, var, _, _, _ = turn_contributions(cell([0, 1, 0], [0, 1, 0], [0, 0, 1], [0, 0, 0]), ["a"], ["b"],
                                         np.array([0.0, 1.0, 0.0]))
    assert list(c) == [0.0, 0.0, 0.0] and list(w) == [0.0, 0.0, 0.0] and list(var) == [0.0, 0.0, 0.0]
    # one turn each side: N = 2, m = 1: c = 1 - 1/2, w = 1/2, var = 1*1*1*1/(4*1)
    c, w, var, _, _, _ = turn_contributions(cell([1], [1], [1], [0]), ["a"], ["b"], np.array([1.0]))
    assert (c[0], w[0], var[0]) == pytest.approx((0.5, 0.5, 0.25))


def test_questions_without_a_difference_or_counts_are_left_out_and_sides_of_several_levels_sum():
    app = np.array([[2, 3, 1], [np.nan, 1, 1], [2, 2, 2]], dtype=float)
    pos = np.array([[1, 1, 0], [0, 0, 0], [2, 0, 1]], dtype=float)
    cl = SimpleNamespace(levels=["a", "b1", "b2"], extras={"n_applicable": app, "n_positive": pos})
    c, w, var, na, nb, _ = turn_contributions(cl, ["a"], ["b1", "b2"], np.array([0.1, 0.2, np.nan]))
    assert c.size == 1  # question 2 lacks a count, question 3 a difference
    # a 1/2, b (1+0)/(3+1): N = 6, m = 2: c = 1 - 2*2/6
    assert c[0] == pytest.approx(1 - 4 / 6) and w[0] == pytest.approx(2 * 4 / 6)
    assert na[0] == 2 and nb[0] == 2.0  # per level: 4 turns over two levels
    assert turn_contributions(SimpleNamespace(levels=["a", "b"], extras={}), ["a"], ["b"], np.zeros(1)) is None


def _contrib(c):
    c = np.asarray(c, dtype=float)
    return (c, np.ones_like(c), np.full_like(c, 0.25), np.full_like(c, 3.0), np.full_like(c, 2.0))


@pytest.mark.parametrize("seed", range(4))
def test_the_permutation_p_is_the_exact_enumeration_p(seed):
    rng = np.random.default_rng(seed)
    rows = [_contrib(np.round(rng.normal(0.4, 1.0, size=n), 2)) for n in (3, 5, 6, 8)]
    out = turn_tests(rows, n_boot=B, seed=seed, min_questions=1)
    for i, con in enumerate(rows):
        want = exact_p(con[0])
        assert out["turn_p"][i] == pytest.approx(want, abs=0.035), (i, con[0])
        assert 1 / (B + 1) <= out["turn_p"][i] <= 1


def test_the_first_row_and_rows_beyond_256_are_tested_like_the_rest():
    # 300 rows, every one the same strong per-turn difference: exact p = 2 / 2^10
    strong = [1.0] * 10
    rows = [_contrib(strong) for _ in range(300)]
    rows[0] = _contrib([0.1, -0.1] * 5)  # the first row: no difference at all (Σ c = 0): p = 1
    rows[299] = _contrib([0.5, -0.4, 0.3])  # the last row: exact p 6/8
    out = turn_tests(rows, n_boot=B, seed=1, min_questions=1)
    p = out["turn_p"]
    assert p[0] == 1.0
    assert np.isfinite(p).all()
    assert (p[1:299] < 0.01).all()
    assert p[299] == pytest.approx(exact_p(np.array([0.5, -0.4, 0.3])), abs=0.035)
    assert out["turn_rd"][299] == pytest.approx(0.4 / 3)
    # the same rows alone give the same p (one flip matrix for all, whatever the batch)
    alone = turn_tests([rows[299]], n_boot=B, seed=1, min_questions=1)
    assert alone["turn_p"][0] == p[299]
    first = turn_tests([rows[1]], n_boot=B, seed=1, min_questions=1)
    assert first["turn_p"][0] == p[1] == p[257]


def test_cmh_p_and_rate_difference_by_hand():
    c = np.array([1.0, -0.5, 2.0])
    w = np.array([2.0, 1.0, 1.5])
    var = np.array([0.5, 0.25, 0.75])
    out = turn_tests([(c, w, var, np.ones(3), np.ones(3))], n_boot=200, seed=0, min_questions=2)
    assert out["turn_rd"][0] == pytest.approx(2.5 / 4.5)
    assert out["turn_p_cmh"][0] == pytest.approx(chi2.sf(2.5 ** 2 / 1.5, 1))
    assert out["turn_n"][0] == 3 and out["turns_a"][0] == 1 and out["turns_b"][0] == 1


def test_degenerate_rows():
    zero = (np.zeros(4), np.zeros(4), np.zeros(4), np.zeros(4), np.zeros(4))  # no applicable turns at all
    out = turn_tests([zero, None, _contrib([1.0, 2.0])], n_boot=500, seed=0, min_questions=3)
    assert out["turn_p"][0] == 1.0 and out["turn_rd"][0] == 0.0 and out["turn_p_cmh"][0] == 1.0
    assert out["turn_n"][0] == 4
    for col in TURN_COLUMNS:  # no counts: all NaN
        assert np.isnan(out[col][1])
    # below the question minimum: only the counts (turn_n, and turn_strata: 0 = question strata)
    assert out["turn_n"][2] == 2 and out["turn_strata"][2] == 0
    assert all(np.isnan(out[col][2]) for col in TURN_COLUMNS if col not in ("turn_n", "turn_strata"))
    # a p is never above 1, also when every flip reaches the observed statistic
    tie = turn_tests([_contrib([1e-12, 0.0, 0.0])], n_boot=500, seed=0, min_questions=1)
    assert tie["turn_p"][0] == 1.0  # (1 + B) / (B + 1): every flip reaches it
    assert turn_tests([], n_boot=10, seed=0, min_questions=1)["turn_p"].size == 0


def test_a_side_of_several_levels_reports_turns_per_level():
    app = np.array([[2, 4, 3]], dtype=float)
    pos = np.array([[1, 2, 0]], dtype=float)
    cl = SimpleNamespace(levels=["a1", "a2", "b"], extras={"n_applicable": app, "n_positive": pos})
    c, w, var, na, nb, _ = turn_contributions(cl, ["a1", "a2"], ["b"], np.array([0.2]))
    # a: 3 of 6 turns, b: 0 of 3: N = 9, m = 3: c = 3 - 6·3/9 = 1, w = 6·3/9 = 2
    assert (c[0], w[0]) == pytest.approx((1.0, 2.0))
    assert (na[0], nb[0]) == (3.0, 3.0)  # 6 turns over two levels; 3 over one


# ---- strata by turn position ---------------------------------------------------------------------

def masked_cell(na, ya, nb, yb, app_a, pos_a, app_b, pos_b):
    """A two-level cell with the per-position bit masks (bit t: the t-th tutor turn applicable /
    labelled 1) beside the counts."""
    c = cell(na, ya, nb, yb)
    c.extras["turn_app_mask"] = np.column_stack([app_a, app_b]).astype(float)
    c.extras["turn_pos_mask"] = np.column_stack([pos_a, pos_b]).astype(float)
    return c


def test_position_strata_by_hand():
    # question 1: a applicable at turns 0, 1, 2 (positive at 0 and 2), b at turns 0, 1 (positive at 1).
    #   turn 0: a 1/1, b 0/1: N = 2, m = 1: c = 1 - 1/2, w = 1/2, var = 1/4; turn 1: a 0/1, b 1/1:
    #   c = -1/2, w = 1/2, var = 1/4; turn 2: b has no turn there, so no stratum.
    # question 2: a applicable at turn 0 only; its positive bit at turn 1 is not an applicable turn
    #   and does not count; b at turns 0, 1, none positive: turn 0 only: c = 1/2, w = 1/2, var = 1/4.
    # question 3: b applicable at turns 2, 3 only, a at 0, 1: no position both reached: nothing.
    cl = masked_cell(na=[3, 1, 2], ya=[2, 1, 1], nb=[2, 2, 2], yb=[1, 0, 2],
                     app_a=[0b111, 0b01, 0b0011], pos_a=[0b101, 0b11, 0b0001],
                     app_b=[0b011, 0b11, 0b1100], pos_b=[0b010, 0b00, 0b1100])
    c, w, var, na, nb, strata = turn_contributions(cl, ["a"], ["b"], np.array([0.1, 0.2, 0.3]))
    assert c == pytest.approx([0.0, 0.5, 0.0])
    assert w == pytest.approx([1.0, 0.5, 0.0])
    assert var == pytest.approx([0.5, 0.25, 0.0])
    assert strata == 3
    # the turns per side are still the dialogues' applicable turn counts
    assert list(na) == [3, 1, 2] and list(nb) == [2, 2, 2]
    # swapping the sides flips every question's contribution (the permutation is a sign flip)
    c2, w2, var2, _, _, strata2 = turn_contributions(cl, ["b"], ["a"], np.array([0.1, 0.2, 0.3]))
    assert c2 == pytest.approx(-c) and w2 == pytest.approx(w) and var2 == pytest.approx(var) and strata2 == 3


def test_position_strata_of_a_side_of_several_levels_and_questions_left_out():
    # levels a1, a2 against b at turns 0, 1; question 2 has no difference (left out, as in the counts)
    app = np.array([[2, 1, 2], [1, 1, 1]], dtype=float)
    pos = np.array([[1, 1, 0], [0, 0, 0]], dtype=float)
    cl = SimpleNamespace(levels=["a1", "a2", "b"], extras={
        "n_applicable": app, "n_positive": pos,
        "turn_app_mask": np.array([[0b11, 0b01, 0b11], [1, 1, 1]], dtype=float),
        "turn_pos_mask": np.array([[0b10, 0b01, 0b00], [0, 0, 0]], dtype=float)})
    c, w, var, na, nb, strata = turn_contributions(cl, ["a1", "a2"], ["b"], np.array([0.4, np.nan]))
    # turn 0: a 1 of 2 (a2's), b 0 of 1: N = 3, m = 1: c = 1 - 2/3, w = 2/3, var = 2·1·1·2/(9·2) = 2/9
    # turn 1: a 1 of 1 (a1's), b 0 of 1: N = 2, m = 1: c = 1/2, w = 1/2, var = 1/4
    assert c == pytest.approx([1 / 3 + 1 / 2]) and w == pytest.approx([2 / 3 + 1 / 2])
    assert var == pytest.approx([2 / 9 + 1 / 4]) and strata == 2
    assert (na[0], nb[0]) == (1.5, 2.0)  # per level
    # the sides swapped: the contribution flips, the turns per level follow their side
    c2, w2, var2, na2, nb2, strata2 = turn_contributions(cl, ["b"], ["a1", "a2"], np.array([0.4, np.nan]))
    assert c2 == pytest.approx(-c) and w2 == pytest.approx(w) and var2 == pytest.approx(var) and strata2 == 2
    assert (na2[0], nb2[0]) == (2.0, 1.5)


def test_a_question_without_masks_falls_back_to_question_strata():
    cl = masked_cell(na=[4, 2], ya=[3, 0], nb=[4, 2], yb=[1, 2], app_a=[0b1111, np.nan], pos_a=[0b0111, 0],
                     app_b=[0b1111, 0b11], pos_b=[0b0001, 0b11])
    got = turn_contributions(cl, ["a"], ["b"], np.array([0.5, -1.0]))
    want = turn_contributions(cell([4, 2], [3, 0], [4, 2], [1, 2]), ["a"], ["b"], np.array([0.5, -1.0]))
    for g, x in zip(got, want):
        assert np.asarray(g) == pytest.approx(np.asarray(x))
    assert got[5] == 0
    # a NaN positive mask where the applicable one is set falls back too
    cl.extras["turn_app_mask"][1, 0] = 0b11
    cl.extras["turn_pos_mask"][1, 1] = np.nan
    assert turn_contributions(cl, ["a"], ["b"], np.array([0.5, -1.0]))[5] == 0
