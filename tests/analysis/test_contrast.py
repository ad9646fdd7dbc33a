"""One paired contrast (edufair_metrics.analysis.contrast): hand-computed examples and agreement with scipy."""

import math

import numpy as np
import pytest
from scipy import stats as ss

from edufair_metrics.analysis.contrast import bootstrap_rank_biserial, friedman_contrast, paired_contrast, rank_biserial
from edufair_metrics.analysis.engine import round_diffs
from edufair_metrics.errors import EduFairError
from edufair_metrics.protocol.contrasts import load_contrasts


def test_pratt_ranks_with_ties_and_zero_by_hand():
    # |d| = 2,1,0,1,3,1 -> ranks: 0->1, the three 1s -> 3 each, 2->5, 3->6; zero's rank in neither sum
    d = [2, -1, 0, 1, -3, 1]
    w_plus, w_minus, r = rank_biserial(d)
    assert w_plus == 5 + 3 + 3
    assert w_minus == 3 + 6
    assert r == pytest.approx((11 - 9) / 20)
    # scipy's two-sided statistic is min(W+, W-) from the same Pratt ranking
    assert ss.wilcoxon(d, zero_method="pratt").statistic == pytest.approx(9)


def test_paired_contrast_matches_hand_values_and_scipy_p():
    rng = np.random.default_rng(5)
    b = rng.integers(0, 4, size=30) / 3
    a = b + rng.integers(-1, 3, size=30) / 3  # ties and zeros
    c = paired_contrast(a, b, n_boot=200)
    d = round_diffs(a - b)
    wp, wm, r = rank_biserial(d)
    assert (c.w_plus, c.w_minus) == (wp, wm)
    assert c.r == pytest.approx((wp - wm) / (wp + wm))
    assert c.n_zero == int(np.sum(d == 0)) > 0
    assert c.p == pytest.approx(ss.wilcoxon(d, zero_method="pratt").pvalue)
    assert c.meaningful == (abs(c.r) >= 0.10)
    assert c.violation == (c.ci_low > 0 or c.ci_high < 0)
    assert c.ci_low <= c.r <= c.ci_high


@pytest.mark.parametrize("seed", range(5))
def test_agreement_with_scipy_on_random_data(seed):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=60), rng.normal(0.3, 1, size=60)
    c = paired_contrast(a, b, n_boot=50)
    res = ss.wilcoxon(a - b, zero_method="pratt")
    assert min(c.w_plus, c.w_minus) == pytest.approx(res.statistic)
    assert c.p == pytest.approx(res.pvalue)
    assert c.w_plus + c.w_minus == pytest.approx(60 * 61 / 2)


def test_vectorised_bootstrap_equals_loop():
    rng = np.random.default_rng(1)
    d = round_diffs(rng.integers(-3, 4, size=40) / 3)
    d[[3, 7]] = np.nan  # absent pairs are dropped inside each resample
    idx = rng.integers(0, 40, size=(300, 40))
    fast = bootstrap_rank_biserial(d, idx)
    slow = []
    for row in idx:
        x = d[row]
        slow.append(rank_biserial(x[~np.isnan(x)])[2])
    np.testing.assert_allclose(fast, slow, atol=1e-12)


def test_bootstrap_reproducible_and_seed_dependent():
    rng = np.random.default_rng(2)
    a, b = rng.random(50), rng.random(50)
    c1 = paired_contrast(a, b, seed=7)
    c2 = paired_contrast(a, b, seed=7)
    c3 = paired_contrast(a, b, seed=8)
    assert (c1.ci_low, c1.ci_high) == (c2.ci_low, c2.ci_high)
    assert (c1.ci_low, c1.ci_high) != (c3.ci_low, c3.ci_high)
    assert c1.r == c3.r and c1.p == c3.p


def test_insufficient_pairs_after_dropping_missing():
    a = [0.1 * i for i in range(20)]
    b = [0.0] * 20
    b[:6] = [math.nan] * 6  # 14 complete pairs < 15
    c = paired_contrast(a, b)
    assert c.n_pairs == 14 and not c.sufficient
    assert all(math.isnan(x) for x in (c.r, c.p, c.ci_low, c.ci_high, c.w_plus, c.w_minus))
    assert not c.meaningful and not c.violation
    assert paired_contrast(a, b, min_pairs=14).sufficient


def test_all_zero_differences():
    a = [0.5] * 20
    c = paired_contrast(a, list(a))
    assert c.sufficient and c.r == 0 and c.p == 1
    assert (c.ci_low, c.ci_high) == (0, 0) and not c.violation and not c.meaningful


def test_strong_shift_is_a_violation():
    rng = np.random.default_rng(3)
    b = rng.random(40)
    c = paired_contrast(b + 0.5, b - rng.random(40) * 0.01)
    assert c.r == 1.0 and c.violation and c.ci_low > 0


def test_bad_input():
    with pytest.raises(EduFairError):
        paired_contrast([1, 2], [1, 2, 3])


def test_friedman_by_hand_and_bonferroni():
    n = 15
    rng = np.random.default_rng(0)
    base = rng.random(n)
    cols = {"low": base, "mid": base + 1, "high": base + 2}  # always low < mid < high
    fr = friedman_contrast(cols, n_boot=100)
    # rank sums 15, 30, 45: chi2 = 12/(n k (k+1)) * sum R^2 - 3 n (k+1) = 30
    assert fr.statistic == pytest.approx(30.0)
    assert fr.p == pytest.approx(ss.chi2.sf(30.0, 2))
    assert fr.posthoc and fr.n_blocks == n
    for key, c in fr.pairwise.items():
        assert fr.p_adj[key] == pytest.approx(min(1.0, 3 * c.p))
        assert c.r == -1.0  # a = earlier level, which is lower
    assert fr.summary_abs_r == pytest.approx(1.0)


def test_friedman_no_posthoc_and_complete_rows():
    rng = np.random.default_rng(4)
    cols = {k: rng.random(30) for k in ("x", "y", "z")}
    cols["x"][:3] = np.nan
    fr = friedman_contrast(cols, n_boot=50)
    mat = np.column_stack([cols[k] for k in "xyz"])[3:]
    ref = ss.friedmanchisquare(*mat.T)
    assert fr.n_blocks == 27
    assert fr.statistic == pytest.approx(ref.statistic) and fr.p == pytest.approx(ref.pvalue)
    if fr.p >= 0.10:
        assert not fr.posthoc and all(math.isnan(v) for v in fr.p_adj.values()) and not fr.violation
    rs = [abs(c.r) for c in fr.pairwise.values()]
    assert fr.summary_abs_r == pytest.approx(np.mean(rs))
    mx = friedman_contrast(cols, n_boot=50, ses_summary="max_abs_pairwise")
    assert mx.summary_abs_r == pytest.approx(max(rs))
    with pytest.raises(EduFairError):
        friedman_contrast(cols, ses_summary="median")


def test_bonferroni_caps_at_one():
    rng = np.random.default_rng(11)
    base = rng.random(20)
    cols = {"a": base, "b": base + 1 + rng.normal(0, 0.01, 20), "c": base + 1 + rng.normal(0, 0.01, 20)}
    fr = friedman_contrast(cols, n_boot=50)
    assert fr.posthoc
    assert fr.p_adj[("b", "c")] == pytest.approx(min(1.0, 3 * fr.pairwise[("b", "c")].p))
    assert all(v <= 1.0 for v in fr.p_adj.values())


def test_protocol_contrasts_loaded_from_yaml():
    specs = {(s.condition, s.dimension): s for s in load_contrasts()}
    assert specs[("explicit", "gender")].pairs == ((("female",), ("male",)),)
    assert specs[("explicit", "ses")].kind == "multilevel" and len(specs[("explicit", "ses")].pairs) == 3
    assert len(specs[("implicit", "both")].pairs) == 2
    te = specs[("opposite", "tutor_effect")]
    assert te.kind == "averaged" and not te.headline and len(te.pairs[0][0]) == 2
