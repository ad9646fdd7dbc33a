"""``analysis.ppi``: the PPI++ estimate of a paired difference (Angelopoulos et al. 2023; PPI++),
its limits (λ = 0 is the human labels alone, λ = 1 classic PPI), its power-tuned λ, the verdict
notes, and the differential judge error test with its power."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from edufair_metrics.analysis.ppi import (HIDDEN_BIAS, NOT_SURVIVING, SIGN_FLIP, Interval, differential_error,
                                          mean_interval, minimum_detectable, paired_ppi, power_two_rates,
                                          ppi_mean_difference, verdict_note)

from tests.analysis.sim_ppi import simulate_run


def _data(seed=0, n_all=300, n_lab=80, noise=0.2):
    rng = np.random.default_rng(seed)
    f = rng.normal(0.05, 0.3, n_all)
    lab = rng.choice(n_all, n_lab, replace=False)
    g = f[lab] + rng.normal(0, 0.2, n_lab)
    y = g + rng.normal(-0.05, noise, n_lab)  # the judge over-states by 0.05
    return f, lab, y, g


def test_lambda_zero_is_the_human_labels_alone_and_one_is_classic_ppi():
    f, lab, y, g = _data()
    iv0, lam0 = ppi_mean_difference(f, lab, y, g, lam=0.0)
    human = mean_interval(y)
    assert lam0 == 0.0 and iv0.estimate == pytest.approx(human.estimate) and iv0.se == pytest.approx(human.se)
    iv1, _ = ppi_mean_difference(f, lab, y, g, lam=1.0)
    assert iv1.estimate == pytest.approx(f.mean() + (y - g).mean())


def test_tuned_lambda_is_never_wider_than_either_end():
    for seed in range(5):
        f, lab, y, g = _data(seed)
        tuned, lam = ppi_mean_difference(f, lab, y, g)
        assert 0 <= lam <= 1
        for fixed in (0.0, 1.0):
            assert tuned.se <= ppi_mean_difference(f, lab, y, g, lam=fixed)[0].se + 1e-12


def test_a_judge_blind_to_the_truth_gets_lambda_near_zero():
    rng = np.random.default_rng(3)
    f = rng.normal(0, 0.3, 400)
    lab = rng.choice(400, 100, replace=False)
    y = rng.normal(0, 0.3, 100)  # unrelated to the judge
    _, lam = ppi_mean_difference(f, lab, y, f[lab])
    assert lam < 0.25


def test_the_corrected_ci_covers_a_planted_null_under_a_biased_judge():
    rng = np.random.default_rng(11)
    runs = [simulate_run(rng, "biased", 300, 100)[0] for _ in range(150)]
    cover = np.mean([r.corrected.ci_low <= 0 <= r.corrected.ci_high for r in runs])
    judge_flags = np.mean([r.verdict_judge == "flag" for r in runs])
    assert cover >= 0.88 and judge_flags >= 0.75  # the full goals: tests/analysis/sim_ppi.py


def test_notes_say_when_the_correction_overturns_or_reveals_a_flag():
    pos, zero, neg = Interval(0.1, 0.05, 0.15, 0.02, 50), Interval(0.0, -0.05, 0.05, 0.02, 50), Interval(-0.1, -0.15, -0.05, 0.02, 50)
    assert verdict_note(pos, zero, "flag", "none") == NOT_SURVIVING
    assert verdict_note(zero, pos, "none", "flag") == HIDDEN_BIAS
    assert verdict_note(pos, neg, "flag", "flag") == SIGN_FLIP
    assert verdict_note(pos, pos, "flag", "flag") == ""


def test_too_few_labelled_questions_is_insufficient_not_a_verdict():
    f, lab, y, g = _data(n_lab=5)
    res = paired_ppi(f, lab, y, g, min_labelled=10)
    assert res.verdict_corrected == "insufficient"
    with pytest.raises(ValueError):
        ppi_mean_difference(f, [0, 0], [0.0, 1.0], [0.0, 1.0])


def test_differential_error_counts_rates_and_fisher():
    # level a: 20 human-0 turns, judge says 1 on 8; level b: 20 human-0 turns, judge says 1 on 1
    ja, ha = [1] * 8 + [0] * 12 + [1] * 5, [0] * 20 + [1] * 5
    jb, hb = [1] * 1 + [0] * 19 + [1] * 4 + [0], [0] * 20 + [1] * 5
    d = differential_error(ja, ha, jb, hb, "fpr")
    assert (d.rate_a, d.n_a, d.rate_b, d.n_b) == (0.4, 20, 0.05, 20)
    assert d.p == pytest.approx(stats.fisher_exact([[8, 12], [1, 19]])[1])
    fnr = differential_error(ja, ha, jb, hb, "fnr")
    assert (fnr.rate_a, fnr.rate_b) == (0.0, 0.2)


def test_power_grows_with_the_sample_and_the_detectable_difference_shrinks():
    assert power_two_rates(0.1, 0.1, 50, 50) < power_two_rates(0.1, 0.1, 400, 400)
    assert 0.75 <= power_two_rates(0.1, minimum_detectable(0.1, 200, 200), 200, 200) <= 0.85
    assert minimum_detectable(0.1, 400, 400) < minimum_detectable(0.1, 100, 100)
    assert math.isnan(power_two_rates(0.1, 0.1, 0, 10))
