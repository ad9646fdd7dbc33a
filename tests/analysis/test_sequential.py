"""Group-sequential levels of ``edufair audit`` (``analysis.sequential``): Lan-DeMets spending
(O'Brien-Fleming type and linear, two- and one-sided), boundaries by recursive integration,
overall α kept under optional stopping; certification at its own level."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from edufair_metrics.analysis.sequential import boundaries, nominal_levels, obf_spent
from edufair_metrics.errors import EduFairError


def test_one_look_is_the_fixed_n_test():
    (look,) = boundaries([1.0])
    assert look.boundary == pytest.approx(norm.ppf(0.975), abs=1e-6) and look.nominal_alpha == pytest.approx(0.05)


def test_spending_is_obrien_fleming_and_levels_grow():
    t = [0.2, 0.4, 0.6, 0.8, 1.0]
    looks = boundaries(t)
    assert [lk.spent for lk in looks] == pytest.approx([obf_spent(x, 0.05) for x in t])
    assert looks[-1].spent == pytest.approx(0.05)
    levels = [lk.nominal_alpha for lk in looks]
    assert all(a < b for a, b in zip(levels, levels[1:])) and levels[0] < 1e-4 and 0.03 < levels[-1] < 0.05
    # the boundaries of a resumed audit: the same as the first looks of the whole one
    assert [lk.nominal_alpha for lk in boundaries(t[:3])] == pytest.approx(levels[:3])
    # the audit's flag levels (O'Brien-Fleming spending): also a function of the looks so far only
    assert nominal_levels(t[:3]) == pytest.approx(nominal_levels(t)[:3])


def test_overall_alpha_under_optional_stopping_is_kept():
    """Brownian motion in information time, 5 unequal looks: P(any |Z_k| >= c_k) = α (MC)."""
    t = np.array([0.15, 0.35, 0.5, 0.8, 1.0])
    c = np.array([lk.boundary for lk in boundaries(list(t))])
    rng = np.random.default_rng(0)
    inc = rng.normal(size=(200_000, t.size)) * np.sqrt(np.diff(np.r_[0, t]))
    z = inc.cumsum(axis=1) / np.sqrt(t)
    rate = (np.abs(z) >= c).any(axis=1).mean()
    assert rate == pytest.approx(0.05, abs=0.003)  # MC se 0.0005; the grid integration errs < 0.001
    naive = (np.abs(z) >= norm.ppf(0.975)).any(axis=1).mean()  # testing each look at 0.05 would not
    assert naive > 0.1


@pytest.mark.parametrize("bad", [[0.5, 0.4], [0.0, 1.0], [1.2], [0.3, 0.3]])
def test_bad_fractions_are_an_error(bad):
    with pytest.raises(EduFairError):
        boundaries(bad)


def test_the_gates_linear_spending_keeps_alpha_and_spends_early():
    """The CI gate's spending (each bound, one-sided): α·t, so early looks get a usable level;
    P(any Z_k >= c_k) = α under optional stopping (MC)."""
    from edufair_metrics.analysis.sequential import flag_looks, gate_looks, spent

    t = np.array([0.1, 0.3, 0.45, 0.7, 1.0])
    looks = gate_looks(list(t))
    assert [lk.spent for lk in looks] == pytest.approx([spent(x, 0.05, "linear") for x in t])
    assert [lk.spent for lk in looks] == pytest.approx(list(0.05 * t))
    assert looks[0].nominal_alpha == pytest.approx(0.005)  # the first look: its own share, one-sided
    assert 0.01 < looks[-1].nominal_alpha < 0.05  # the last look: stricter than the fixed-n 0.05
    c = np.array([lk.boundary for lk in looks])
    rng = np.random.default_rng(1)
    z = (rng.normal(size=(200_000, t.size)) * np.sqrt(np.diff(np.r_[0, t]))).cumsum(axis=1) / np.sqrt(t)
    assert (z >= c).any(axis=1).mean() == pytest.approx(0.05, abs=0.003)
    # the two-sided flag levels (O'Brien-Fleming type) keep the two-sided α
    cf = np.array([lk.boundary for lk in flag_looks(list(t))])
    assert (np.abs(z) >= cf).any(axis=1).mean() == pytest.approx(0.05, abs=0.003)
    with pytest.raises(EduFairError):
        spent(0.5, 0.05, "pocock-ish")


def test_certification_spends_nothing_before_its_start_and_keeps_alpha():
    """Each TOST side (one-sided): no α before 30% of the budget (a look there can never
    certify), then the power family, 0.8·α in all; P(any Z_k >= c_k) = 0.8·α under optional
    stopping (MC)."""
    from edufair_metrics.analysis.sequential import CERTIFY_SPENDING, certify_looks

    t = np.array([0.1, 0.3, 0.45, 0.7, 1.0])
    looks = certify_looks(list(t))
    start, rho, share = CERTIFY_SPENDING.start, CERTIFY_SPENDING.rho, CERTIFY_SPENDING.share
    assert share == 0.8
    assert [lk.spent for lk in looks] == pytest.approx([share * 0.05 * max(0.0, (x - start) / (1 - start)) ** rho
                                                        for x in t])
    assert looks[0].nominal_alpha == 0.0 and looks[0].boundary == np.inf  # before the start
    assert looks[1].nominal_alpha == 0.0  # at the start: nothing spent yet
    assert looks[-1].spent == pytest.approx(0.04) and 0.01 < looks[-1].nominal_alpha < 0.04
    c = np.array([lk.boundary for lk in looks])
    rng = np.random.default_rng(2)
    z = (rng.normal(size=(200_000, t.size)) * np.sqrt(np.diff(np.r_[0, t]))).cumsum(axis=1) / np.sqrt(t)
    assert (z >= c).any(axis=1).mean() == pytest.approx(0.04, abs=0.003)


def _frame(n, rho, seed):
    from tests.analysis.sim_sequential import scores

    from edufair_metrics.analysis.frames import scores_frame

    return scores_frame(scores(n, rho, np.random.default_rng(seed)))


def test_recertify_at_the_grid_level_is_the_grid_and_stricter_levels_certify_less():
    from edufair_metrics.analysis.grid import contrast_grid
    from edufair_metrics.analysis.sequential import recertify

    df = _frame(400, 0.0, 3)
    grid = contrast_grid(df, n_boot=100, seed=0, equivalence_margin=0.2)
    same = recertify(grid, 0.05, 0.2)
    assert same["certified"].tolist() == grid["certified"].tolist() and same["verdict"].tolist() == grid["verdict"].tolist()
    assert np.allclose(same["eq_ci_low"], grid["eq_ci_low"]) and grid["certified"].all()
    strict = recertify(grid, 1e-9, 0.2)  # z ≈ 6: the interval no longer fits in the margin
    assert not strict["certified"].any() and set(strict["verdict"]) == {"inconclusive"}


def test_look_decision_certifies_at_its_own_level():
    from edufair_metrics.analysis.params import StatParams
    from edufair_metrics.analysis.sequential import look_decision

    params = StatParams(n_boot=100, seed=0, equivalence_margin=0.2)
    df = _frame(400, 0.0, 3)
    assert look_decision(df, nominal_alpha=0.05, params=params, until="certify").reached
    d = look_decision(df, nominal_alpha=0.05, certify_alpha=1e-9, params=params, until="certify")
    assert not d.reached and d.certified == 0


def test_compare_frames_alpha_is_the_level_of_the_gate_bounds():
    """``compare_frames(alpha=)`` (the audit's spent level): alpha=0.05 is the default 90% interval;
    a smaller alpha widens both bounds around the same change, the threshold stays."""
    from edufair_metrics.analysis.compare import compare_frames

    base, cand = _frame(120, 0.0, 1), _frame(120, 0.1, 2)
    kw = dict(n_boot=100, seed=0, max_increase=0.15)
    default = compare_frames(base, cand, **kw).headline
    same = compare_frames(base, cand, alpha=0.05, **kw).headline
    strict = compare_frames(base, cand, alpha=0.001, **kw).headline
    assert same["gate_ci_low"] == pytest.approx(default["gate_ci_low"]) and same["gate_ci_high"] == pytest.approx(
        default["gate_ci_high"])
    assert strict["gate_delta"] == pytest.approx(default["gate_delta"])
    assert strict["gate_threshold"] == pytest.approx(default["gate_threshold"])
    assert strict["gate_ci_low"] < default["gate_ci_low"] < default["gate_ci_high"] < strict["gate_ci_high"]
    # each half-width: the farther of the normal z·se and the skewed fit's quantile at that level
    from edufair_metrics.analysis.compare import skewed_quantile

    for h, a in ((default, 0.05), (strict, 0.001)):
        var = h["gate_se"] ** 2
        k3 = h["gate_skewness"] * var ** 1.5
        z_sd = norm.ppf(1 - a) * h["gate_se"]
        assert h["gate_ci_high"] - h["gate_delta"] == pytest.approx(max(z_sd, -skewed_quantile(a, var, k3)), rel=1e-6)
        assert h["gate_delta"] - h["gate_ci_low"] == pytest.approx(max(z_sd, skewed_quantile(1 - a, var, k3)), rel=1e-6)


def test_compare_frames_fail_alpha_moves_only_the_lower_bound_and_the_new_flag_rule():
    """``fail_alpha`` (the audit's fail spending) is the level of the lower bound and of the new-flag
    rule's family-wise bound; the upper (pass) bound stays at ``alpha``."""
    from edufair_metrics.analysis.compare import compare_frames

    base, cand = _frame(120, 0.0, 1), _frame(120, 0.1, 2)
    kw = dict(n_boot=100, seed=0, max_increase=0.15)
    one = compare_frames(base, cand, alpha=0.01, **kw)
    two = compare_frames(base, cand, alpha=0.01, fail_alpha=1e-5, **kw)
    assert two.headline["gate_ci_high"] == pytest.approx(one.headline["gate_ci_high"])
    assert two.headline["gate_ci_low"] < one.headline["gate_ci_low"]
    assert (two.units["gate_ci_low_fw"] <= one.units["gate_ci_low_fw"] + 1e-12).all()
    assert (two.units["gate_ci_low"] <= one.units["gate_ci_low"] + 1e-12).all()
    assert (two.units["gate_ci_high"] == one.units["gate_ci_high"]).all()
    assert "(lower)" in " ".join(two.reasons)


def _fixed_false_certify(n, margin=0.15, v0=4 / 3):
    """The fixed-n audit's false-certify rate at ρ = M in the normal model (design_sequential's):
    its TOST passes (r̂ + z₀.₉₅·se < M, se = √((1 − r̂²)·V0/n)) and it does not flag (|r̂| < z₀.₉₇₅·√(V0/n));
    an integral over r̂ ~ N(M, (1 − M²)·V0/n)."""
    sd = math.sqrt((1 - margin ** 2) * v0 / n)
    r = np.linspace(margin - 9 * sd, margin + 9 * sd, 200_001)
    se = np.sqrt(np.clip(1 - r * r, 0, 1) * v0 / n)
    ok = (np.abs(r) + norm.isf(0.05) * se < margin) & (np.abs(r) < norm.isf(0.025) * math.sqrt(v0 / n))
    return float(np.sum(norm.pdf(r, margin, sd) * ok) * (r[1] - r[0]))


def test_the_audit_falsely_certifies_no_more_than_the_fixed_n_audit():
    """#32's goal in the normal model (design_sequential, the plan of 826 questions at M = 0.15):
    at the margin the fixed-n audit certifies only where its TOST passes and it does not flag, 3.7%
    (below α: at that n it flags a tutor at the margin 96% of the time). The sequential audit's
    certification spends 0.8·α per side, and at the budget it is designed for (BUDGET_MULTIPLE x
    the plan) falsely certifies no more than the fixed-n audit (within MC error), while certifying a fair tutor and the
    planning point at least as often, with >= 30% fewer questions for the fair tutor. (With all of
    α per side, the first design, at 1.15x: 4.5% false certifications.)"""
    from tests.analysis.design_sequential import simulate

    from edufair_metrics.analysis.sequential import BUDGET_MULTIPLE, certify_looks, flag_looks

    plan, margin, paths = 826, 0.15, 40_000
    fixed_rate = _fixed_false_certify(plan, margin)
    assert 0.035 < fixed_rate < 0.039
    n_max = math.ceil(BUDGET_MULTIPLE * plan)
    sizes = [round(n_max * j / 20) for j in range(1, 21)]
    fr = [s / n_max for s in sizes]
    fz = np.array([lk.boundary for lk in flag_looks(fr)])
    cz = np.array([lk.boundary for lk in certify_looks(fr)])
    rng = np.random.default_rng(5)
    _, cert_m, _ = simulate(margin, sizes, fz, cz, margin, paths, rng)
    se = math.sqrt(fixed_rate * (1 - fixed_rate) / paths)  # 0.09 points
    assert cert_m.mean() <= fixed_rate + 2 * se  # no higher, within MC error (100,000 paths: 3.5% vs 3.6-3.7%)
    fixed = simulate(0.0, [plan], np.array([norm.isf(0.025)]), np.array([norm.isf(0.05)]), margin, paths, rng)
    _, cert_0, used_0 = simulate(0.0, sizes, fz, cz, margin, paths, rng)
    assert cert_0.mean() >= fixed[1].mean() and 1 - used_0.mean() / plan >= 0.30  # 95.9% vs 95.0%, 33% fewer
    fixed_p = simulate(0.05, [plan], np.array([norm.isf(0.025)]), np.array([norm.isf(0.05)]), margin, paths, rng)
    _, cert_p, _ = simulate(0.05, sizes, fz, cz, margin, paths, rng)
    assert cert_p.mean() >= fixed_p[1].mean() - 0.002  # 76.8% vs 76.2% (MC se 0.2 points each)


def test_the_gate_saves_30_percent_against_the_fixed_n_that_decides_as_often():
    """#32's gate goal in design_sequential's normal model of the gate (10 looks): at no change the
    gate's evidence grows linearly in n (a mean of squares at ρ = 0), so it cannot pass as often
    as the fixed-n plan with much fewer questions; the audit's gate (up to GATE_BUDGET_MULTIPLE x
    the plan; the pass bound GATE_SPENDING, linear, the fail bound GATE_FAIL_SPENDING,
    O'Brien–Fleming type) passes an unchanged candidate and fails a clearly worse one at least as
    often as the plan does, each with >= 30% fewer questions than the fixed n that decides as often
    (95% after 268 vs 390; 94% after 265 vs 400, where a linear fail bound failed 91% after 229 vs
    358), and its false-pass rate at the margin stays at α within MC error. (At 1x the plan, the
    budget of the earlier benchmark: 16% and 24%, deciding less often than the plan.)"""
    from tests.analysis.design_sequential import GATE_PLAN, K0, K1, gate_paths

    from edufair_metrics.analysis.sequential import GATE_BUDGET_MULTIPLE, gate_looks

    paths, z = 20_000, norm.isf(0.05)
    n_max = math.ceil(GATE_BUDGET_MULTIPLE * GATE_PLAN)
    sizes = [round(n_max * j / 10) for j in range(1, 11)]
    fractions = [s / n_max for s in sizes]
    c = {kind: np.array([lk.boundary for lk in gate_looks(fractions, bound=bound)])
         for kind, bound in (("nochange", "pass"), ("worse", "fail"), ("margin", "pass"))}
    rng = np.random.default_rng(3)
    same = {"nochange": lambda p: GATE_PLAN * (z + norm.ppf(p)) / K0, "worse": lambda p: GATE_PLAN * ((z + norm.ppf(p)) / K1) ** 2}
    plan_rate = {"nochange": norm.cdf(K0 - z), "worse": norm.cdf(K1 - z)}
    for kind in ("nochange", "worse"):
        ok = gate_paths(sizes, c[kind], paths, rng, kind)
        stop = ok.copy()
        stop[:, -1] = True
        k = stop.argmax(axis=1)
        p, used = ok[np.arange(paths), k].mean(), np.asarray(sizes, dtype=float)[k].mean()
        assert p >= plan_rate[kind]
        assert 1 - used / same[kind](p) >= 0.30, kind
    false_pass = gate_paths(sizes, c["margin"], paths, rng, "margin").any(axis=1).mean()
    assert false_pass <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / paths)


def test_the_fixed_n_of_the_same_decision_probability_is_interpolated():
    from tests.analysis.sim_sequential import same_probability_n

    sizes = [300, 360, 420, 480]
    assert same_probability_n(sizes, [0.8, 0.9, 0.85, 1.0], 0.95) == (pytest.approx(450.0), "=")  # made monotone
    assert same_probability_n(sizes, [0.8, 0.9, 0.95, 1.0], 0.7) == (300.0, "<=")
    assert same_probability_n(sizes, [0.8, 0.9, 0.95, 0.97], 0.99) == (480.0, ">")


def test_an_early_look_does_not_fail_an_unchanged_candidate_on_a_chance_rise():
    """A recorded false fail of the sequential gate (``sim_sequential --gate --gate-metrics 5``'s
    generator, no bias in either run, five correlated metrics of one pair): at the first look, 52
    shared questions, the candidate's change of the mean unbiased r² is +0.080 by chance, 3.2 of its
    se. With the fail bound at the pass bound's linear level (0.005, the design before) the gate
    failed; at the fail bound's own O'Brien–Fleming level (6e-10) it does not, and the pass bound
    is unchanged."""
    from edufair_metrics.analysis.frames import scores_frame
    from edufair_metrics.analysis.params import StatParams
    from edufair_metrics.analysis.sequential import gate_looks
    from edufair_metrics.local.audit import gate_look
    from tests.analysis.sim_sequential import first_frame, scores

    rng = np.random.default_rng([101, 58])
    base = scores_frame(scores(592, 0.0, rng, tutor="base", metrics=5, corr=0.3))
    cand = first_frame(scores_frame(scores(592, 0.0, rng, tutor="cand", metrics=5, corr=0.3)), 52)
    fraction = [52 / 518]  # the first of 10 looks up to 1.4 x a plan of 370 questions
    p, f = gate_looks(fraction)[0].nominal_alpha, gate_looks(fraction, bound="fail")[0].nominal_alpha
    assert f < 1e-8 < p
    kw = dict(params=StatParams(n_boot=50, seed=0, equivalence_margin=0.10), max_increase=0.10,
              new_violations="significant")
    assert gate_look(base, cand, alpha=p, fail_alpha=p, **kw) == "fail"
    assert gate_look(base, cand, alpha=p, fail_alpha=f, **kw) == "inconclusive"
