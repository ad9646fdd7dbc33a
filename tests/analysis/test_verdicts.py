"""The verdicts (analysis.verdicts): the decision p below and above 50 pairs, the exact null
variance, the equivalence interval and certification, the unit-level FDR with rows inheriting, the
Bonferroni unit violation, the Friedman post-hoc marks, family certification, the MDE and the
unbiased effect size. Calibration checks are small and seeded."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from edufair_metrics.analysis import engine
from edufair_metrics.analysis.grid import contrast_grid, dimension_summary
from edufair_metrics.analysis.noise import adjust_p
from edufair_metrics.analysis.power import min_detectable_r
from edufair_metrics.analysis.verdicts import (
    VERDICTS,
    _bh_replaced,
    add_row_verdicts,
    mde_from_null_var,
    r2_unbiased,
    signed_root,
    unit_multiplicity,
    verdict_headline,
)
from edufair_metrics.errors import EduFairError
from tests.analysis.synthetic_scores import rate_frame


def _brute_force_p(d: np.ndarray) -> float:
    from scipy.stats import rankdata

    ranks = rankdata(np.abs(d))
    nz = d != 0
    w = ranks[nz] * np.sign(d[nz])
    obs = abs(w.sum())
    hits = sum(abs(np.dot(w, s)) >= obs - 1e-9 for s in itertools.product([-1, 1], repeat=int(nz.sum())))
    return hits / 2 ** int(nz.sum())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_exact_sign_flip_p_is_the_enumerated_permutation_p(seed):
    rng = np.random.default_rng(seed)
    d = engine.round_diffs(rng.integers(-2, 3, 14) / 3)
    res = engine.paired_rows([d], n_boot=50, seed=0, min_pairs=5)
    assert res.p_exact[0] == pytest.approx(_brute_force_p(d), abs=1e-12)


def test_exact_p_agrees_with_the_monte_carlo_flips_and_scipy_without_ties():
    from scipy.stats import wilcoxon

    rng = np.random.default_rng(3)
    d = engine.round_diffs(rng.normal(0.2, 1, 30))  # no ties, no zeros: scipy's exact branch
    res = engine.paired_rows([d], n_boot=20000, seed=1, min_pairs=5)
    assert res.p_exact[0] == pytest.approx(wilcoxon(d).pvalue, rel=1e-9)
    assert res.p_perm[0] == pytest.approx(res.p_exact[0], abs=0.01)
    big = engine.paired_rows([engine.round_diffs(rng.normal(0, 1, 60))], n_boot=20, seed=0, min_pairs=5)
    assert math.isnan(big.p_exact[0])  # 50 pairs and more: the normal approximation, p


def test_null_variance_is_exact_and_what_the_flips_estimate():
    rng = np.random.default_rng(4)
    d = engine.round_diffs(np.where(rng.random(200) < 0.5, 0, rng.integers(-3, 4, 200) / 3))
    res = engine.paired_rows([d], n_boot=4000, seed=2, min_pairs=5)
    from scipy.stats import rankdata

    ranks = rankdata(np.abs(d))[d != 0]
    assert res.null_var_r[0] == pytest.approx((ranks ** 2).sum() / ranks.sum() ** 2, rel=1e-12)
    flips = engine.flip_matrix(d.size, 4000, 2)
    sr = rankdata(np.abs(d)) * np.sign(d)
    r_flip = (sr @ flips) / np.abs(sr).sum()
    assert np.mean(r_flip ** 2) == pytest.approx(res.null_var_r[0], rel=0.08)


def test_unit_alpha_widens_only_the_unit_interval():
    rng = np.random.default_rng(5)
    rows = [engine.round_diffs(rng.integers(-2, 3, 80) / 2) for _ in range(3)]
    res = engine.paired_rows(rows, n_boot=300, seed=0, min_pairs=5, unit_alpha=[0.05, 0.025, 0.05])
    assert res.ci_low_unit[0] == res.ci_low[0] and res.ci_high_unit[2] == res.ci_high[2]
    assert res.ci_low_unit[1] <= res.ci_low[1] and res.ci_high_unit[1] >= res.ci_high[1]


@pytest.mark.parametrize("n,zs", [(60, 0.0), (150, 0.5), (500, 0.8)])
def test_closed_form_mde_matches_the_power_module(n, zs):
    n0 = int(round(zs * n))
    k = np.arange(n0 + 1, n + 1, dtype=float)
    v0 = (k * k).sum() / k.sum() ** 2  # untied non-zero ranks above the zeros: the power model's S / T²
    for alpha in (0.05, 0.001):
        assert mde_from_null_var(v0, alpha) == pytest.approx(min_detectable_r(n, zs, alpha=alpha), abs=2e-3)


def test_r2_unbiased_and_signed_root():
    assert r2_unbiased(0.3, 0.01) == pytest.approx((0.09 - 0.01) / 0.99)
    assert r2_unbiased(1.0, 1.0) == 0.0 and math.isnan(float(r2_unbiased(np.nan, 0.1)))
    assert signed_root(-0.04) == pytest.approx(-0.2) and signed_root(0.09) == pytest.approx(0.3)


def test_bh_replacement_gives_the_units_bh_q_and_is_monotone():
    rng = np.random.default_rng(6)
    p = rng.random(40) ** 3
    assert _bh_replaced(p, p) == pytest.approx(adjust_p(p, "bh"))
    x = np.sort(rng.random(200))
    q = _bh_replaced(p, np.maximum(x, p.min()))
    assert (np.diff(q) >= -1e-15).all()


def test_rows_inherit_their_units_flag():
    """A flagged row's unit is flagged; a flagged unit has a flagged row (BH and Holm)."""
    rng = np.random.default_rng(7)
    n_units = 60
    row_unit = np.repeat(np.arange(n_units), rng.integers(1, 4, n_units))
    row_x = np.minimum(1, rng.random(row_unit.size) ** 4)
    fam = np.where(np.arange(n_units) < 30, "a", "b").astype(object)
    for method in ("bh", "holm"):
        unit_p, q_unit, q_row, m = unit_multiplicity(row_x, row_unit, fam, method)
        flagged_unit = q_unit < 0.05
        flagged_row = q_row < 0.05
        assert (flagged_unit[row_unit[flagged_row]]).all()
        for u in np.flatnonzero(flagged_unit):
            assert flagged_row[row_unit == u].any()
        assert (m == 30).all()
        adj = adjust_p(unit_p[fam == "a"], method)
        assert q_unit[fam == "a"] == pytest.approx(adj)


def _rows(r, n, boot_sd, v0, p, **extra):
    k = len(r)
    g = pd.DataFrame({"n_pairs": n, "r": r, "p": p, "p_exact": np.where(np.asarray(n) < 50, p, np.nan),
                      "boot_sd": boot_sd, "null_var_r": v0, "ci_low": -1.0, "ci_high": 1.0, "ci_low_unit": -1.0,
                      "ci_high_unit": 1.0, "sufficient": True, "kind": "binary", "posthoc": False, "violation": False,
                      "tutor": [f"t{i}" for i in range(k)], "domain": "d", "condition": "c", "contrast": "x",
                      "dimension": "x", "metric": "m", "metric_kind": "conversation", "headline": True})
    for c, v in extra.items():
        g[c] = v
    return g


def test_certify_needs_the_whole_90_percent_interval_inside_the_margin():
    g = _rows(r=[0.01, 0.01, 0.08, 0.01], n=[3000, 3000, 3000, 100], boot_sd=[0.02, 0.02, 0.02, 0.11],
              v0=[0.02 ** 2] * 3 + [0.11 ** 2], p=[0.6, 0.6, 0.001, 0.9])
    add_row_verdicts(g, margin=0.10)
    assert list(g["certified"]) == [True, True, False, False]  # 0.08 + 1.645 · 0.02 > 0.10; n = 100: too wide
    assert g.loc[0, "eq_ci_high"] == pytest.approx(0.01 + 1.6448536 * 0.02 * math.sqrt(3000 / 2999), rel=1e-6)
    assert list(g["verdict"]) == ["certify", "certify", "flag", "inconclusive"]
    assert g.loc[0, "p_equiv"] < 0.05 < g.loc[3, "p_equiv"]
    # the conservative se: the model se wins when the bootstrap is narrower
    h = _rows(r=[0.0], n=[3000], boot_sd=[0.001], v0=[0.05 ** 2], p=[1.0])
    add_row_verdicts(h, margin=0.10)
    assert h["certified"].iloc[0] and h["eq_ci_high"].iloc[0] == pytest.approx(1.6448536 * 0.05, rel=1e-6)
    with pytest.raises(EduFairError, match="margin"):
        add_row_verdicts(_rows(r=[0.0], n=[100], boot_sd=[0.1], v0=[0.01], p=[1.0]), margin=0)


def test_below_50_pairs_the_decision_uses_the_exact_p():
    g = _rows(r=[0.5, 0.5], n=[40, 60], boot_sd=[0.1, 0.1], v0=[0.02, 0.02], p=[0.001, 0.001])
    g["p_exact"] = [0.2, np.nan]
    add_row_verdicts(g, margin=0.1)
    assert list(g["p_decide"]) == [0.2, 0.001]
    assert list(g["verdict"]) == ["inconclusive", "flag"]


def test_inconclusive_rows_say_how_many_questions_would_decide():
    g = _rows(r=[0.25, 0.0], n=[150, 150], boot_sd=[0.09, 0.09], v0=[0.085 ** 2] * 2, p=[0.01, 0.99])
    add_row_verdicts(g, margin=0.10)
    assert (g["verdict"] == "inconclusive").all() or g.loc[0, "verdict"] == "flag"
    rho = math.sqrt(r2_unbiased(0.25, 0.085 ** 2))
    from scipy.special import ndtri

    want = 150 * 0.085 ** 2 * (ndtri(1 - 0.05 / 2) + ndtri(0.8) * math.sqrt(1 - rho * rho)) ** 2 / rho ** 2
    assert g.loc[0, "n_flag"] == math.ceil(want) and math.isinf(float("inf")) and math.isnan(g.loc[0, "n_certify"])
    assert g.loc[1, "n_certify"] > 150 and math.isnan(g.loc[1, "n_flag"])
    # n_decide is conservative over the row's 50% interval of ρ, not the plug-in at ρ̂ = 0
    assert g.loc[1, "n_decide"] > g.loc[1, "n_certify"]
    assert g.loc[1, "more_questions"] == g.loc[1, "n_decide"] - 150
    assert g.loc[0, "mde_r"] == pytest.approx(mde_from_null_var(0.085 ** 2, 0.05))


def test_friedman_pairs_violate_and_decide_by_their_bonferroni_p():
    df = rate_frame({"t": {"low_income": 0.12}}, n=60, seed=11)
    grid = contrast_grid(df, n_boot=300, seed=1)
    ml = grid[grid["kind"] == "multilevel"]
    assert len(ml) and (ml["violation"] == (ml["posthoc"] & (ml["p_adj"] < 0.05))).all()
    expect = np.where(ml["posthoc"], np.minimum(1, 3 * np.where(ml["n_pairs"] < 50, ml["p_exact"], ml["p"])), 1.0)
    assert ml["p_decide"].to_numpy() == pytest.approx(expect)


def _null_frames(seeds, n):
    return [rate_frame({"t": {}}, n=n, seed=s, metrics=("actionability", "step_scaffolded")) for s in seeds]


@pytest.mark.slow
def test_an_implicit_unit_falsely_violates_at_about_5_percent_not_10():
    units = []
    for df in _null_frames(range(40), 80):
        g = contrast_grid(df[df["condition"] == "implicit"], n_boot=300, seed=0)
        u = dimension_summary(g)
        units.append(u.assign(old=g.groupby(["contrast", "metric"], sort=False)["violation"].any().to_numpy()))
    u = pd.concat(units)
    assert (u["kind"] == "pairs").all() and len(u) == 40 * 3 * 2
    assert 0.01 <= u["violation"].mean() <= 0.085  # nominal 5%: the Bonferroni level per pair
    assert u["old"].mean() > u["violation"].mean()  # either pair at 95%: about twice as often
    assert (u["p_unit"] < 0.05).mean() <= 0.085


def test_unit_verdicts_follow_their_rows():
    df = rate_frame({"t": {"jessica": 0.25, "ji_yoon": 0.25}}, n=120, seed=12, metrics=("actionability",))
    grid = contrast_grid(df, n_boot=300, seed=2)
    units = dimension_summary(grid)
    keys = ["tutor", "domain", "condition", "contrast", "metric"]
    by = grid.groupby(keys)
    for u in units.itertuples(index=False):
        rows = by.get_group(tuple(getattr(u, k) for k in keys))
        if u.verdict == "flag":
            assert (rows["verdict"] == "flag").any()
        if (rows["verdict"] == "flag").any():
            assert u.verdict == "flag"
        if u.verdict == "certify":
            assert (rows["verdict"] == "certify").all()
        assert u.q_unit == pytest.approx(rows["q_flag"].min())
        assert u.unbiased_abs_r == pytest.approx(float(signed_root(rows["r2_unbiased"].mean())))
    assert set(units["verdict"]) <= set(VERDICTS)
    assert (units.loc[(units["condition"] == "implicit") & (units["contrast"] == "Gender"), "verdict"] == "flag").all()


def test_family_is_certified_only_when_every_unit_is():
    units = pd.DataFrame({"tutor": ["a", "a", "b", "b"], "metric_kind": "pedagogical", "headline": True,
                          "verdict": ["certify", "certify", "certify", "inconclusive"],
                          "r2_unbiased": [0.0, 0.001, 0.0, 0.002], "n_pairs_min": 500, "mde_r": 0.1,
                          "more_questions": [0, 0, 0, 300]})
    v = verdict_headline(units).set_index("tutor")
    assert v.loc["a", "family_certified"] and not v.loc["b", "family_certified"]
    assert (v.loc["b", "certify"], v.loc["b", "inconclusive"]) == (1, 1)
    assert v.loc["b", "more_questions_median"] == 300


@pytest.mark.slow
def test_unbiased_abs_r_does_not_shrink_with_fewer_questions():
    """At a planted bias the excess |r| reads lower on fewer questions; the unbiased |r| does not
    (means over seeded replicates, tolerant bounds); without bias both are ≈ 0."""
    means = {}
    for n in (60, 400):
        vals = []
        for s in range(12):
            g = contrast_grid(rate_frame({"t": {"female": 0.08}}, n=n, seed=100 + s, metrics=("actionability",)),
                              n_boot=100, seed=0)
            vals.append(g[(g["contrast"] == "Gender")][["excess_abs_r", "r2_unbiased"]].iloc[0])
        v = pd.DataFrame(vals)
        means[n] = (v["excess_abs_r"].mean(), float(signed_root(v["r2_unbiased"].mean())))
    (ex60, ub60), (ex400, ub400) = means[60], means[400]
    assert ex400 - ex60 > 0.03  # excess: biased low at small n
    assert abs(ub400 - ub60) < 0.6 * (ex400 - ex60) + 0.02
    null = [contrast_grid(df, n_boot=50, seed=0) for df in _null_frames(range(200, 208), 150)]
    r2 = pd.concat(null)
    r2 = r2[r2["sufficient"]]["r2_unbiased"].mean()
    assert abs(r2) < 0.004


def test_a_row_without_non_zero_differences_is_never_certified():
    """one level gets a behaviour in 2% of its dialogues, the other never (true
    r = +1); at 20 pairs most rows have only zero differences, whose bootstrap and null variance are
    0. No evidence is no certificate, at any n and any margin below 1."""
    rng = np.random.default_rng(31)
    rows = [engine.round_diffs((rng.random(n) < 0.02).astype(float)) for n in [20] * 40 + [3000]]
    rows[-1] = np.zeros(3000)
    res = engine.paired_rows(rows, n_boot=200, seed=0, min_pairs=15)
    g = _rows(r=res.r, n=res.n_pairs, boot_sd=res.boot_sd, v0=res.null_var_r, p=res.p, n_zero=res.n_zero)
    add_row_verdicts(g, margin=0.5)
    empty = (g["n_zero"] == g["n_pairs"]).to_numpy()
    assert empty.sum() >= 10
    assert not g.loc[empty, "certified"].any() and (g.loc[empty, "verdict"] == "inconclusive").all()
    assert (g.loc[empty, "eq_ci_high"] - g.loc[empty, "eq_ci_low"] >= 2 * 1.64).all()  # se of r: 1, no information
    assert g.loc[empty, "n_certify"].isna().all() and g.loc[empty, "n_decide"].isna().all()
    assert not g["certified"].any()  # one non-zero difference: r = ±1, far outside any margin


def test_the_equivalence_se_is_at_least_that_of_the_non_zero_differences():
    """V0 >= 1/m for m non-zero differences (Cauchy–Schwarz on their ranks), so a row with few
    non-zero differences cannot be certified: 1.645/√m must be below M."""
    from edufair_metrics.analysis.verdicts import equivalence_se

    for m in (1, 5, 50, 300):
        d = np.r_[np.zeros(1000 - m), np.tile([1.0, -1.0], m)[:m]]
        res = engine.paired_rows([engine.round_diffs(d)], n_boot=100, seed=0, min_pairs=15)
        se = equivalence_se(res.r, res.n_pairs, res.boot_sd, res.null_var_r)
        assert se[0] >= math.sqrt((1 - res.r[0] ** 2) / m) - 1e-12


def test_n_certify_is_the_exact_tost_solution_with_both_tails_at_zero():
    """at the printed n the TOST certifies with 80% probability when the estimate
    is centred on ρ; at ρ = 0 both tails count (M/se = z₀.₉₅ + z₀.₉, not + z₀.₈)."""
    from scipy.special import ndtri

    from edufair_metrics.analysis.verdicts import n_for_certify, tost_power

    n, se, margin = 150, 0.094, 0.10
    rho = np.array([0.0, 0.02, 0.05, 0.08])
    need = n_for_certify(n, se, rho, margin)
    se_at = se * np.sqrt(n / need)
    assert tost_power(se_at, rho, margin) == pytest.approx(0.8, abs=1e-6)
    assert margin / se_at[0] == pytest.approx(ndtri(0.95) + ndtri(0.9), rel=1e-6)
    # Monte Carlo: r̂ ~ N(ρ, se'²) certified (90% interval inside ±M) 80% of the time
    rng = np.random.default_rng(0)
    for k in range(rho.size):
        r_hat = rng.normal(rho[k], se_at[k], 200_000)
        cert = (r_hat - 1.6448536 * se_at[k] > -margin) & (r_hat + 1.6448536 * se_at[k] < margin)
        assert cert.mean() == pytest.approx(0.8, abs=0.005)
    assert math.isinf(n_for_certify(n, se, 0.1, margin)) and math.isnan(n_for_certify(n, np.nan, 0.0, margin))


def test_the_turn_confirmation_is_corrected_over_the_flagged_rows_of_a_family():
    """a flagged row is confirmed per turn when its turn p *adjusted over the
    flagged, tested rows of its family* is below 0.05, not its raw p."""
    k = 20
    g = _rows(r=[0.6] * k, n=[300] * k, boot_sd=[0.05] * k, v0=[0.004] * k, p=[1e-6] * k,
              metric_kind="pedagogical", turn_rd=0.1, turn_p=np.r_[[0.001], np.linspace(0.03, 0.2, k - 1)])
    g["tutor"] = "t"
    g["metric"] = [f"m{i}" for i in range(k)]
    add_row_verdicts(g, margin=0.1)
    assert g["flagged"].all()
    assert g["turn_q"].to_numpy() == pytest.approx(adjust_p(g["turn_p"].to_numpy(), "bh"))
    assert g.loc[0, "verdict"] == "flag"  # q = 0.02
    # raw p below 0.05 but, adjusted over the 20 flagged rows, not: unconfirmed
    raw_only = (g["turn_p"] < 0.05) & (g["turn_q"] >= 0.05)
    assert raw_only.sum() >= 3 and (g.loc[raw_only, "verdict"] == "unconfirmed").all()
    assert (g.loc[g["turn_q"] >= 0.05, "verdict"] == "unconfirmed").all()


def test_a_headline_statement_a_user_can_reach():
    """beside the intersection–union, the root-mean-square |r| of the headline
    is certified below M when the upper bound of the mean r² is below M², and the headline says
    how many pairs family certification would need (Berger: M/se ≈ 4.9 for ~180 units)."""
    from scipy.special import ndtri

    from edufair_metrics.analysis.verdicts import family_certify_factor

    k = 40
    units = pd.DataFrame({"tutor": ["fair"] * k + ["biased"] * k, "metric_kind": "pedagogical", "headline": True,
                          "verdict": "inconclusive", "domain": "d", "condition": "explicit",
                          "contrast": [f"c{i % 8}" for i in range(2 * k)],
                          "r2_unbiased": [0.0] * k + [0.04] * k, "r2_var": [2 * 0.009 ** 2] * k + [0.0015] * k,
                          "n_pairs_min": 150, "mde_r": 0.25, "more_questions": 900,
                          "n_certify": [1100.0] * k + [np.nan] * k})
    v = verdict_headline(units, margin=0.10).set_index("tutor")
    assert v.loc["fair", "headline_certified"] and not v.loc["fair", "family_certified"]
    assert not v.loc["biased", "headline_certified"]  # RMS 0.2 > 0.1
    # conservative se: the 5 units of a contrast as perfectly correlated
    sd = math.sqrt(2 * 0.009 ** 2)
    assert v.loc["fair", "ms_upper"] == pytest.approx(1.6448536 * math.sqrt(8 * (5 * sd) ** 2) / k, rel=1e-6)
    assert v.loc["fair", "n_family_certify"] == math.ceil(1100 * family_certify_factor(k))
    assert math.isinf(v.loc["biased", "n_family_certify"])
    z = ndtri(0.95)
    assert math.sqrt(family_certify_factor(180)) * (z + ndtri(0.9)) == pytest.approx(4.87, abs=0.02)


def test_n_decide_decides_with_80_percent_at_every_rho_of_the_rows_50_percent_interval():
    """The plug-in of ρ̂ over-promised: at 150 pairs the se of r is as large as the margin, and the
    n that decides at ρ = 0 decides ~45% at ρ = 0.05. n_decide is the largest min(n_flag,
    n_certify) over r ± z₀.₇₅·se: at that n a row is flagged or certified with >= 80% at every ρ
    of the interval, and the bound is attained (it is the max, not more)."""
    from scipy.special import ndtr, ndtri

    from edufair_metrics.analysis.verdicts import (
        n_decide_over_interval,
        n_for_certify,
        n_for_flag,
        tost_power,
    )

    n, margin = 150, 0.10
    for r, v0 in ((0.0, 0.0107), (0.04, 0.0107), (-0.07, 0.009), (0.3, 0.0107), (0.12, 0.02)):
        se = math.sqrt(v0 * (1 - r * r))
        need = float(n_decide_over_interval(n, v0, se, r, 0.05, margin))
        half = float(ndtri(0.75)) * se
        rhos = np.abs(np.linspace(r - half, r + half, 401))
        # at `need` pairs: decided (flag two-sided at 0.05, or TOST) with >= 80% for every ρ there
        s = np.sqrt(v0 * n / need * (1 - rhos ** 2))
        p_flag = ndtr(rhos / s - 1.959964) + ndtr(-rhos / s - 1.959964)
        p_cert = tost_power(se * math.sqrt(n / need), rhos, margin)
        assert (np.minimum(p_flag + p_cert, 1) >= 0.80 - 0.01).all(), r
        brute = np.max(np.fmin(n_for_flag(n, v0, rhos, 0.05), n_for_certify(n, se, rhos, margin)))
        assert brute * (1 - 1e-9) <= need <= brute * 1.01, r  # the grid can only miss the peak
    # a row at ρ̂ = 0: more than the TOST at ρ = 0 alone (which a true 0.05 would fail)
    se0 = math.sqrt(0.0107)
    assert float(n_decide_over_interval(n, 0.0107, se0, 0.0, 0.05, margin)) > 2 * float(
        n_for_certify(n, se0, 0.0, margin))
