"""Group-sequential levels of ``edufair audit`` (``analysis.sequential``): Lan-DeMets O'Brien-
Fleming-type spending, boundaries by recursive integration, overall α kept under optional
stopping."""

from __future__ import annotations

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
    assert nominal_levels(t[:3]) == pytest.approx(levels[:3])


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
