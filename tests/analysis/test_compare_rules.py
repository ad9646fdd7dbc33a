"""The CI gate's rules (``analysis.compare``) stated as rules: a unit only the candidate has is no
baseline violation and its flag is new; the fail and pass boundaries are strict (``gate_ci_low >
M`` fails, ``= M`` does not; ``gate_ci_high < M`` passes, ``= M`` does not); the precision
weights and the weighted bootstrap mean by hand (a resample where a unit has no value leaves that
unit out, it is not averaged in with weight 1); the new-violation policies."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import ndtri

from edufair_metrics.analysis.compare import (
    _r2_variance,
    _unit_variance,
    _weighted_reps,
    compare_frames,
)
from edufair_metrics.analysis.verdicts import signed_root
from tests.analysis.synthetic_scores import rate_frame


def explicit(tutor, seed, shifts, metrics, n=50):
    df = rate_frame({tutor: shifts}, n=n, seed=seed, metrics=metrics)
    return df[df["condition"] == "explicit"].reset_index(drop=True)


# ---- the weights and the weighted bootstrap by hand ------------------------------------------------

def test_the_null_variance_of_a_pairs_r2_unbiased():
    assert _r2_variance(0.02, 100) == pytest.approx((0.02 / 0.98) ** 2)
    # V0 is floored at the untied 4 / (3n): all-zero differences (V0 = 0) are not infinitely precise
    assert _r2_variance(0.0, 100) == pytest.approx((1 / 75 / (1 - 1 / 75)) ** 2)
    assert _r2_variance(0.01, 100) == _r2_variance(0.0, 100)
    assert _r2_variance(1.0, 100) == 1e18  # a single non-zero difference: no information
    # a unit averages its k pairs: Σ variances / k²
    assert _unit_variance([0.04, 0.02]) == pytest.approx(0.06 / 4)
    assert _unit_variance([0.03]) == pytest.approx(0.03)


def test_the_weighted_mean_per_resample_leaves_a_missing_value_out():
    reps = [np.array([1.0, np.nan, 2.0, np.nan]), np.array([3.0, 3.0, np.nan, np.nan])]
    w = np.array([1.0, 3.0])
    got = _weighted_reps(reps, w)
    assert got[:3] == pytest.approx([(1 * 1 + 3 * 3) / 4, 3.0, 2.0])
    assert math.isnan(got[3])


@pytest.fixture(scope="module")
def gate():
    base = explicit("b", 1, {}, ("actionability", "step_scaffolded"), n=40)
    cand = explicit("c", 2, {"female": 0.2}, ("actionability", "step_scaffolded"), n=40)
    kw = dict(n_boot=60, seed=3, new_violations="ignore")
    return base, cand, kw, compare_frames(base, cand, **kw)


def test_the_gate_headline_is_a_weighted_mean_of_the_units(gate):
    _, _, _, res = gate
    h, u = res.headline, res.units
    used = u[u["headline"] & (u["metric_kind"] == "pedagogical") & u["gate_delta"].notna()]
    assert h["gate_units"] == len(used) > 1
    for side in ("baseline", "candidate"):
        r2 = used[f"r2_unbiased_{side}"]
        m = h[f"gate_ms_{side}"]
        assert r2.min() - 1e-12 <= m <= r2.max() + 1e-12  # a weighted mean lies among its values
        assert h[f"gate_{side}"] == pytest.approx(float(signed_root(m)))  # the RMS bias, for reading
    # the change is measured on the r² scale (no singularity at zero), not of the signed roots
    assert h["gate_delta"] == pytest.approx(h["gate_ms_candidate"] - h["gate_ms_baseline"])
    assert h["gate_ci_low"] <= h["gate_delta"] <= h["gate_ci_high"]
    # the threshold is a rise of the RMS bias by M from the baseline's lower 95% bound (below its estimate)
    from edufair_metrics.analysis.compare import gate_threshold

    assert h["gate_ms_baseline_low"] < h["gate_ms_baseline"]
    assert h["gate_threshold"] == pytest.approx(gate_threshold(h["gate_ms_baseline_low"], 0.05))
    row = used.iloc[0]
    assert row["gate_delta"] == pytest.approx(float(row["r2_unbiased_candidate"] - row["r2_unbiased_baseline"]))


def test_the_threshold_is_a_rise_of_the_rms_bias_by_the_margin():
    from edufair_metrics.analysis.compare import gate_threshold

    # (√ms + M)² − ms = M² + 2M√ms; a negative lower bound counts as a fair baseline (M²)
    assert gate_threshold(0.04, 0.05) == pytest.approx((0.2 + 0.05) ** 2 - 0.04)
    assert gate_threshold(-0.01, 0.05) == pytest.approx(0.0025)
    assert gate_threshold(0.0, 0.1) == pytest.approx(0.01)


# ---- the boundaries ---------------------------------------------------------------------------------

def _margin_for(threshold: float, ms_low: float) -> float:
    """The margin M whose gate threshold M² + 2M√L equals ``threshold``."""
    b = math.sqrt(max(ms_low, 0.0))
    return -b + math.sqrt(b * b + threshold)


def test_the_fail_boundary_sits_at_the_lower_bound(gate):
    base, cand, kw, res = gate
    h = res.headline
    low = h["gate_ci_low"]
    assert low > 0
    m_star = _margin_for(low, h["gate_ms_baseline_low"])
    above = compare_frames(base, cand, **kw, max_increase=m_star * 1.001)
    assert above.headline["gate_ci_low"] == low  # the bootstrap does not depend on the margin
    assert above.headline["gate_threshold"] > low and above.status != "fail"
    assert not any("more than the margin" in r for r in above.reasons)
    below = compare_frames(base, cand, **kw, max_increase=m_star * 0.999)
    assert below.headline["gate_threshold"] < low
    assert below.status == "fail" and any("more than the margin" in r for r in below.reasons)


def test_the_pass_boundary_sits_at_the_upper_bound(gate):
    base, cand, kw, res = gate
    h = res.headline
    high = h["gate_ci_high"]
    m_star = _margin_for(high, h["gate_ms_baseline_low"])
    below = compare_frames(base, cand, **kw, max_increase=m_star * 0.999)
    assert below.status == "inconclusive" and not below.failed
    above = compare_frames(base, cand, **kw, max_increase=m_star * 1.001)
    assert above.status == "pass" and not above.failed


# ---- a unit only the candidate has -----------------------------------------------------------

@pytest.fixture(scope="module")
def extra_metric():
    base = explicit("b", 1, {}, ("actionability",))
    cand = explicit("c", 2, {"female": 0.35}, ("actionability", "step_scaffolded"))
    return base, cand


def test_a_unit_only_the_candidate_has_is_no_baseline_violation_and_its_flag_is_new(extra_metric):
    base, cand = extra_metric
    res = compare_frames(base, cand, n_boot=60, seed=0, new_violations="any")
    u = res.units.set_index(["contrast", "metric"])
    only = u.xs("step_scaffolded", level="metric")
    assert not only["violation_baseline"].any() and not only["violation_fdr_baseline"].any()
    assert (only["verdict_baseline"] == "insufficient").all()
    assert only["gate_delta"].isna().all()  # no change can be measured without the baseline
    gender = only.loc["Gender"]
    assert gender["violation_candidate"] and gender["new_violation"]
    assert gender["verdict_candidate"] == "flag" and gender["new_flag"] and gender["gate_violation"]
    # the baseline's counts are its own units' only
    shared = u.xs("actionability", level="metric")
    assert res.headline["violations_baseline"] == shared.loc[shared["headline"], "violation_baseline"].sum()
    assert res.status == "fail"
    assert any("newly flagged" in r for r in res.reasons)
    # the same runs with the new-violation rule off: not for new flags; significant: needs the unit's change
    off = compare_frames(base, cand, n_boot=60, seed=0, new_violations="ignore", max_increase=1.0)
    assert not off.units["gate_violation"].any() and off.status == "pass"
    sig = compare_frames(base, cand, n_boot=60, seed=0, new_violations="significant", max_increase=1.0)
    gv = sig.units.set_index(["contrast", "metric"])["gate_violation"]
    assert not gv.loc[("Gender", "step_scaffolded")]  # no baseline: its change is not significant


def test_the_documented_defaults():
    import inspect

    from edufair_metrics.analysis.verdicts import DEFAULT_MARGIN

    p = inspect.signature(compare_frames).parameters
    assert (p["n_boot"].default, p["seed"].default, p["min_pairs"].default) == (1000, 0, 15)
    assert (p["max_increase"].default, p["new_violations"].default) == (0.05, "significant")
    assert p["equivalence_margin"].default == DEFAULT_MARGIN == 0.10


def test_the_headline_changes_are_differences_and_inconclusive_says_how_many_questions(gate):
    base, cand, kw, res = gate
    h = res.headline
    assert h["delta"] == pytest.approx(h["candidate"] - h["baseline"])
    assert h["delta_excess"] == pytest.approx(h["excess_candidate"] - h["excess_baseline"])
    assert h["delta_ci_low"] < h["delta_ci_high"]
    # the paper's |r| change and its interval: the mean over the same units
    assert h["delta_excess_ci_high"] - h["delta_excess_ci_low"] == pytest.approx(h["delta_ci_high"] - h["delta_ci_low"])
    m_star = _margin_for(h["gate_ci_high"], h["gate_ms_baseline_low"])
    at = compare_frames(base, cand, **kw, max_increase=m_star * 0.999)
    assert at.status == "inconclusive"
    from scipy.special import ndtr, ndtri

    from edufair_metrics.analysis.compare import questions_factor

    z = float(ndtri(0.95))
    a = at.headline
    va, vb = a["questions_var_bias"], a["questions_var_null"]
    assert a["gate_se_null"] == pytest.approx(math.sqrt(vb))
    # Δ = 0: at the smallest threshold any rerun faces, M², not this run's (noisier) threshold
    m2 = (m_star * 0.999) ** 2
    assert a["gate_threshold"] >= m2 * (1 - 1e-12)
    # Δ = 0 reads the bias part of an unchanged rerun (each unit's ρ pooled over both runs)
    vu = a["questions_var_bias_unchanged"]
    f0 = questions_factor(0.0, m2, vu, vb, z)
    assert a["questions_factor"] == pytest.approx(f0)
    # at that factor a rerun of an unchanged tutor decides with 80% probability (both outcomes)
    se_f = math.sqrt(vu / f0 + vb / f0 ** 2)
    assert float(ndtr(m2 / se_f - z) + ndtr(-m2 / se_f - z)) == pytest.approx(0.80, abs=1e-6)
    fe = questions_factor(a["gate_delta"], a["gate_threshold"], va, vb, z)
    assert a["questions_factor_at_estimate"] == pytest.approx(fe)
    assert at.questions_needed == {d: math.ceil(n * max(f0, 1.0)) for d, n in at.n_questions.items()}


# ---- the stable variance parts (planning, the baseline's bound, the gate's floor) ------------------

def _planning_entry(rng, signed, groups, r2u, v0=0.02):
    return {"multi": False, "sb": [], "sc": [s for s in signed], "v0b": [], "v0c": [v0] * len(signed),
            "pb": [], "pc": list(r2u), "kb": [], "kc": list(groups), "rb": [], "rc": [float(s.mean()) for s in signed]}


def _bias_plugin(q, c, rho, same):
    """The plug-in 4 Σ_same q_i q_j C_ij ρρ_ij and its sd at no bias, 4·√(2·tr(GCGC)) with
    G = qqᵀ ∘ C on the pairs of the same dialogues."""
    g = np.where(same, np.outer(q, q) * c, 0.0)
    return 4 * q @ np.where(same, c * rho, 0.0) @ q, 4 * math.sqrt(2 * np.trace(g @ c @ g @ c))


def _bias_part(q, c, rho, same):
    """A by hand: the plug-in shrunk as a·max(0, 1 − (z₀.₉₅·sd₀/a)²), 0 where a ≤ z₀.₉₅·sd₀."""
    a, sd0 = _bias_plugin(q, c, rho, same)
    return a * max(0.0, 1 - (float(ndtri(0.95)) * sd0 / a) ** 2) if a > 0 else 0.0


def test_the_planning_variance_is_the_squared_normal_variance_and_the_bias_term_is_bounded_as_a_sum():
    """b = 2 qᵀ(C∘C)q from the bootstrap covariance; a = 4 Σ over pairs of the same dialogues of
    q_i q_j C_ij ρρ_ij with ρ² ≈ r2u (bounded at 0 as a sum, not per pair: at no bias a per-pair
    bound reads noise as bias)."""
    from edufair_metrics.analysis.compare import _planning_parts

    rng = np.random.default_rng(5)
    cov = np.array([[0.010, 0.006, 0.0], [0.006, 0.010, 0.0], [0.0, 0.0, 0.008]])
    draws = rng.multivariate_normal([0.0, 0.0, 0.0], cov, size=4000).T
    entry = _planning_entry(rng, list(draws), [("d", "c", "x", 0), ("d", "c", "x", 0), ("d", "c", "y", 0)],
                            r2u=[0.004, -0.006, -0.001])
    a, b = _planning_parts({"u": 1.0}, {"u": entry}, {}, False, ("c",))
    c = np.cov(np.vstack(list(draws)))
    q = np.full(3, 1 / 3 / (1 - 0.02))
    assert b == pytest.approx(2 * q @ (c * c) @ q)
    # the r2u sum is negative: no bias part (a per-pair bound at 0 would give 4 q² C 0.004 > 0)
    assert a == 0.0
    entry = _planning_entry(rng, list(draws), [("d", "c", "x", 0), ("d", "c", "x", 0), ("d", "c", "y", 0)],
                            r2u=[0.04, 0.03, 0.0])
    a, _ = _planning_parts({"u": 1.0}, {"u": entry}, {}, False, ("c",))
    pt = np.array([d.mean() for d in draws])
    rho = np.outer(pt, pt) - c
    np.fill_diagonal(rho, [0.04, 0.03, 0.0])
    same = np.array([[1, 1, 0], [1, 1, 0], [0, 0, 1]], bool)
    assert a == pytest.approx(_bias_part(q, c, rho, same))
    assert a > 0


def test_the_no_bias_part_leaves_out_the_covariance_between_domains():
    """The domains are resampled independently (one index matrix each), so the covariance of two
    pairs of different domains is 0 by design; b = 2 qᵀ(C∘C)q sums the same-domain blocks only.
    Here the second domain's resampled r repeat the first's (a bootstrap covariance between them
    as large as within): it must not enter b (the full C∘C would give twice as much)."""
    from edufair_metrics.analysis.compare import _planning_parts

    rng = np.random.default_rng(11)
    cov = np.array([[0.010, 0.006], [0.006, 0.010]])
    draws = list(rng.multivariate_normal([0.0, 0.0], cov, size=3000).T)
    groups = [("d1", "c", "x", 0), ("d1", "c", "x", 0), ("d2", "c", "x", 0), ("d2", "c", "x", 0)]
    entry = _planning_entry(rng, draws + draws, groups, r2u=[0.0] * 4)
    _, b = _planning_parts({"u": 1.0}, {"u": entry}, {}, False, ("c",))
    c = np.cov(np.vstack(draws))
    q = np.full(2, 1 / 4 / (1 - 0.02))
    within = 2 * q @ (c * c) @ q
    assert b == pytest.approx(2 * within, rel=1e-9)  # the two domains' own blocks
    c_all = np.cov(np.vstack(draws + draws))
    assert 2 * np.full(4, q[0]) @ (c_all * c_all) @ np.full(4, q[0]) == pytest.approx(4 * within, rel=1e-9)


def test_the_bias_part_counts_only_what_exceeds_its_own_noise_at_no_bias():
    """At no bias the plug-in of A is noise with mean 0: many independent pairs of pure noise
    whose r2_unbiased came out positive (as in a fair rerun with a few pairs of large V0) give a
    positive plug-in, below z₀.₉₅ times its null sd: A is 0, the plan reads B alone (the plug-in
    bounded at 0 alone read that noise as bias and, extrapolated as 1/n, doubled questions_needed).
    A real bias (every pair's ρ² = 0.04, far beyond the noise) still counts."""
    from edufair_metrics.analysis.compare import _planning_parts

    rng = np.random.default_rng(3)
    k = 40
    draws = list(rng.normal(0.0, 0.1, (k, 2000)))
    groups = [("d", "c", "x", i) for i in range(k)]
    v0 = 0.01
    noise = [0.012 if i % 2 else -0.010 for i in range(k)]  # sum > 0: a positive plug-in, ~0.5 null sd
    a, b = _planning_parts({"u": 1.0}, {"u": _planning_entry(rng, draws, groups, noise, v0=v0)}, {}, False, ("c",))
    c = np.cov(np.vstack(draws))
    q = np.full(k, 1 / k / (1 - v0))
    same = np.eye(k, dtype=bool)
    assert 4 * q @ np.where(same, c * np.diag(noise), 0.0) @ q > 0  # the old A
    assert a == 0.0 and b > 0
    biased = [0.04] * k
    rho = np.outer([d.mean() for d in draws], [d.mean() for d in draws]) - c
    np.fill_diagonal(rho, biased)
    a, _ = _planning_parts({"u": 1.0}, {"u": _planning_entry(rng, draws, groups, biased, v0=v0)}, {}, False, ("c",))
    assert a == pytest.approx(_bias_part(q, c, rho, same), rel=1e-9) and a > 0.5 * 4 * q @ (c * rho * same) @ q


def test_a_clear_bias_part_loses_only_the_vanishing_fraction_of_its_noise():
    """Beyond the noise of no bias, A is the plug-in shrunk by (z₀.₉₅·sd₀/a)², not less the fixed
    z₀.₉₅·sd₀: the subtraction took ≈ 20% of an unchanged biased pair's A at 150 questions per
    domain and amplified its relative noise by 1/(1 − that fraction) (4 of 40 reruns' plans outside
    ±30% of their median). Its zero set is the subtraction's: 0 wherever a ≤ z₀.₉₅·sd₀."""
    from edufair_metrics.analysis.compare import _bias_beyond_noise, _planning_parts, _z_gate

    Z_GATE = _z_gate()
    rng = np.random.default_rng(3)
    k = 40
    draws = list(rng.normal(0.0, 0.1, (k, 2000)))
    groups = [("d", "c", "x", i) for i in range(k)]
    v0 = 0.01
    c = np.cov(np.vstack(draws))
    q = np.full(k, 1 / k / (1 - v0))
    same = np.eye(k, dtype=bool)
    rho = np.outer([d.mean() for d in draws], [d.mean() for d in draws]) - c
    np.fill_diagonal(rho, [0.04] * k)
    raw, sd0 = _bias_plugin(q, c, rho, same)
    x = Z_GATE * sd0 / raw
    assert 0.05 < x < 0.5  # a clear bias, the noise term not negligible
    a, _ = _planning_parts({"u": 1.0}, {"u": _planning_entry(rng, draws, groups, [0.04] * k, v0=v0)}, {}, False,
                           ("c",))
    assert a == pytest.approx(raw * (1 - x * x), rel=1e-9)
    assert a > raw - Z_GATE * sd0 + 0.5 * x * (1 - x) * raw  # the subtraction took x·raw
    # the same zero set as the subtraction, continuous there, and nothing from a non-positive plug-in
    for s0 in (0.0, 0.5, 1.0):
        assert _bias_beyond_noise(-1e-3, s0) == 0.0
    assert _bias_beyond_noise(Z_GATE * 1.0, 1.0) == 0.0 and _bias_beyond_noise(Z_GATE * 0.999, 1.0) == 0.0
    assert 0 < _bias_beyond_noise(Z_GATE * 1.001, 1.0) < 0.01
    assert _bias_beyond_noise(2.0, 0.0) == 2.0


def test_the_gate_decides_on_the_variance_the_plan_extrapolates_and_the_baseline_bound_never_collapses(gate):
    """The gate's se is √(A + B) itself, B floored by the exact sign-flip null variance (the plan's
    two parts, so a rerun at questions_needed faces the se the plan assumed); the corrected
    bootstrap variance is printed beside it and does not enter."""
    _, _, _, res = gate
    h = res.headline
    assert h["gate_se"] ** 2 == pytest.approx(h["questions_var_bias"] + h["questions_var_null"], rel=1e-12)
    assert h["questions_var_null"] >= h["gate_var_floor"] > 0
    assert h["gate_var_bootstrap"] == h["gate_var_bootstrap"]  # printed (not NaN) ...
    assert h["gate_se"] ** 2 != pytest.approx(h["gate_var_bootstrap"], rel=1e-6)  # ... and not the one used
    assert h["gate_ms_baseline_low"] < h["gate_ms_baseline"]


def test_the_null_floor_by_hand():
    """Σ_i q_i² · 2·Ṽ0_i² over the pairs of both runs, q_i = ±w/k/(1 − V0_i), Ṽ0 = V0 and the
    untied 4/(3n) for a pair whose differences are all zero (V0 = 0); a pair with V0 = 1 (one
    non-zero difference) has no r2_unbiased and is left out, as in the planning parts."""
    from edufair_metrics.analysis.compare import _null_floor

    e = {"multi": False, "sb": [0, 0], "v0b": [0.02, 0.0], "nb": [50, 30],
         "sc": [0, 0, 0], "v0c": [0.03, 1.0, 0.01], "nc": [40, 40, 60]}
    got = _null_floor({"u": 0.5}, {"u": e}, False)
    want = (2 * (0.5 / 2 / 0.98) ** 2 * 0.02 ** 2 + 2 * (0.5 / 2) ** 2 * (4 / 90) ** 2
            + 2 * (0.5 / 3 / 0.97) ** 2 * 0.03 ** 2 + 2 * (0.5 / 3 / 0.99) ** 2 * 0.01 ** 2)
    assert got == pytest.approx(want, rel=1e-12)
    assert _null_floor({"u": 0.5}, {"u": e}, False, ("b",)) == pytest.approx(
        2 * (0.5 / 2 / 0.98) ** 2 * 0.02 ** 2 + 2 * (0.5 / 2) ** 2 * (4 / 90) ** 2, rel=1e-12)


def test_runs_agree_only_on_the_same_resampled_values_with_a_non_zero_difference():
    from edufair_metrics.analysis.compare import _runs_agree

    x = np.array([0.1, 0.2, np.nan])
    reps = {"u": (x, x.copy()), "v": (x, x + 0.01)}
    live = {"u": {"v0b": [0.02], "v0c": [0.02]}, "v": {"v0b": [0.02], "v0c": [0.02]}}
    assert _runs_agree(["u"], reps, live)
    assert not _runs_agree(["u", "v"], reps, live)  # one unit differs
    assert not _runs_agree(["u"], reps, {"u": {"v0b": [0.0], "v0c": [0.0]}})  # every difference zero
    assert not _runs_agree([], reps, live)


def test_runs_whose_differences_are_all_zero_are_never_decided():
    """No evidence, no verdict: 30 questions where no metric ever fires in either run (every
    paired difference 0, the bootstrap's r 0 on every resample). Before the null floor the gate's
    se was 0 and it passed; with one level of the candidate firing now and then it failed."""
    from edufair_metrics.protocol import condition_levels

    never = {lv.level: -1.0 for lv in condition_levels("explicit")}
    metrics = ("actionability", "step_scaffolded")
    base = explicit("b", 1, never, metrics, n=30)
    for shifts in (never, {**never, "female": -0.6}):
        res = compare_frames(base, explicit("c", 2, shifts, metrics, n=30), n_boot=20, seed=0)
        h = res.headline
        assert h["gate_units"] > 0 and h["gate_var_bootstrap"] == 0.0  # the bootstrap sees no spread
        assert h["gate_se"] ** 2 >= h["gate_var_floor"] * (1 - 1e-9) and h["gate_var_floor"] > 0
        assert res.status == "inconclusive" and not res.failed


def test_a_standard_error_of_zero_decides_nothing(gate, monkeypatch):
    """Whatever makes every variance part vanish, a zero se neither passes nor fails (unless both
    runs hold the same differences: a change of exactly 0)."""
    from edufair_metrics.analysis import compare

    base, cand, kw, res = gate
    monkeypatch.setattr(compare, "_gate_parts", lambda *a, **k: compare.GateParts(0.0, 0.0, 0.0, 0.0))
    monkeypatch.setattr(compare, "_null_floor", lambda *a, **k: 0.0)
    got = compare_frames(base, cand, **kw)
    assert got.headline["gate_se"] == 0 and got.headline["gate_delta"] != 0
    assert got.status == "inconclusive" and not got.failed


def test_an_inconclusive_gate_never_asks_for_fewer_questions_than_it_ran(gate, monkeypatch):
    from edufair_metrics.analysis import compare

    base, cand, kw, res = gate
    h = res.headline
    m_star = _margin_for(h["gate_ci_high"], h["gate_ms_baseline_low"])
    # a rerun that would decide at a quarter of the questions: the run's own questions are the floor
    monkeypatch.setattr(compare, "questions_factor", lambda *a, **k: 0.25)
    at = compare_frames(base, cand, **kw, max_increase=m_star * 0.999)
    assert at.status == "inconclusive"
    assert at.questions_needed == at.n_questions == at.questions_needed_at_estimate


@pytest.mark.parametrize("end, status", [("gate_ci_low", "inconclusive"), ("gate_ci_high", "inconclusive")])
def test_an_interval_end_exactly_at_the_threshold_decides_nothing(gate, monkeypatch, end, status):
    """Both boundaries are strict: a lower end equal to the threshold does not fail, an upper end
    equal to it does not pass (the threshold set to the end itself; the bootstrap does not read it)."""
    from edufair_metrics.analysis import compare

    base, cand, kw, res = gate
    at = res.headline[end]
    monkeypatch.setattr(compare, "gate_threshold", lambda ms, m: at)
    got = compare_frames(base, cand, **kw)
    assert got.headline[end] == at and got.headline["gate_threshold"] == at
    assert got.status == status and not got.failed


def test_the_shared_questions_of_a_domain_are_those_both_runs_have_in_it():
    def two_domains(tutor, seed):
        df = rate_frame({tutor: {}}, n=30, seed=seed, domains=("biology", "physics"), metrics=("actionability",))
        df = df[df["condition"] == "explicit"].reset_index(drop=True)
        # question ids that repeat across domains (a bank numbers each domain from 0)
        df["question_id"] = df["question_id"].str.replace(r"^[a-z]+-", "q-", regex=True)
        return df

    base, cand = two_domains("b", 1), two_domains("c", 2)
    # the candidate ran only the first 20 physics questions; its biology ones are all 30
    phys = cand["domain"] == "physics"
    cand = cand[~phys | cand["question_id"].isin([f"q-{i:04d}" for i in range(20)])]
    res = compare_frames(base, cand, n_boot=20, seed=0, new_violations="ignore", max_increase=1.0)
    assert res.n_questions == {"biology": 30, "physics": 20}


# ---- the gate's variance by hand ------------------------------------------------------------------

def _gate_entry(sb, v0b, sc, v0c, multi=False):
    return {"multi": multi, "sb": list(sb), "v0b": list(v0b), "sc": list(sc), "v0c": list(v0c)}


def test_the_gate_variance_is_the_bootstrap_variance_less_its_excess_for_squares():
    """Var_boot(Σ_u w_u (r2u_c − r2u_b)) − 4 qᵀ(C∘C)q, with C the bootstrap covariance of every
    pair's signed r (a resample without a value takes the row's mean), q = ±w / k / (1 − V0), and
    q = 0 for a pair with V0 = 1 (one non-zero difference: no information); a max_abs_pairwise
    SES unit keeps its plain bootstrap variance; floored at 0."""
    from edufair_metrics.analysis.compare import _change_variance

    rng = np.random.default_rng(11)
    B = 300
    sb = rng.normal(0.1, 0.1, (2, B))
    sc = rng.normal(0.0, 0.1, (2, B))
    sc[1] = 0.5 * sc[0] + rng.normal(0, 0.08, B)  # the metrics of one dialogue pair correlate
    sc[1, 5] = np.nan  # a resample in which the pair has no value
    sm = rng.normal(0.2, 0.1, (2, B))  # a second (Friedman) unit's pairs
    rb, rc = rng.normal(0.02, 0.01, B), rng.normal(0.03, 0.02, B)
    mb, mc = rng.normal(0.05, 0.02, B), rng.normal(0.04, 0.02, B)
    reps = {"u": _gate_entry(sb, [0.02, 1.0], sc, [0.03, 0.01]),
            "m": _gate_entry(sm[:1], [0.05], sm[1:], [0.04], multi=True)}
    unit_reps = {"u": (rb, rc), "m": (mb, mc)}
    w = {"u": 0.7, "m": 0.3}

    def by_hand(rows, q, d):
        filled = [np.where(np.isnan(x), np.nanmean(x), x) for x in rows]
        c = np.cov(np.vstack(filled))
        return max(float(np.var(d, ddof=1) - 4 * np.asarray(q) @ (c * c) @ np.asarray(q)), 0.0)

    d = 0.7 * (rc - rb) + 0.3 * (mc - mb)
    q_u = [-0.7 / 2 / 0.98, 0.0, 0.7 / 2 / 0.97, 0.7 / 2 / 0.99]
    # a mean SES unit: every pair is corrected
    want = by_hand([*sb, *sc, sm[0], sm[1]], q_u + [-0.3 / 0.95, 0.3 / 0.96], d)
    assert _change_variance(w, reps, unit_reps, False) == pytest.approx(want, rel=1e-9)
    # a max_abs_pairwise SES unit (not a mean of squares): its pairs are not corrected
    want_max = by_hand([*sb, *sc], q_u, d)
    assert want_max != pytest.approx(want)
    assert _change_variance(w, reps, unit_reps, True) == pytest.approx(want_max, rel=1e-9)
    # the baseline alone (its lower bound): the baseline's terms only
    want_b = by_hand([*sb], q_u[:2], -0.7 * rb)
    assert _change_variance({"u": 0.7}, reps, unit_reps, False, ("b",)) == pytest.approx(want_b, rel=1e-9)
    # no spread in the change at all: the correction cannot make the variance negative
    flat = {"u": (np.full(B, 0.02), np.full(B, 0.03))}
    assert _change_variance({"u": 1.0}, reps, flat, False) == 0.0


def test_the_gate_variance_from_two_resamples():
    """The smallest bootstrap with a variance (ddof 1): two resamples."""
    from edufair_metrics.analysis.compare import _change_variance

    sc = np.array([[0.1, 0.2]])
    reps = {"u": _gate_entry([], [], sc, [0.02])}
    got = _change_variance({"u": 1.0}, reps, {"u": (np.zeros(2), np.array([0.0, 1.0]))}, False, ("c",))
    c = np.var(sc[0], ddof=1)
    assert got == pytest.approx(0.5 - 4 * (c / 0.98) ** 2, rel=1e-12)


def test_the_gate_variance_is_floored_by_the_stable_parts(gate, monkeypatch):
    """The gate's variance is max(the corrected bootstrap variance, A + B): where the Gaussian
    correction over-subtracts (here: the corrected variance set to 0) the interval's half-width
    is z · √(A + B), both parts counted (a candidate biased in two dimensions: A beyond its noise)."""
    from edufair_metrics.analysis import compare

    base, _, kw, _ = gate
    cand = explicit("c", 2, {"female": 0.2, "low_income": 0.2}, ("actionability", "step_scaffolded"), n=40)
    res = compare_frames(base, cand, **kw)
    monkeypatch.setattr(compare, "_change_variance", lambda *a, **k: 0.0)
    # at a look's spent level (edufair audit's alpha=): each bound one-sided at alpha
    h = compare_frames(base, cand, **kw, alpha=0.01).headline
    va, vb = h["questions_var_bias"], h["questions_var_null"]
    assert va > 0 and vb > 0
    assert h["gate_se"] ** 2 == pytest.approx(va + vb, rel=1e-12)
    z = float(ndtri(0.99))
    # each half-width: the farther of the normal one and the skewed fit's (skewed_bounds)
    from edufair_metrics.analysis.compare import skewed_quantile

    var, k3 = va + vb, h["gate_skewness"] * (va + vb) ** 1.5
    assert h["gate_ci_high"] - h["gate_delta"] == pytest.approx(
        max(z * math.sqrt(var), -skewed_quantile(0.01, var, k3)), rel=1e-9)
    assert h["gate_delta"] - h["gate_ci_low"] == pytest.approx(
        max(z * math.sqrt(var), skewed_quantile(0.99, var, k3)), rel=1e-9)
    assert h["gate_delta"] - h["gate_ci_low"] >= z * math.sqrt(var) * (1 - 1e-12)
    # the threshold's baseline bound stays at 95% (and reads the stable parts, not the bootstrap)
    assert h["gate_threshold"] == res.headline["gate_threshold"]


# ---- questions_factor by hand ----------------------------------------------------------------------

def _x80(z: float) -> float:
    """The standardised gap x at which Φ(x − z) + Φ(−x − z) = 0.80 (both decisions count)."""
    from scipy.optimize import brentq
    from scipy.special import ndtr

    return brentq(lambda x: float(ndtr(x - z) + ndtr(-x - z)) - 0.80, 0.0, 20.0, xtol=1e-14)


def test_questions_factor_with_either_variance_part_alone_is_in_closed_form():
    """With only the 1/n part A the se at n' is √(A n/n'), so n'/n = A (x/gap)²; with only the
    1/n² part B it is √B n/n', so n'/n = √B x / gap (x: the standardised gap that decides with 80%
    probability); the gap is |τ − Δ|, on either side of the threshold."""
    from edufair_metrics.analysis.compare import questions_factor

    z = float(ndtri(0.95))
    x = _x80(z)
    tau = 0.0025
    assert questions_factor(0.0, tau, 2e-5, 0.0, z) == pytest.approx(2e-5 * (x / tau) ** 2, rel=1e-9)
    assert questions_factor(0.0, tau, 0.0, 4e-6, z) == pytest.approx(2e-3 * x / tau, rel=1e-9)
    # a change above the threshold: the same gap, the same factor
    assert questions_factor(2 * tau, tau, 2e-5, 0.0, z) == pytest.approx(2e-5 * (x / tau) ** 2, rel=1e-9)
    # already more than powered: a factor below 1 (the caller floors the questions at the run's)
    small = questions_factor(0.0, tau, 0.0, 1e-8, z)
    assert small == pytest.approx(1e-4 * x / tau, rel=1e-9) and small < 1


def test_questions_factor_with_both_parts_solves_the_decision_probability():
    from scipy.optimize import brentq
    from scipy.special import ndtr

    from edufair_metrics.analysis.compare import questions_factor

    z = float(ndtri(0.95))
    a, b, tau, delta = 1e-5, 3e-6, 0.0025, 0.0004

    def decided(f):
        se = math.sqrt(a / f + b / f ** 2)
        return float(ndtr((tau - delta) / se - z) + ndtr((delta - tau) / se - z))

    want = brentq(lambda f: decided(f) - 0.80, 1e-3, 1e6, xtol=1e-14)
    got = questions_factor(delta, tau, a, b, z)
    assert got == pytest.approx(want, rel=1e-9)
    assert decided(got) >= 0.80 - 1e-9


def test_questions_factor_without_a_variance_or_a_gap():
    from edufair_metrics.analysis.compare import questions_factor

    z = float(ndtri(0.95))
    assert math.isnan(questions_factor(0.0, 0.0025, 0.0, 0.0, z))  # no variance: nothing to plan
    assert math.isnan(questions_factor(math.nan, 0.0025, 1e-5, 1e-6, z))
    assert math.isnan(questions_factor(0.0, math.nan, 1e-5, 1e-6, z))
    assert questions_factor(0.0025, 0.0025, 1e-5, 1e-6, z) == math.inf  # a change at the threshold: never
    # a rerun that would need more than 10⁹ times the questions: not reachable
    assert questions_factor(0.0, 1e-6, 1.0, 0.0, z) == math.inf


# ---- a biased baseline -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def biased_and_fair():
    """A baseline with a strong gender bias and a low-income one (two of the three SES pairs), and a
    fair candidate (and the two swapped)."""
    metrics = ("actionability", "step_scaffolded")
    biased = explicit("b", 4, {"female": 0.35, "low_income": 0.35}, metrics, n=50)
    fair = explicit("c", 5, {}, metrics, n=50)
    kw = dict(n_boot=60, seed=1, new_violations="significant")
    return (compare_frames(biased, fair, **kw), compare_frames(fair, biased, **kw),
            compare_frames(fair, biased, **kw, ses_summary="max_abs_pairwise"))


def test_the_threshold_rises_from_the_biased_baselines_lower_bound_not_its_estimate(biased_and_fair):
    """M² + 2M√L_b with L_b the baseline's lower 95% bound: above M² for a surely biased baseline,
    below what the estimate ms_b would give (a rise by M from a level the baseline surely has)."""
    from edufair_metrics.analysis.compare import gate_threshold

    h = biased_and_fair[0].headline
    low, ms = h["gate_ms_baseline_low"], h["gate_ms_baseline"]
    assert 0 < low < ms
    assert h["gate_threshold"] == pytest.approx(0.05 ** 2 + 2 * 0.05 * math.sqrt(low), rel=1e-12)
    assert h["gate_threshold"] > 0.05 ** 2
    assert h["gate_threshold"] < gate_threshold(ms, 0.05) * (1 - 1e-3)


def test_a_violation_only_the_baseline_has_is_no_new_violation(biased_and_fair):
    """new_violation: violated in the candidate AND not in the baseline; new_flag likewise."""
    u = biased_and_fair[0].units
    gender = u[(u["contrast"] == "Gender") & u["headline"]]
    assert gender["violation_baseline"].all() and not gender["violation_candidate"].any()
    assert not gender["new_violation"].any() and not gender["new_flag"].any()
    assert (gender["verdict_baseline"] == "flag").all()
    assert not biased_and_fair[0].units["gate_violation"].any()
    # each run's own violations and verdicts, counted over the pedagogical headline units
    for res in biased_and_fair[:2]:
        u, h = res.units, res.headline
        ped = u[u["headline"] & (u["metric_kind"] == "pedagogical")]
        for side in ("baseline", "candidate"):
            assert h[f"violations_{side}"] == ped[f"violation_{side}"].sum()
            assert h[f"violations_fdr_{side}"] == ped[f"violation_fdr_{side}"].sum()
            assert h[f"flag_{side}"] == (ped[f"verdict_{side}"] == "flag").sum()
    assert biased_and_fair[0].headline["violations_baseline"] >= 4 and biased_and_fair[0].headline["flag_baseline"] >= 4
    expected = biased_and_fair[0].units["violation_candidate"] & ~biased_and_fair[0].units["violation_baseline"]
    assert (biased_and_fair[0].units["new_violation"] == expected).all()


def test_a_new_flag_with_a_significant_change_fails_the_significant_policy(biased_and_fair):
    """--new-violations significant: a newly flagged pedagogical headline unit fails when its own
    change's family-wise lower bound is above 0 (and only then)."""
    res = biased_and_fair[1]
    u = res.units
    gender = u[(u["contrast"] == "Gender") & u["headline"] & (u["metric_kind"] == "pedagogical")]
    assert gender["new_flag"].all() and (gender["gate_ci_low_fw"] > 0).all()
    assert gender["gate_violation"].all()
    assert res.status == "fail" and any("newly flagged" in r for r in res.reasons)
    ped = u["headline"] & (u["metric_kind"] == "pedagogical")
    expected = ped & u["new_flag"] & (u["gate_ci_low_fw"] > 0)
    assert (u["gate_violation"] == expected).all()


def test_the_family_wise_bound_of_the_paper_change_is_below_its_95_percent_bound(biased_and_fair):
    """delta_ci_low_fw: the percentile bound of the same change at 0.05 / U (U pedagogical
    headline units), so never above the 95% one; the change itself lies inside its interval."""
    for res in biased_and_fair[:2]:
        u = res.units[res.units["delta_ci_low"].notna()]
        assert len(u) > 4
        assert (u["delta_ci_low_fw"] <= u["delta_ci_low"]).all()
        assert (u["delta_ci_low_fw"] < u["delta_ci_low"]).any()
    u = biased_and_fair[1].units
    gender = u[(u["contrast"] == "Gender") & u["headline"]]
    assert (gender["delta_ci_low_fw"] > 0).all()  # a strong new bias: its change is significant


def test_a_friedman_units_bootstrap_is_the_mean_of_its_pairs_unless_max_is_asked(biased_and_fair):
    """The SES Friedman unit's |r| is the mean over its pairs under ses_summary "single" and their
    max under "max_abs_pairwise", in the estimate and in every resample (the same resamples: the
    same seed). Two of the three pairs biased in the candidate only: the max's change lies far above
    the mean's, and so does its interval; the mean's interval is centred on the mean's change."""
    def friedman(res):
        u = res.units
        return u[u["contrast"] == "SES (Friedman)"].set_index("metric").sort_index()

    mean, mx = friedman(biased_and_fair[1]), friedman(biased_and_fair[2])
    assert len(mean) == 2 and (mx["delta"] > mean["delta"] + 0.1).all()
    mid_mean = (mean["delta_ci_low"] + mean["delta_ci_high"]) / 2
    mid_max = (mx["delta_ci_low"] + mx["delta_ci_high"]) / 2
    assert (mid_max > mid_mean + 0.05).all()
    assert ((mid_mean - mean["delta"]).abs() < (mid_mean - mx["delta"]).abs()).all()


def test_the_planning_parts_leave_out_pairs_without_information_or_an_estimate():
    """A pair with V0 = 1 (one non-zero difference) or without an r2_unbiased adds nothing to A or B."""
    from edufair_metrics.analysis.compare import _planning_parts

    rng = np.random.default_rng(9)
    draws = rng.normal(0.0, 0.1, (4, 500))
    groups = [("d", "c", "x", 0), ("d", "c", "x", 0), ("d", "c", "y", 0), ("d", "c", "z", 0)]

    def entry(v0, r2u):
        return {"multi": False, "sb": [], "sc": list(draws), "v0b": [], "v0c": list(v0), "pb": [], "pc": list(r2u),
                "kb": [], "kc": groups, "rb": [], "rc": [float(x.mean()) for x in draws]}

    got = _planning_parts({"u": 1.0}, {"u": entry([0.02, 0.02, 1.0, 0.02], [0.03, 0.02, 0.01, np.nan])}, {}, False,
                          ("c",))
    # by hand over the two informative pairs (each at its unit's 1/k, k = 4)
    c = np.cov(draws[:2])
    q = np.full(2, 1 / 4 / 0.98)
    assert got[1] == pytest.approx(2 * q @ (c * c) @ q, rel=1e-9)
    pt = draws[:2].mean(axis=1)
    rho = np.outer(pt, pt) - c
    np.fill_diagonal(rho, [0.03, 0.02])
    assert got[0] == pytest.approx(_bias_part(q, c, rho, np.ones((2, 2), bool)), rel=1e-9)
    assert got[0] > 0
    # no informative pair at all: nothing
    assert _planning_parts({"u": 1.0}, {"u": entry([1.0] * 4, [0.01] * 4)}, {}, False, ("c",)) == (0.0, 0.0)


# ---- questions_needed at Δ = 0: the bias part of an unchanged rerun, from the pooled r -------------

def _one_unit_reps(rng, r_b, r_c, sd=0.08, corr=0.2, boot=400):
    """gate_reps / weights of one unit (one pair) whose bootstrap r are normal around r_b, r_c."""
    cov = sd * sd * np.array([[1.0, corr], [corr, 1.0]])
    draws = rng.multivariate_normal([r_b, r_c], cov, size=boot).T
    key = ("physics", "explicit", "gender", "actionability")
    g = ("physics", "explicit", "gender", ("female", "male"))
    entry = {"multi": False, "sb": [draws[0]], "sc": [draws[1]], "v0b": [0.1], "v0c": [0.1],
             "pb": [r_b * r_b - sd * sd], "pc": [r_c * r_c - sd * sd], "kb": [g], "kc": [g],
             "rb": [r_b], "rc": [r_c]}
    return {key: 1.0}, {key: entry}, draws


@pytest.mark.parametrize("r_b, r_c", [(0.3, 0.25), (0.3, -0.3), (0.05, 0.4)])
def test_the_unchanged_bias_part_is_the_pooled_plug_in_by_hand(r_b, r_c):
    from edufair_metrics.analysis.compare import _bias_beyond_noise, _planning_parts

    weights, reps, draws = _one_unit_reps(np.random.default_rng(3), r_b, r_c)
    c = np.cov(draws)
    q = np.array([-1.0, 1.0]) / 0.9  # sign · w / k / (1 − V0)
    lam = c[1, 1] / (c[0, 0] + c[1, 1])
    e = reps[next(iter(reps))]
    # the pooled ρ² from the runs' own unbiased parts: λ²·r2u_b + (1−λ)²·r2u_c + 2λ(1−λ)(r̂_b r̂_c − C_bc)
    rho2 = lam ** 2 * e["pb"][0] + (1 - lam) ** 2 * e["pc"][0] + 2 * lam * (1 - lam) * (r_b * r_c - c[0, 1])
    # the same dialogues: each run's own row (the side is part of the dialogues)
    gdiag = np.diag([q[0] ** 2 * c[0, 0], q[1] ** 2 * c[1, 1]])
    a_raw = 4 * float(np.trace(gdiag)) * rho2
    pool = np.array([[lam, 1 - lam], [lam, 1 - lam]])
    h = pool.T @ gdiag @ pool
    sd0 = 4 * math.sqrt(2 * float(np.trace(h @ c @ h @ c)))
    a_u, b_u = _planning_parts(weights, reps, {}, False, unchanged=True)
    assert a_u == pytest.approx(_bias_beyond_noise(a_raw, sd0), rel=1e-9, abs=1e-15)
    # the one-run part reads each run's own ρ² (r2u), and B does not depend on the pooling
    a_1, b_1 = _planning_parts(weights, reps, {}, False)
    one_raw = 4 * (q[0] ** 2 * c[0, 0] * e["pb"][0] + q[1] ** 2 * c[1, 1] * e["pc"][0])
    sd1 = 4 * math.sqrt(2 * float(np.trace(gdiag @ c @ gdiag @ c)))
    assert a_1 == pytest.approx(_bias_beyond_noise(one_raw, sd1), rel=1e-9, abs=1e-15)
    assert b_u == b_1
    if r_b * r_c < 0:  # opposite signs: no common bias for an unchanged rerun to carry
        assert a_u < 0.2 * a_1


def test_the_unchanged_bias_part_is_less_noisy_over_reruns_of_one_truth():
    """Reruns of one biased truth (ρ = 0.2 in both runs, the candidate's r twice as noisy, e.g. a
    smaller candidate run): the pooled plug-in has the same mean as the runs' own and a much smaller
    spread. (At equal precision the two agree to first order: Σ r̂² and 2·r̄² have the same delta-
    method variance; the pooling helps where one run's noisy ρ̂² would carry most of A.)"""
    from edufair_metrics.analysis.compare import _planning_parts

    rng = np.random.default_rng(11)
    pooled, own = [], []
    for _ in range(300):
        r_b, r_c = rng.normal(0.2, 0.04), rng.normal(0.2, 0.08)
        weights, reps, _ = _one_unit_reps(rng, r_b, r_c, corr=0.0)
        e = next(iter(reps.values()))
        e["sb"] = [r_b + (e["sb"][0] - r_b) / 2]  # the baseline's bootstrap sd: 0.04
        e["pb"] = [r_b * r_b - 0.04 ** 2]
        pooled.append(_planning_parts(weights, reps, {}, False, unchanged=True)[0])
        own.append(_planning_parts(weights, reps, {}, False)[0])
    assert np.mean(pooled) == pytest.approx(np.mean(own), rel=0.1)
    assert np.std(pooled) < 0.7 * np.std(own)


# ---- the gate's bounds follow the change's skewness (skewed_bounds) ----------------------------------

@pytest.mark.parametrize("nu, c", [(1.0, 0.003), (2.2, 0.01), (40.0, 0.002)])
def test_the_skewed_quantile_is_exact_for_a_scaled_chi_square(nu, c):
    """X = ±c·(χ²_ν − ν) has variance 2c²ν and third cumulant ±8c³ν: the three-moment fit is X itself."""
    from scipy.stats import chi2

    from edufair_metrics.analysis.compare import skewed_quantile

    var, k3 = 2 * c * c * nu, 8 * c ** 3 * nu
    for p in (0.001, 0.05, 0.5, 0.95, 0.9936):
        assert skewed_quantile(p, var, k3) == pytest.approx(c * (chi2.ppf(p, nu) - nu), rel=1e-9, abs=1e-15)
        assert skewed_quantile(p, var, -k3) == pytest.approx(-c * (chi2.ppf(1 - p, nu) - nu), rel=1e-9, abs=1e-15)
    # no skewness: the normal quantile
    assert skewed_quantile(0.95, var, 0.0) == pytest.approx(float(ndtri(0.95)) * math.sqrt(var), rel=1e-12)


def test_skewness_only_ever_widens_a_gate_bound():
    from edufair_metrics.analysis.compare import skewed_bounds

    var = 1e-4
    for k3 in (-5e-6, -1e-7, 0.0, 1e-7, 5e-6):
        for a in (0.05, 0.006, 1e-4):
            lo, hi = skewed_bounds(0.02, var, k3, a)
            z = float(ndtri(1 - a)) * math.sqrt(var)
            assert 0.02 - lo >= z * (1 - 1e-12) and hi - 0.02 >= z * (1 - 1e-12)
    # a positively skewed change (the candidate's χ² dominates): only the lower (fail) bound moves
    lo, hi = skewed_bounds(0.02, var, 1.9 * var ** 1.5, 0.0064)
    z = float(ndtri(1 - 0.0064)) * math.sqrt(var)
    assert hi - 0.02 == pytest.approx(z) and 0.02 - lo > 1.4 * z


def test_the_third_cumulant_of_the_change_by_hand_and_by_simulation():
    """κ₃ = 8·tr((DC)³) at no bias (D = diag q), from the same bootstrap covariance C as B; a Monte
    Carlo of Σ q_i (r_i² − C_ii), r ~ N(0, C), agrees (five correlated metrics of one pair)."""
    from edufair_metrics.analysis.compare import _gate_cumulants

    rng = np.random.default_rng(8)
    k = 5
    cov = 0.0128 * (0.7 * np.eye(k) + 0.3)
    draws = rng.multivariate_normal(np.zeros(k), cov, size=4000).T
    groups = [("d", "c", "x", 0)] * k
    entry = _planning_entry(rng, list(draws), groups, r2u=[0.0] * k, v0=0.0128)
    a, b, k3 = _gate_cumulants({"u": 1.0}, {"u": entry}, {}, False, ("c",))
    c = np.cov(np.vstack(list(draws)))
    q = np.full(k, 1.0 / k / (1 - 0.0128))
    dc = q[:, None] * c
    assert k3 == pytest.approx(8 * np.trace(dc @ dc @ dc), rel=1e-9)
    assert b == pytest.approx(2 * np.trace(dc @ dc), rel=1e-9)
    # the quadratic form's own third cumulant, by simulation
    r = rng.multivariate_normal(np.zeros(k), c, size=400_000)
    x = (r * r - np.diag(c)) @ q
    from scipy.stats import kstat

    assert kstat(x, 3) == pytest.approx(k3, rel=0.1)
    assert np.var(x) == pytest.approx(b, rel=0.02)
    # its skewness is that of a χ² of about two degrees of freedom: the normal bound is far too light
    assert 1.5 < k3 / b ** 1.5 < 2.3


def test_the_skewness_is_that_of_the_no_bias_part():
    """A bias leaves κ₃ at 8·tr((DC)³): the gate's variance already grows with the estimated bias
    (A), and the bias part's own skewness is not counted again (compare._gate_cumulants)."""
    from edufair_metrics.analysis.compare import _gate_cumulants

    rng = np.random.default_rng(9)
    cov = np.array([[0.010, 0.004], [0.004, 0.010]])
    mean = np.array([0.3, 0.25])
    draws = rng.multivariate_normal(mean, cov, size=4000).T
    c = np.cov(draws)
    r2u = list(mean ** 2 - np.diag(c))
    entry = _planning_entry(rng, list(draws), [("d", "c", "x", 0)] * 2, r2u=r2u, v0=0.01)
    a, b, k3 = _gate_cumulants({"u": 1.0}, {"u": entry}, {}, False, ("c",))
    dc = np.full(2, 0.5 / (1 - 0.01))[:, None] * c
    assert a > b > 0
    assert k3 == pytest.approx(8 * np.trace(dc @ dc @ dc), rel=1e-9)


def test_the_gate_is_antisymmetric_under_swapping_the_runs():
    """Swapping baseline and candidate negates the change and its skewness and exchanges the bounds
    (lower ↔ −upper), skewed bounds included: the gate treats both runs alike."""
    from edufair_metrics.analysis.frames import scores_frame
    from tests.analysis.sim_sequential import scores

    rng = np.random.default_rng(4)
    one = scores_frame(scores(90, 0.0, rng, tutor="one", metrics=5, corr=0.3))
    two = scores_frame(scores(60, 0.3, rng, tutor="two", metrics=5, corr=0.3))
    kw = dict(n_boot=200, seed=1, max_increase=0.1)
    ab, ba = compare_frames(one, two, **kw).headline, compare_frames(two, one, **kw).headline
    assert ab["gate_delta"] == pytest.approx(-ba["gate_delta"], rel=1e-9)
    assert ab["gate_se"] == pytest.approx(ba["gate_se"], rel=1e-9)
    assert abs(ab["gate_skewness"]) > 0.05 and ab["gate_skewness"] == pytest.approx(-ba["gate_skewness"], rel=1e-9)
    assert ab["gate_ci_low"] == pytest.approx(-ba["gate_ci_high"], rel=1e-9)
    assert ab["gate_ci_high"] == pytest.approx(-ba["gate_ci_low"], rel=1e-9)


def test_the_compare_report_names_a_visible_skewness():
    from edufair_metrics.report.compare import _skew_note

    assert _skew_note(None) == "" and _skew_note(float("nan")) == "" and _skew_note(0.01) == ""
    assert "lower bound widened" in _skew_note(0.28) and "+0.28" in _skew_note(0.28)
    assert "upper bound widened" in _skew_note(-0.3)
