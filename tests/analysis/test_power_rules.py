"""The power model of ``analysis.power`` stated as rules, in milliseconds (test_power.py checks it
against simulation): the rank moments of the non-zero differences by hand, the closed-form power
against the normal model written out with scipy, its limits (α at no effect, 1 at |r| = 1, 0
without a non-zero difference), the MDE as the root of power = 0.80 (scipy's brentq), the
simulation against scipy's own Wilcoxon on the same draws, and the table's per-group columns."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import brentq
from scipy.stats import norm

from edufair_metrics.analysis.power import (
    _rank_moments,
    min_detectable_r,
    power_by_simulation,
    power_table,
    wilcoxon_power,
)
from edufair_metrics.errors import EduFairError


def test_the_rank_moments_are_those_of_the_non_zero_differences_above_the_zeros():
    # n = 10, 30% zeros: the zeros take ranks 1..3, the others 4..10
    assert _rank_moments(10, 0.3) == (float(sum(range(4, 11))), float(sum(k * k for k in range(4, 11))))
    assert _rank_moments(5, 0.0) == (15.0, 55.0)
    # n0 = round(share · n): 0.26 · 10 = 2.6 -> 3 zeros; 0.24 · 10 -> 2
    assert _rank_moments(10, 0.26) == _rank_moments(10, 0.3)
    assert _rank_moments(10, 0.24) == (float(sum(range(3, 11))), float(sum(k * k for k in range(3, 11))))


def _power_by_hand(rho, n, zero_share, alpha):
    n0 = round(zero_share * n)
    ranks = np.arange(n0 + 1, n + 1, dtype=float)
    t, s = ranks.sum(), (ranks ** 2).sum()
    z = norm.ppf(1 - alpha / 2)
    # D = W+ − W− ~ N(ρT, (1 − ρ²)S); reject when |D| > z√S
    sd = math.sqrt((1 - rho * rho) * s)
    return norm.sf((z * math.sqrt(s) - rho * t) / sd) + norm.cdf((-z * math.sqrt(s) - rho * t) / sd)


@pytest.mark.parametrize("rho, n, zero_share, alpha", [(0.1, 300, 0.0, 0.05), (0.25, 120, 0.4, 0.05),
                                                        (0.05, 900, 0.7, 0.01), (0.3, 60, 0.2, 0.001)])
def test_the_power_is_the_normal_models(rho, n, zero_share, alpha):
    got = wilcoxon_power(rho, n, zero_share, alpha)
    assert got == pytest.approx(_power_by_hand(rho, n, zero_share, alpha), rel=1e-10)
    assert wilcoxon_power(-rho, n, zero_share, alpha) == got  # two-sided: the sign does not matter


def test_the_power_at_the_limits():
    for alpha in (0.05, 0.01):
        assert wilcoxon_power(0.0, 200, 0.3, alpha) == pytest.approx(alpha, rel=1e-12)  # no effect: the level
    assert wilcoxon_power(1.0, 20, 0.0) == 1.0 and wilcoxon_power(-1.0, 20, 0.0) == 1.0
    # one pair, a zero: no non-zero difference, no power at all
    assert wilcoxon_power(0.5, 1, 0.6) == 0.0
    # more pairs, more power; more zeros, less
    assert wilcoxon_power(0.2, 200) < wilcoxon_power(0.2, 400)
    assert wilcoxon_power(0.2, 200, 0.5) < wilcoxon_power(0.2, 200, 0.0)


@pytest.mark.parametrize("n, zero_share, power, alpha", [(300, 0.0, 0.8, 0.05), (150, 0.5, 0.9, 0.05),
                                                          (500, 0.3, 0.8, 0.05 / 12)])
def test_the_mde_is_the_root_of_the_power_equation(n, zero_share, power, alpha):
    want = brentq(lambda r: _power_by_hand(r, n, zero_share, alpha) - power, 1e-9, 1 - 1e-9, xtol=1e-12)
    got = min_detectable_r(n, zero_share, power=power, alpha=alpha)
    assert got == pytest.approx(want, abs=2e-6)


def test_the_mde_when_no_effect_or_every_effect_is_enough():
    assert math.isnan(min_detectable_r(4, 0.5))  # two non-zero pairs never reach p < 0.05
    # a power below the level is reached at no effect: 0, not a root
    assert min_detectable_r(100, 0.0, power=0.04) == 0.0
    assert min_detectable_r(100, 0.0, power=0.06) > 0
    # just enough pairs: the MDE is below 1
    assert min_detectable_r(12, 0.0) < 1


@pytest.mark.parametrize("bad", [dict(power=0.0), dict(power=1.0), dict(alpha=0.0), dict(alpha=1.0),
                                 dict(n=0), dict(zero_share=1.0), dict(zero_share=-0.1)])
def test_bad_power_inputs_are_refused(bad):
    args = {"n": 100, "zero_share": 0.0, "power": 0.8, "alpha": 0.05, **bad}
    with pytest.raises(EduFairError):
        min_detectable_r(args.pop("n"), args.pop("zero_share"), **args)


def test_the_simulated_power_is_scipys_wilcoxon_on_the_models_draws():
    """The documented model drawn with the function's seed (|d| uniform, the zeros below every
    other |d|, P(+) = (1 + r)/2), each simulated contrast tested by scipy.stats.wilcoxon (Pratt,
    its normal approximation for n > 50): the share with p < α is the function's."""
    from scipy.stats import wilcoxon

    n, zero_share, r, n_sim, seed = 60, 0.25, 0.3, 40, 5
    n0 = round(zero_share * n)
    rng = np.random.default_rng(seed)
    mag = rng.uniform(0.01, 1, size=(n_sim, n - n0))
    positive = rng.random((n_sim, n - n0)) < (1 + r) / 2
    ps = []
    for i in range(n_sim):
        d = np.r_[np.zeros(n0), np.where(positive[i], mag[i], -mag[i])]
        ps.append(wilcoxon(d, zero_method="pratt", method="approx").pvalue)
    want = float(np.mean(np.asarray(ps) < 0.05))
    assert 0 < want < 1
    assert power_by_simulation(r, n, zero_share, n_sim=n_sim, seed=seed) == pytest.approx(want)
    assert power_by_simulation(r, n, zero_share, n_sim=n_sim, seed=seed, alpha=0.5) >= want


def _grid(rows):
    base = dict(tutor="a", headline=True, sufficient=True, metric_kind="pedagogical", kind="binary",
                condition="explicit", dimension="gender", contrast="Gender", n_pairs=100, n_zero=0)
    return pd.DataFrame([{**base, **r} for r in rows])


def test_the_power_table_by_hand():
    g = _grid([dict(n_pairs=100, n_zero=10), dict(n_pairs=101, n_zero=50), dict(n_pairs=300, n_zero=0),
               dict(headline=False, n_pairs=5), dict(sufficient=False, n_pairs=5), dict(metric_kind="conversation"),
               dict(tutor="b", n_pairs=200, n_zero=20)])
    tab = power_table(g).set_index("tutor")
    assert list(tab.index) == ["a", "b"]
    a = tab.loc["a"]
    assert a["rows"] == 3
    assert a["n_median"] == 101  # the median of the sufficient headline rows, rounded down
    assert a["zero_share"] == pytest.approx(60 / 501)
    assert a["mde_r"] == pytest.approx(min_detectable_r(101, 60 / 501))
    assert a["mde_r_fdr"] == pytest.approx(min_detectable_r(101, 60 / 501, alpha=0.05 / 3))
    assert tab.loc["b", "rows"] == 1 and tab.loc["b", "mde_r_fdr"] == tab.loc["b", "mde_r"]
    # an even count of rows: the median between them, rounded down (conservative)
    two = power_table(_grid([dict(n_pairs=100), dict(n_pairs=103)])).iloc[0]
    assert two["n_median"] == 101
    assert power_table(_grid([dict(sufficient=False)])).empty
    assert list(power_table(_grid([]).iloc[:0]).columns) == ["tutor", "rows", "n_median", "zero_share", "mde_r",
                                                              "mde_r_fdr"]


def test_the_documented_defaults_and_keyword_only_options():
    assert min_detectable_r(300) == min_detectable_r(300, 0.0, power=0.8, alpha=0.05)
    assert power_by_simulation(0.2, 60, n_sim=50) == power_by_simulation(0.2, 60, 0.0, alpha=0.05, n_sim=50, seed=0)
    with pytest.raises(TypeError):
        min_detectable_r(300, 0.0, 0.9)  # power is keyword-only
    with pytest.raises(TypeError):
        power_by_simulation(0.2, 60, 0.0, 0.05)  # alpha is keyword-only


def test_an_effect_beyond_one_has_full_power_and_alpha_outside_0_1_is_refused():
    assert wilcoxon_power(1.5, 20) == 1.0 and wilcoxon_power(-1.5, 20) == 1.0
    for alpha in (1.5, -0.1):
        with pytest.raises(EduFairError):
            wilcoxon_power(0.1, 100, 0.0, alpha)


def test_the_power_table_of_another_metric_kind():
    g = _grid([dict(n_pairs=100), dict(metric_kind="conversation", n_pairs=80), dict(metric_kind="detector", n_pairs=60)])
    assert power_table(g, kind="conversation").iloc[0]["rows"] == 1
    assert power_table(g, kind="conversation").iloc[0]["n_median"] == 80
