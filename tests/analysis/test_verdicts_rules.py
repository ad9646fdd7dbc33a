"""The verdict rules of ``analysis.verdicts`` stated on small hand-made grids with hand-computed
expectations: the Bonferroni p of a unit (multiplied by its k pairs, capped at 1), the Friedman
pairs' factor, Benjamini–Hochberg over the units of a family, the flag boundary, the order of the
verdicts, the unit rule (inconclusive stays inconclusive; unconfirmed only without a flagged row),
the unit's questions-to-decide from both routes, the names rows' "fixed" q, and the headline's
``family_certified`` (one unit is enough)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.special import ndtr, ndtri

from edufair_metrics.analysis.verdicts import (
    add_row_verdicts,
    mde_from_null_var,
    r2_unbiased,
    signed_root,
    unit_multiplicity,
    unit_verdicts,
    verdict_headline,
)

Z95 = float(ndtri(0.95))


def grid(rows):
    """Rows of dicts over a default row: 100 pairs, r = 0, p = 1, a wide interval (never certified)."""
    base = dict(n_pairs=100, r=0.0, p=1.0, p_exact=np.nan, boot_sd=0.3, null_var_r=0.01, ci_low_unit=-1.0,
                ci_high_unit=1.0, violation=False, sufficient=True, kind="binary", posthoc=False, tutor="t",
                domain="d", condition="explicit", contrast="x", dimension="x", metric="m",
                metric_kind="conversation", headline=True)
    return pd.DataFrame([{**base, **r} for r in rows])


# ---- rows: the decision p and its multiplicity ---------------------------------------------------

def test_a_unit_of_two_pairs_multiplies_each_p_by_two():
    g = add_row_verdicts(grid([dict(contrast="u", p=0.02), dict(contrast="u", p=0.3)]))
    # one unit, one family: q_flag = min(1, 2 p)
    assert list(g["unit_pairs"]) == [2, 2]
    assert g["q_flag"].tolist() == pytest.approx([0.04, 0.6])
    assert g["flagged"].tolist() == [True, False]
    assert g["verdict"].tolist() == ["flag", "inconclusive"]
    # at 0.03 the unit's p is 0.06: not flagged (a mistake that divides by k would flag it)
    g = add_row_verdicts(grid([dict(contrast="u", p=0.03), dict(contrast="u", p=0.3)]))
    assert g["q_flag"].tolist() == pytest.approx([0.06, 0.6]) and not g["flagged"].any()


def test_an_insufficient_pair_does_not_count_in_k_and_gets_no_p():
    g = add_row_verdicts(grid([dict(contrast="u", p=0.03), dict(contrast="u", p=0.001, sufficient=False)]))
    assert g.loc[0, "q_flag"] == pytest.approx(0.03) and g.loc[0, "verdict"] == "flag"
    assert math.isnan(g.loc[1, "p_decide"]) and math.isnan(g.loc[1, "q_flag"])
    assert g.loc[1, "verdict"] == "insufficient" and not g.loc[1, "flagged"]


def test_p_and_q_never_exceed_one():
    g = add_row_verdicts(grid([dict(contrast="u", p=0.7), dict(contrast="u", p=0.9), dict(contrast="v", p=0.8)]))
    assert (g["p_decide"] <= 1).all() and (g["q_flag"] <= 1).all()
    # unit u: min(1, 2 · 0.7) = 1; BH of (1, 0.8) over the two units: (1, min(2 · 0.8, 1)) = (1, 1)
    assert g["q_flag"].tolist() == pytest.approx([1.0, 1.0, 1.0])
    u = unit_verdicts(g, ["contrast"])
    assert (u["p_unit"] <= 1).all() and (u["q_unit"] <= 1).all()
    assert u.loc["u", "p_unit"] == 1.0


def test_the_flag_boundary_is_strict():
    g = add_row_verdicts(grid([dict(p=0.05), dict(tutor="t2", p=0.0499)]))
    assert g["flagged"].tolist() == [False, True]


def test_below_50_pairs_the_exact_p_decides_and_from_50_the_wilcoxon_p():
    g = add_row_verdicts(grid([dict(n_pairs=49, p=0.9, p_exact=0.01), dict(tutor="t2", n_pairs=50, p=0.01, p_exact=0.9)]))
    assert g["p_decide"].tolist() == [0.01, 0.01]


def test_friedman_pairs_take_k_times_p_after_the_omnibus_and_1_without_it():
    rows = [dict(kind="multilevel", contrast="ses", posthoc=True, p=p) for p in (0.01, 0.2, 0.5)]
    g = add_row_verdicts(grid(rows))
    assert g["p_decide"].tolist() == pytest.approx([0.03, 0.6, 1.0])
    # already Bonferroni: the unit does not multiply again (q = the row's p, one unit)
    assert g["q_flag"].tolist() == pytest.approx([0.03, 0.6, 1.0])
    assert g["verdict"].tolist() == ["flag", "inconclusive", "inconclusive"]
    g = add_row_verdicts(grid([{**r, "posthoc": False} for r in rows]))
    assert g["p_decide"].tolist() == [1.0, 1.0, 1.0] and not g["flagged"].any()
    u = unit_verdicts(add_row_verdicts(grid(rows)), ["contrast"])
    assert u.loc["ses", "p_unit"] == pytest.approx(0.03)


def test_benjamini_hochberg_over_the_units_of_one_family():
    g = add_row_verdicts(grid([dict(contrast="a", p=0.01), dict(contrast="b", p=0.04), dict(contrast="c", p=0.5)]))
    # BH of (0.01, 0.04, 0.5): 3·0.01/1 = 0.03, min(3·0.04/2, 3·0.5/3) = 0.06, 0.5
    assert g["q_flag"].tolist() == pytest.approx([0.03, 0.06, 0.5])
    assert g["flagged"].tolist() == [True, False, False]
    # another tutor or another metric kind is another family
    g = add_row_verdicts(grid([dict(contrast="a", p=0.01), dict(contrast="b", p=0.04, tutor="t2"),
                               dict(contrast="c", p=0.5, metric_kind="pedagogical")]))
    assert g["q_flag"].tolist() == pytest.approx([0.01, 0.04, 0.5])
    # holm: (0.01·3, max(0.03, 0.04·2), max(0.08, 0.5))
    g = add_row_verdicts(grid([dict(contrast="a", p=0.01), dict(contrast="b", p=0.04), dict(contrast="c", p=0.5)]),
                         method="holm")
    assert g["q_flag"].tolist() == pytest.approx([0.03, 0.08, 0.5])


def test_unit_multiplicity_by_hand():
    row_x = np.array([0.02, 0.5, 0.04, np.nan, 0.3])
    row_unit = np.array([0, 0, 1, 2, 3])
    fam = np.array(["f", "g", "g", "f"], dtype=object)
    unit_p, q_unit, q_row, m = unit_multiplicity(row_x, row_unit, fam, "bh")
    assert unit_p[[0, 1, 3]].tolist() == [0.02, 0.04, 0.3] and math.isnan(unit_p[2])
    # family f: units 0 and 3 (p 0.02, 0.3): BH 0.04, 0.3; family g: unit 1 alone
    assert q_unit[[0, 1, 3]].tolist() == pytest.approx([0.04, 0.04, 0.3]) and math.isnan(q_unit[2])
    assert m.tolist() == [2, 1, 0, 2]
    # the row with 0.5 in unit 0: as if its unit's p were 0.5: BH of (0.5, 0.3) -> 0.5
    assert q_row[[0, 1, 2, 4]].tolist() == pytest.approx([0.04, 0.5, 0.04, 0.3]) and math.isnan(q_row[3])


# ---- rows: certify, the order of the verdicts, the turn check ------------------------------------

def test_certify_and_the_order_of_verdicts():
    g = add_row_verdicts(grid([
        dict(tutor="a", r=0.02, boot_sd=0.01, null_var_r=0.0001, n_pairs=3000),  # certified
        dict(tutor="b", r=0.05, boot_sd=0.01, null_var_r=0.0001, n_pairs=3000, p=0.001),  # flagged and certified
        dict(tutor="c", r=0.09, boot_sd=0.01, null_var_r=0.0001, n_pairs=3000),  # interval reaches 0.10
        dict(tutor="d", r=0.0, sufficient=False),
    ]), margin=0.10)
    assert g["certified"].tolist() == [True, True, False, False]
    assert g["verdict"].tolist() == ["certify", "flag", "inconclusive", "insufficient"]
    se = 0.01 * math.sqrt(3000 / 2999)
    assert g.loc[0, "eq_ci_low"] == pytest.approx(0.02 - Z95 * se)
    assert g.loc[0, "eq_ci_high"] == pytest.approx(0.02 + Z95 * se)
    assert g.loc[0, "p_equiv"] == pytest.approx(max(ndtr((0.02 - 0.1) / se), ndtr((-0.1 - 0.02) / se)))
    assert math.isnan(g.loc[3, "p_equiv"])
    # negative r: the lower bound decides
    h = add_row_verdicts(grid([dict(r=-0.09, boot_sd=0.01, null_var_r=0.0001, n_pairs=3000)]), margin=0.10)
    assert not h.loc[0, "certified"] and h.loc[0, "eq_ci_high"] < 0.10


@pytest.mark.parametrize("turn_p, turn_rd, r, expected", [
    (0.01, 0.1, 0.3, "flag"),  # confirmed per turn
    (0.05, 0.1, 0.3, "unconfirmed"),  # not below 0.05
    (0.01, -0.1, 0.3, "unconfirmed"),  # the other sign
    (0.01, -0.1, -0.3, "flag"),
    (np.nan, np.nan, 0.3, "flag"),  # not tested: the per-dialogue verdict
])
def test_flagged_pedagogical_rows_need_the_turn_level_confirmation(turn_p, turn_rd, r, expected):
    g = add_row_verdicts(grid([dict(metric_kind="pedagogical", r=r, p=0.001, turn_p=turn_p, turn_rd=turn_rd)]))
    assert g.loc[0, "verdict"] == expected
    assert bool(g.loc[0, "flagged"])
    # a conversation row is never checked
    g = add_row_verdicts(grid([dict(metric_kind="conversation", r=r, p=0.001, turn_p=turn_p, turn_rd=turn_rd)]))
    assert g.loc[0, "verdict"] == "flag" and pd.isna(g.loc[0, "turn_confirmed"])


def test_an_unflagged_row_that_fails_the_turn_check_stays_inconclusive():
    g = add_row_verdicts(grid([dict(metric_kind="pedagogical", r=0.1, p=0.5, turn_p=0.9, turn_rd=-0.1)]))
    assert g.loc[0, "verdict"] == "inconclusive"
    assert not pd.isna(g.loc[0, "turn_confirmed"]) and not bool(g.loc[0, "turn_confirmed"])


def test_unit_violation_is_the_unit_interval_excluding_zero():
    g = add_row_verdicts(grid([dict(ci_low_unit=0.01), dict(tutor="b", ci_high_unit=-0.01), dict(tutor="c"),
                               dict(tutor="e", ci_low_unit=0.01, sufficient=False),
                               dict(tutor="f", kind="multilevel", violation=True)]))
    assert g["violation_unit"].tolist() == [True, True, False, False, True]


def test_effect_size_and_power_columns():
    g = add_row_verdicts(grid([dict(contrast="u", r=0.3, null_var_r=0.01), dict(contrast="u", r=0.1, null_var_r=0.01),
                               dict(contrast="v", r=0.2, null_var_r=0.02)]))
    assert g["r2_unbiased"].tolist() == pytest.approx([(0.09 - 0.01) / 0.99, 0.0, (0.04 - 0.02) / 0.98])
    assert g["unbiased_abs_r"].tolist() == pytest.approx(signed_root(g["r2_unbiased"]).tolist())
    # m = 2 units in the family, k = 2 pairs in unit u: the row's level is 0.05 / 4; unit v: 0.05 / 2
    assert g.loc[0, "mde_r"] == pytest.approx(float(mde_from_null_var(0.01, 0.05 / 4)))
    assert g.loc[2, "mde_r"] == pytest.approx(float(mde_from_null_var(0.02, 0.05 / 2)))
    assert r2_unbiased(0.5, 1.0) == 0.0 and np.isnan(r2_unbiased(np.nan, 0.1))


def test_names_rows_need_the_gap_over_the_names_and_keep_the_fixed_q():
    g = grid([dict(kind="names", contrast="n", p=0.004, p_name=0.3), dict(kind="names", contrast="n", p=0.2,
                                                                         p_name=np.nan),
              dict(contrast="o", p=0.01, p_name=np.nan)])
    g = add_row_verdicts(g)
    assert g["p_decide"].tolist() == pytest.approx([0.3, 1.0, 0.01])
    # with the names fixed: unit n's p = 2 · 0.004, unit o's 0.01: BH (0.008, 0.01) -> (0.01, 0.01);
    # the second names row with its own 0.2 · 2 = 0.4
    assert g["q_flag_fixed"].iloc[:2].tolist() == pytest.approx([0.01, 0.4])
    assert math.isnan(g["q_flag_fixed"].iloc[2])
    assert g["q_flag"].tolist() == pytest.approx([0.6, 1.0, 0.02])
    assert g["verdict"].tolist() == ["inconclusive", "inconclusive", "flag"]


@pytest.mark.parametrize("kind", ["binary", "pairs", "averaged"])
def test_only_names_rows_read_the_names_p(kind):
    # a grid with names rows: every other kind keeps its own p (whatever its name sorts after)
    g = add_row_verdicts(grid([dict(kind="names", contrast="n", p=0.004, p_name=0.3),
                               dict(kind=kind, contrast="o", p=0.01, p_name=np.nan)]))
    assert g["p_decide"].tolist() == pytest.approx([0.3, 0.01])


# ---- units ----------------------------------------------------------------------------------

def unit_rows(verdicts, **cols):
    n = len(verdicts)
    base = dict(verdict=verdicts, certified=[v == "certify" for v in verdicts],
                sufficient=[v != "insufficient" for v in verdicts], q_flag=[0.5] * n, r2_unbiased=[0.0] * n,
                mde_r=[0.2] * n, n_flag=[np.nan] * n, n_certify=[np.nan] * n, n_decide=[np.nan] * n, n_pairs=[100] * n,
                p_decide=[0.5] * n, kind=["binary"] * n, unit=["u"] * n, null_var_r=[0.01] * n)
    base.update(cols)
    return pd.DataFrame(base)


@pytest.mark.parametrize("rows, verdict, flagged", [
    (["inconclusive", "inconclusive"], "inconclusive", False),
    (["inconclusive", "certify"], "inconclusive", False),
    (["certify", "certify"], "certify", False),
    (["certify", "insufficient"], "inconclusive", False),
    (["unconfirmed", "inconclusive"], "unconfirmed", True),
    (["unconfirmed", "flag"], "flag", True),
    (["flag", "certify"], "flag", True),
    (["insufficient", "insufficient"], "insufficient", False),
])
def test_the_unit_rule(rows, verdict, flagged):
    u = unit_verdicts(unit_rows(rows), ["unit"])
    assert u.loc["u", "verdict"] == verdict
    assert bool(u.loc["u", "flagged"]) is flagged
    assert bool(u.loc["u", "certified"]) is (verdict == "certify")


def test_the_units_bonferroni_p_multiplies_by_the_tested_pairs():
    u = unit_verdicts(unit_rows(["inconclusive"] * 3, p_decide=[0.01, 0.2, np.nan]), ["unit"])
    assert u.loc["u", "p_unit"] == pytest.approx(0.02)
    u = unit_verdicts(unit_rows(["inconclusive"] * 2, p_decide=[0.3, 0.9]), ["unit"])
    assert u.loc["u", "p_unit"] == 0.6
    u = unit_verdicts(unit_rows(["inconclusive"] * 2, p_decide=[0.7, 0.9]), ["unit"])
    assert u.loc["u", "p_unit"] == 1.0
    u = unit_verdicts(unit_rows(["inconclusive"] * 3, p_decide=[0.03, 0.2, 1.0], kind=["multilevel"] * 3), ["unit"])
    assert u.loc["u", "p_unit"] == pytest.approx(0.03)


def test_a_units_questions_to_decide_are_its_rows_largest():
    # each row's n_decide decides it with >= 80% over its interval; the unit needs all of them
    u = unit_verdicts(unit_rows(["inconclusive"] * 2, n_decide=[400.0, 900.0], n_pairs=[150, 200]), ["unit"])
    assert u.loc["u", "n_decide"] == 900 and u.loc["u", "more_questions"] == 750
    # not the nearer of the at-the-estimate routes (smallest n_flag 500)
    u = unit_verdicts(unit_rows(["inconclusive"] * 2, n_flag=[700.0, 500.0], n_certify=[400.0, 900.0],
                                n_decide=[800.0, 1200.0]), ["unit"])
    assert u.loc["u", "n_decide"] == 1200
    u = unit_verdicts(unit_rows(["inconclusive"] * 2, n_decide=[400.0, 300.0], n_pairs=[500, 500]), ["unit"])
    assert u.loc["u", "more_questions"] == 0


def test_a_units_effect_size_q_and_mde():
    rows = unit_rows(["inconclusive"] * 2, r2_unbiased=[0.04, 0.0], q_flag=[0.3, 0.07], mde_r=[0.25, 0.2])
    u = unit_verdicts(rows, ["unit"])
    assert u.loc["u", "r2_unbiased"] == pytest.approx(0.02)
    assert u.loc["u", "unbiased_abs_r"] == pytest.approx(math.sqrt(0.02))
    assert (u.loc["u", "q_unit"], u.loc["u", "mde_r"]) == (0.07, 0.2)
    u = unit_verdicts(rows, ["unit"], use_max=np.array([True]))
    assert u.loc["u", "r2_unbiased"] == pytest.approx(0.04)


# ---- the headline ------------------------------------------------------------------------------

def headline_units(tutors, verdicts, **cols):
    n = len(verdicts)
    base = dict(tutor=tutors, metric_kind=["pedagogical"] * n, headline=[True] * n, verdict=verdicts,
                r2_unbiased=[0.0] * n, n_pairs_min=[100] * n, mde_r=[0.2] * n, more_questions=[0.0] * n)
    base.update(cols)
    return pd.DataFrame(base)


def test_family_certified_with_one_unit_and_with_all_units_certified_only():
    h = verdict_headline(headline_units(["solo", "pair", "pair", "mixed", "mixed"],
                                        ["certify", "certify", "certify", "certify", "insufficient"]))
    h = h.set_index("tutor")
    assert bool(h.loc["solo", "family_certified"]) and h.loc["solo", "units"] == 1
    assert bool(h.loc["pair", "family_certified"])
    assert not bool(h.loc["mixed", "family_certified"])


def test_headline_counts_and_medians():
    u = headline_units(["t"] * 5, ["flag", "inconclusive", "inconclusive", "certify", "insufficient"],
                       r2_unbiased=[0.09, 0.01, -0.01, 0.0, 0.5], n_pairs_min=[100, 200, 300, 400, 5],
                       mde_r=[0.1, 0.2, 0.3, 0.4, 0.9], more_questions=[0.0, 50.0, 150.0, 0.0, 0.0])
    u.loc[len(u)] = dict(tutor="t", metric_kind="conversation", headline=True, verdict="flag", r2_unbiased=1.0,
                         n_pairs_min=1, mde_r=1.0, more_questions=0.0)
    u.loc[len(u)] = dict(tutor="t", metric_kind="pedagogical", headline=False, verdict="flag", r2_unbiased=1.0,
                         n_pairs_min=1, mde_r=1.0, more_questions=0.0)
    h = verdict_headline(u).iloc[0]
    assert (h["units"], h["flag"], h["inconclusive"], h["certify"], h["insufficient"], h["unconfirmed"]) == (5, 1, 2, 1, 1, 0)
    assert h["unbiased_abs_r"] == pytest.approx(math.sqrt(0.09 / 4))  # the sufficient units only
    assert (h["n_median"], h["mde_r_median"], h["more_questions_median"]) == (250, 0.25, 100)
    assert not h["family_certified"]
    assert len(verdict_headline(u, headline_only=False)) == 1
    assert verdict_headline(u, headline_only=False).iloc[0]["units"] == 6


# ---- the closed forms against their defining equations ---------------------------------------------

@pytest.mark.parametrize("v0", [0.01, 0.004, 0.0009])
@pytest.mark.parametrize("alpha", [0.05, 0.0125, 0.001])
def test_the_mde_solves_its_power_equation(v0, alpha):
    """ρ/√V0 − z_{1−α/2} = z_0.8 · √(1 − ρ²), solved numerically."""
    from scipy.optimize import brentq

    z, zb = float(ndtri(1 - alpha / 2)), float(ndtri(0.8))
    want = brentq(lambda rho: rho / math.sqrt(v0) - z - zb * math.sqrt(1 - rho * rho), 1e-9, 1 - 1e-12)
    assert float(mde_from_null_var(v0, alpha)) == pytest.approx(want, rel=1e-9)
    assert np.isnan(mde_from_null_var(0.0, alpha)) and np.isnan(mde_from_null_var(0.9, alpha))


def test_p_equiv_for_negative_r_and_without_spread():
    g = add_row_verdicts(grid([dict(r=-0.02, boot_sd=0.05, null_var_r=0.0001, n_pairs=3000)]), margin=0.10)
    se = 0.05 * math.sqrt(3000 / 2999)
    # the nearer bound decides: -0.02 is 0.08 from -M and 0.12 from +M
    assert g.loc[0, "p_equiv"] == pytest.approx(max(ndtr((-0.02 - 0.1) / se), ndtr((-0.1 + 0.02) / se)), rel=1e-9)
    assert g.loc[0, "p_equiv"] == pytest.approx(float(ndtr(-0.08 / se)), rel=1e-9) and g.loc[0, "p_equiv"] > 0.05
    # no spread at all (se = 0, every difference zero): no evidence, so no certificate (the
    # equivalence se is floored at 1): p = Φ((|r| − M) / 1) for the nearer bound
    g = add_row_verdicts(grid([dict(tutor=f"t{i}", r=r, boot_sd=0.0, null_var_r=0.0) for i, r in
                               enumerate((0.05, 0.1, -0.2))]), margin=0.10)
    assert g["p_equiv"].tolist() == pytest.approx([float(ndtr(-0.05)), 0.5, float(ndtr(0.1))])
    assert not g["certified"].any()


def test_a_unit_interval_that_straddles_zero_is_no_violation():
    g = add_row_verdicts(grid([dict(ci_low_unit=-0.2, ci_high_unit=0.3), dict(tutor="b", ci_low_unit=-0.7,
                                                                             ci_high_unit=-0.3)]))
    assert g["violation_unit"].tolist() == [False, True]


def test_friedman_rows_power_at_the_level_of_their_k_pairs():
    rows = [dict(kind="multilevel", contrast="ses", posthoc=True, p=p, null_var_r=0.01) for p in (0.01, 0.2, 0.5)]
    rows.append(dict(contrast="other", p=0.5, null_var_r=0.01))
    g = add_row_verdicts(grid(rows))
    # two units in the family (m = 2); the Friedman unit has 3 pairs: 0.05 / (2 · 3); the binary one 0.05 / 2
    assert g.loc[0, "mde_r"] == pytest.approx(float(mde_from_null_var(0.01, 0.05 / 6)))
    assert g.loc[3, "mde_r"] == pytest.approx(float(mde_from_null_var(0.01, 0.05 / 2)))


def test_a_true_r_at_or_beyond_the_margin_is_never_certified():
    from edufair_metrics.analysis.verdicts import n_for_certify

    got = n_for_certify(np.array([100.0, 100.0, 100.0, 100.0]), np.array([0.05, 0.05, np.inf, 0.05]),
                        np.array([0.1, 0.3, 0.02, 0.02]), 0.1, 0.05, 0.8)
    assert got[0] == np.inf and got[1] == np.inf  # at the margin, and beyond it
    assert np.isnan(got[2])  # no standard error: unknown, not never
    assert np.isfinite(got[3]) and got[3] > 0


def test_the_tost_power_by_hand():
    from scipy.stats import norm

    from edufair_metrics.analysis.verdicts import tost_power

    z = norm.ppf(0.95)
    se = 0.1 / (z + 1.0)  # M / se - z = 1
    # at rho = 0 both tails count: Phi(1) + Phi(1) - 1
    assert float(tost_power(se, 0.0, 0.1, 0.05)) == pytest.approx(2 * norm.cdf(1.0) - 1)
    rho = 0.03
    want = norm.cdf((0.1 - rho) / se - z) + norm.cdf((0.1 + rho) / se - z) - 1
    assert float(tost_power(se, rho, 0.1, 0.05)) == pytest.approx(want)


# ---- the power model's variance, the certify n and the headline's interval ------------------------

@pytest.mark.parametrize("r2u, v0", [(0.0, 0.01), (0.04, 0.01), (0.09, 0.002), (0.25, 0.03)])
def test_r2_variance_is_the_variance_of_a_squared_normal(r2u, v0):
    """r̂ ~ N(ρ, V0): r̂²/V0 is noncentral χ²(1, ρ²/V0), so Var(r̂²) = V0² · 2(1 + 2ρ²/V0) =
    4ρ²V0 + 2V0² (scipy's ncx2), divided by (1 − V0)² for r2_unbiased."""
    from scipy.stats import ncx2

    from edufair_metrics.analysis.verdicts import r2_variance

    want = v0 * v0 * ncx2(df=1, nc=r2u / v0).var() / (1 - v0) ** 2
    assert float(r2_variance(r2u, v0)) == pytest.approx(want, rel=1e-9)


def test_r2_variance_reads_a_negative_estimate_as_no_bias_and_floors_v0():
    from edufair_metrics.analysis.verdicts import r2_variance

    # ρ² estimated by max(r2_unbiased, 0): a negative estimate is the variance at ρ = 0
    assert float(r2_variance(-0.02, 0.01)) == pytest.approx(2 * 0.01 ** 2 / 0.99 ** 2, rel=1e-12)
    # V0 = 0 (every difference zero): floored at 1 (no information), capped below 1: huge, finite
    got = r2_variance(np.array([0.0, 0.0]), np.array([0.0, 1.0]))
    assert np.isfinite(got).all() and (got > 1e17).all()
    assert got[0] == got[1]
    assert np.isnan(r2_variance(np.nan, 0.01)) and np.isnan(r2_variance(0.01, np.nan))


@pytest.mark.parametrize("rho", [0.0, 0.03, 0.06, 0.095])
@pytest.mark.parametrize("margin, alpha, power", [(0.10, 0.05, 0.80), (0.20, 0.01, 0.90)])
def test_n_for_certify_is_where_the_exact_tost_power_reaches_the_goal(rho, margin, alpha, power):
    """At n' = n_for_certify the TOST at se·√(n/n') has exactly the asked power (the closed-form
    tost_power, solved by scipy's brentq as the oracle), and n' lies between the one-tail and the
    two-tail bounds of the bisection's bracket."""
    from scipy.optimize import brentq

    from edufair_metrics.analysis.verdicts import n_for_certify, tost_power

    n, se = 150.0, 0.09
    rho = rho * margin / 0.10
    inv = brentq(lambda s: float(tost_power(1 / s, rho, margin, alpha)) - power, 1e-6, 1e4, xtol=1e-13)
    want = n * (se * inv) ** 2
    got = float(n_for_certify(n, se, rho, margin, alpha, power))
    assert got == pytest.approx(want, rel=1e-9)
    z = float(ndtri(1 - alpha))
    one_tail = n * (se * (z + float(ndtri(power))) / (margin - rho)) ** 2
    two_tail = n * (se * (z + float(ndtri((1 + power) / 2))) / (margin - rho)) ** 2
    assert one_tail * (1 - 1e-12) <= got <= two_tail * (1 + 1e-12)  # at ρ = 0 the two-tail bound is exact
    # vectorised: the same per element, a negative r as its |r|
    both = n_for_certify(np.array([n, n]), np.array([se, se]), np.array([rho, -rho]), margin, alpha, power)
    assert both == pytest.approx([want, want], rel=1e-9)


def _headline_rows(r2, var, groups=None):
    n = len(r2)
    cols = dict(tutor=["t"] * n, metric_kind=["pedagogical"] * n, headline=[True] * n, verdict=["inconclusive"] * n,
                r2_unbiased=r2, r2_var=var, n_pairs_min=[100] * n, mde_r=[0.2] * n, more_questions=[10.0] * n,
                n_certify=[500.0] * n)
    if groups is not None:
        cols.update(domain=["d"] * n, condition=["explicit"] * n, contrast=groups)
    return pd.DataFrame(cols)


def test_the_headline_upper_bound_takes_one_dialogue_pairs_units_as_perfectly_correlated():
    """ms_upper = mean r2_unbiased + z₀.₉₅ · √Var / m: the units of one dialogue pair (domain ×
    condition × contrast) add their standard deviations, the groups their variances."""
    r2, var = [0.004, 0.002, -0.001, 0.003], [1e-5, 4e-6, 9e-6, 1.6e-5]
    sd = np.sqrt(var)
    h = verdict_headline(_headline_rows(r2, var, groups=["a", "a", "b", "c"]), margin=0.10).iloc[0]
    want = np.mean(r2) + Z95 * math.sqrt((sd[0] + sd[1]) ** 2 + sd[2] ** 2 + sd[3] ** 2) / 4
    assert h["ms_upper"] == pytest.approx(want, rel=1e-12)
    # without the pair's columns every unit is its own group: the variances add
    h = verdict_headline(_headline_rows(r2, var), margin=0.10).iloc[0]
    assert h["ms_upper"] == pytest.approx(np.mean(r2) + Z95 * math.sqrt(sum(var)) / 4, rel=1e-12)


def test_the_headline_is_certified_when_its_upper_bound_is_strictly_below_the_squared_margin():
    r2, var = [0.001, 0.002], [1e-6, 1e-6]
    ms = verdict_headline(_headline_rows(r2, var), margin=0.10).iloc[0]["ms_upper"]
    assert verdict_headline(_headline_rows(r2, var), margin=math.sqrt(ms) * 1.0001).iloc[0]["headline_certified"]
    assert not verdict_headline(_headline_rows(r2, var), margin=math.sqrt(ms) * 0.9999).iloc[0]["headline_certified"]


def test_a_units_n_certify_is_its_rows_largest_and_unknown_if_one_is():
    rows = unit_rows(["inconclusive"] * 2, n_certify=[300.0, 700.0])
    assert unit_verdicts(rows, ["unit"]).loc["u", "n_certify"] == 700
    rows = unit_rows(["inconclusive"] * 2, n_certify=[300.0, np.nan])
    assert np.isnan(unit_verdicts(rows, ["unit"]).loc["u", "n_certify"])


def test_family_certification_needs_each_unit_at_the_power_root():
    """k independent units all certified with 80%: each TOST at power 0.8^(1/k); at ρ = 0 the
    TOST's power at M/se = x is 2Φ(x − z) − 1, and n scales as (M/se)², so the factor is
    (x_k / x_1)² with x_k solving 2Φ(x − z) − 1 = 0.8^(1/k) (scipy's brentq)."""
    from scipy.optimize import brentq

    from edufair_metrics.analysis.verdicts import family_certify_factor, tost_power

    def x_at(p):
        return brentq(lambda x: float(tost_power(1 / x, 0.0, 1.0, 0.05)) - p, 1e-6, 50, xtol=1e-13)

    assert family_certify_factor(1) == pytest.approx(1.0, rel=1e-12)
    for k in (2, 5, 180):
        assert family_certify_factor(k) == pytest.approx((x_at(0.8 ** (1 / k)) / x_at(0.8)) ** 2, rel=1e-9)
    assert family_certify_factor(0) == family_certify_factor(1)  # no unit: read as one


def test_family_certification_is_unreachable_when_one_units_certify_n_is():
    for bad in (math.inf, np.nan):
        u = _headline_rows([0.0, 0.0], [1e-6, 1e-6])
        u["n_certify"] = [500.0, bad]
        assert verdict_headline(u, margin=0.10).iloc[0]["n_family_certify"] == math.inf
    u = _headline_rows([0.0, 0.0], [1e-6, 1e-6])
    u["n_certify"] = [500.0, 800.0]
    from edufair_metrics.analysis.verdicts import family_certify_factor

    assert verdict_headline(u, margin=0.10).iloc[0]["n_family_certify"] == math.ceil(800 * family_certify_factor(2))


def test_a_row_whose_every_difference_has_one_sign_has_no_equivalence_evidence():
    """|r| = 1 with no spread: the equivalence se is 0, and such a row is as far from equivalence
    as a row can be (p_equiv 1, never certified)."""
    g = add_row_verdicts(grid([dict(r=1.0, boot_sd=0.0, null_var_r=0.01), dict(tutor="b", r=-1.0, boot_sd=0.0,
                                                                               null_var_r=0.01)]), margin=0.10)
    assert g["p_equiv"].tolist() == [1.0, 1.0]
    assert not g["certified"].any()


def test_a_unit_interval_that_ends_at_zero_is_no_violation():
    g = add_row_verdicts(grid([dict(ci_low_unit=0.0, ci_high_unit=0.3), dict(tutor="b", ci_low_unit=-0.3,
                                                                             ci_high_unit=0.0)]))
    assert g["violation_unit"].tolist() == [False, False]


def test_flagging_a_zero_effect_needs_infinitely_many_pairs():
    from edufair_metrics.analysis.verdicts import n_for_flag

    # also where the null variance is 0 (every difference zero): inf, not 0/0
    assert n_for_flag(np.array([100.0, 100.0]), np.array([0.01, 0.0]), 0.0, 0.05).tolist() == [math.inf, math.inf]


def _interval_end_at_the_margin(side):
    """A row (r, boot_sd, n) whose 90% equivalence interval ends exactly at -M (side -1) or +M
    (side +1) in floating point, the se being the bootstrap one (computed as the verdicts do)."""
    n, boot_sd, margin = 200, 0.04, 0.10
    z = ndtri(1 - 0.05)
    se = np.float64(boot_sd) * np.sqrt(np.float64(n) / np.float64(n - 1))
    r = side * (margin - z * se)
    for _ in range(200):
        end = r + side * z * se
        if end == side * margin:
            return dict(r=float(r), boot_sd=boot_sd, n_pairs=n, null_var_r=1e-4)
        r = np.nextafter(r, np.inf if end < side * margin else -np.inf)
    raise AssertionError("no r found")


@pytest.mark.parametrize("side", [-1, 1])
def test_an_equivalence_interval_ending_at_the_margin_is_not_inside_it(side):
    row = _interval_end_at_the_margin(side)
    g = add_row_verdicts(grid([row]), margin=0.10)
    assert (g.loc[0, "eq_ci_high"] if side > 0 else g.loc[0, "eq_ci_low"]) == side * 0.10
    assert not g.loc[0, "certified"]
    # a hair inside: certified
    inside = dict(row, r=row["r"] - side * 1e-9)
    assert add_row_verdicts(grid([inside]), margin=0.10).loc[0, "certified"]
