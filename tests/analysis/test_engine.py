"""The batched engine (analysis.engine) equals the per-row statistics it replaced: a frozen
copy of the old algorithm (stats_reference.py) and scipy, on a few hundred random rows; and the
shared numeric conventions (round_diffs, percentile_ci)."""

import math

import numpy as np
import pytest
from scipy import stats as ss

from edufair_metrics.analysis import engine
from tests.analysis import stats_reference as ref

FIELDS = ("n_pairs", "n_zero", "w_plus", "w_minus", "r", "p", "ci_low", "ci_high", "sufficient")


def _random_rows(seed: int, count: int) -> list[np.ndarray]:
    """Differences like EduFair's: rates of 2-6 judged turns (ties, zeros), continuous metrics,
    mostly-zero rows, small and large n (scipy's exact, permutation and normal branches)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(count):
        n = int(rng.choice([15, 20, 35, 50, 51, 52, 80, 150, 300, 640]))
        kind = i % 6
        if kind == 0:
            d = rng.normal(rng.normal(0, 0.3), 1, n)
        elif kind == 1:
            m = int(rng.integers(2, 7))
            d = rng.integers(0, m + 1, n) / m - rng.integers(0, m + 1, n) / m
        elif kind == 2:
            d = rng.integers(0, 6, n) / 5 - rng.integers(0, 3, n) / 2
        elif kind == 3:
            d = np.where(rng.random(n) < 0.85, 0.0, rng.integers(-2, 4, n) / 3)
        elif kind == 4:
            d = np.round(rng.normal(0.2, 1, n), 1)
        else:
            d = rng.integers(5, 12, n) / rng.integers(1, 4, n) - rng.integers(5, 12, n) / rng.integers(1, 4, n)
        rows.append(engine.round_diffs(d))
    # scipy's permutation branch (n <= 13 with ties; slow in scipy, so only two) and edge cases
    rows += [np.array([1, -1, 0.5, 0.5, 2, 0, 1, 1.5]), rng.normal(size=3), np.zeros(40), np.r_[np.zeros(39), 1 / 3],
             np.full(20, -0.5), np.zeros(5)]
    return rows


@pytest.mark.parametrize("seed", [0, 1])
def test_paired_rows_equal_frozen_old_algorithm(seed):
    rows = _random_rows(seed, 150)
    res = engine.paired_rows(rows, n_boot=200, seed=seed + 3, min_pairs=5)
    for i, d in enumerate(rows):
        old = ref.contrast_from_diffs(d, n_boot=200, seed=seed + 3, min_pairs=5)
        new = res.row(i)
        for k in FIELDS:
            a, b = old[k], new[k]
            if isinstance(a, float) and math.isnan(a):
                assert math.isnan(b), (i, k)
            else:
                assert b == pytest.approx(a, abs=1e-12, rel=0), (i, len(d), k, a, b)


def test_p_equals_scipy_in_every_branch():
    rng = np.random.default_rng(9)
    rows = [np.round(rng.integers(-2, 3, n) / 2, 12) for n in (16, 30, 51, 60, 200, 999)]  # ties + zeros
    rows += [rng.normal(size=n) for n in (16, 40, 50, 51, 300)]  # exact branch below 51
    res = engine.paired_rows(rows, n_boot=10, seed=0, min_pairs=15)
    for i, d in enumerate(rows):
        assert res.p[i] == pytest.approx(ss.wilcoxon(d, zero_method="pratt").pvalue, abs=1e-12, rel=0)
        assert res.r[i] == pytest.approx(ref.rank_biserial(d)[2], abs=1e-12, rel=0)


def test_resampled_r_with_absent_pairs_equals_reference():
    rng = np.random.default_rng(1)
    for n, k in ((40, 3), (300, 7), (120, 0), (700, 0)):
        d = np.round(rng.integers(-k, k + 1, n) / max(k, 1), 12) if k else rng.normal(size=n)
        d[rng.random(n) < 0.1] = np.nan
        idx = rng.integers(0, n, size=(250, n))
        np.testing.assert_allclose(engine.resampled_r(d, engine.multiplicities(idx, n)),
                                   ref.bootstrap_rank_biserial(d, idx), rtol=0, atol=1e-12)


def test_flip_matrix_is_one_stream_for_every_n():
    engine._FLIPS.clear()
    small = engine.flip_matrix(30, 100, 5).copy()
    big = engine.flip_matrix(5000, 100, 5)
    assert np.array_equal(big[:30], small) and set(np.unique(big)) == {-1.0, 1.0}
    assert not np.array_equal(engine.flip_matrix(30, 100, 6), small)


def test_noise_floor_matches_the_sign_flip_distribution():
    rng = np.random.default_rng(4)
    rows = [np.round(rng.integers(0, 4, n) / 3 - rng.integers(0, 4, n) / 3, 12) for n in (60, 300, 900)]
    res = engine.paired_rows(rows, n_boot=2000, seed=0, min_pairs=15)
    for i, d in enumerate(rows):
        ranks = ss.rankdata(np.abs(d))
        nz = d != 0
        # analytic: r under random signs has mean 0 and sd sqrt(sum rank^2) / sum rank (nonzero d)
        sd = math.sqrt(np.sum(ranks[nz] ** 2)) / np.sum(ranks[nz])
        assert res.null_abs_r[i] == pytest.approx(math.sqrt(2 / math.pi) * sd, rel=0.06)
        # same data, same seed -> same floor; the floor does not depend on the data's signs
        again = engine.paired_rows([d, -d], n_boot=2000, seed=0, min_pairs=15)
        assert again.null_abs_r[0] == res.null_abs_r[i] == pytest.approx(again.null_abs_r[1], abs=1e-12)
        assert 0 < res.p_perm[i] <= 1
        assert engine.paired_rows([d], n_boot=2000, seed=1, min_pairs=15).null_abs_r[0] != res.null_abs_r[i]


def test_p_perm_small_for_a_real_shift_and_all_zero_rows():
    rng = np.random.default_rng(2)
    shifted = np.round(rng.normal(0.8, 1, 200), 12)
    res = engine.paired_rows([shifted, np.zeros(30)], n_boot=500, seed=0, min_pairs=15)
    assert res.p_perm[0] == pytest.approx(1 / 501)
    assert (res.null_abs_r[1], res.p_perm[1], res.r[1], res.p[1]) == (0, 1, 0, 1)


def test_round_diffs_ties_equal_rates_and_keeps_nan():
    d = engine.round_diffs([2 / 3 - 1 / 3, 1 / 3 - 0, math.nan, -0.1 - 0.2])
    assert d[0] == d[1] and math.isnan(d[2]) and d[3] == -0.3
    assert engine.DIFF_DECIMALS == 12


def test_percentile_ci_drops_nan_and_takes_alpha_as_given():
    rng = np.random.default_rng(3)
    v = rng.normal(size=501)
    with_nan = np.r_[v, np.nan, np.nan]
    lo, hi = engine.percentile_ci(with_nan)
    assert (lo, hi) == tuple(np.percentile(v, [100 * (1 - 0.95) / 2, 100 * (1 - (1 - 0.95) / 2)]))
    assert engine.percentile_ci(v, alpha=0.05) == tuple(np.percentile(v, [2.5, 97.5]))
    assert engine.percentile_ci(v, alpha=0.01)[0] == np.percentile(v, 0.5)
    lo, hi = engine.percentile_ci(v, methods=("lower", "higher"))
    assert lo in v and hi in v and lo <= engine.percentile_ci(v)[0]
    assert all(math.isnan(x) for x in engine.percentile_ci(np.full(4, np.nan)))
