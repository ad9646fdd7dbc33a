"""Frozen copy of the per-row statistics before the batched engine (EduFair 0.x): the
reference ``analysis.engine`` must equal to 1e-12; and of the pandas pivot pairing the grid and
compare used before ``analysis.cells``, the reference of ``cell_matrices`` /
``pair_differences``. Not a test module; imported by tests/analysis/test_engine.py and bench_stats.py."""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy.stats import rankdata, wilcoxon


def rank_biserial(d):
    d = np.asarray(d, dtype=float)
    if d.size == 0:
        return 0.0, 0.0, 0.0
    ranks = rankdata(np.abs(d))
    w_plus = float(ranks[d > 0].sum())
    w_minus = float(ranks[d < 0].sum())
    tot = w_plus + w_minus
    return w_plus, w_minus, ((w_plus - w_minus) / tot if tot > 0 else 0.0)


def bootstrap_rank_biserial(d, idx):
    d = np.asarray(d, dtype=float)
    idx = np.asarray(idx)
    B = idx.shape[0]
    valid = ~np.isnan(d)
    _, inv = np.unique(np.abs(d[valid]), return_inverse=True)
    K = int(inv.max()) + 1 if inv.size else 0
    group = np.full(d.shape, K, dtype=np.int64)
    group[valid] = inv.ravel()
    sign = np.zeros(d.shape, dtype=np.int64)
    sign[valid] = np.sign(d[valid]).astype(np.int64)
    flat = group[idx] + (np.arange(B, dtype=np.int64) * (K + 1))[:, None]
    counts = np.bincount(flat.ravel(), minlength=B * (K + 1)).reshape(B, K + 1)
    counts[:, K] = 0
    rank2 = 2 * np.cumsum(counts, axis=1) - counts + 1
    rk = rank2.ravel()[flat]
    s = sign[idx]
    diff = (rk * s).sum(axis=1)
    tot = (rk * np.abs(s)).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(tot > 0, diff / np.where(tot > 0, tot, 1), 0.0)
    r[counts.sum(axis=1) == 0] = np.nan
    return r


def percentile_ci(values, level=0.95):
    values = values[~np.isnan(values)]
    if values.size == 0:
        return math.nan, math.nan
    alpha = (1 - level) / 2
    lo, hi = np.percentile(values, [100 * alpha, 100 * (1 - alpha)])
    return float(lo), float(hi)


def wilcoxon_p(d):
    if not np.any(d != 0):
        return 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = wilcoxon(d, zero_method="pratt", alternative="two-sided")
    p = float(res.pvalue)
    return 1.0 if math.isnan(p) else p


def contrast_from_diffs(d, *, n_boot, seed, min_pairs):
    """dict(n_pairs, n_zero, w_plus, w_minus, r, p, ci_low, ci_high, sufficient) as before."""
    n = int(d.size)
    n_zero = int(np.sum(d == 0))
    if n < max(min_pairs, 1):
        nan = math.nan
        return dict(n_pairs=n, n_zero=n_zero, w_plus=nan, w_minus=nan, r=nan, p=nan, ci_low=nan, ci_high=nan,
                    sufficient=False)
    w_plus, w_minus, r = rank_biserial(d)
    p = wilcoxon_p(d)
    if n_zero == n:
        lo = hi = 0.0
    else:
        idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
        lo, hi = percentile_ci(bootstrap_rank_biserial(d, idx))
    return dict(n_pairs=n, n_zero=n_zero, w_plus=w_plus, w_minus=w_minus, r=float(r), p=p, ci_low=lo, ci_high=hi,
                sufficient=True)


# ---- the pandas pivot pairing (before analysis.cells) --------------------------------------


def wide_scores(df):
    """One row per (tutor, domain, condition, metric, question_id), one column per level."""
    keys = ["tutor", "domain", "condition", "metric", "question_id", "level"]
    if df.duplicated(keys, keep=False).any():
        raise ValueError("duplicate dialogue scores")
    wide = df.pivot(index=keys[:-1], columns="level", values="value")
    wide.columns = [str(c) for c in wide.columns]
    return wide.astype(float)


def cell_groups(wide):
    """``((tutor, domain, condition, metric), sub)``: one column per level, one row per question."""
    return wide.groupby(level=["tutor", "domain", "condition", "metric"], sort=True)


def _level_vector(wide, levels):
    if any(lv not in wide.columns for lv in levels):
        return None
    return wide[list(levels)].mean(axis=1, skipna=False).to_numpy(dtype=float)


def pair_differences(sub, spec):
    """``(a levels, b levels, pair label, d)`` per pair of ``spec`` whose levels ``sub`` has; ``d``
    NaN where a question lacks a level (multilevel: any of its levels), not rounded."""
    complete = None
    if spec.kind == "multilevel":
        if any(lv not in sub.columns for lv in spec.levels):
            return
        complete = sub[list(spec.levels)].notna().all(axis=1).to_numpy()
    for a_lv, b_lv in spec.pairs:
        va, vb = _level_vector(sub, a_lv), _level_vector(sub, b_lv)
        if va is None or vb is None:
            continue
        d = va - vb
        if complete is not None:
            d = np.where(complete, d, np.nan)
        yield a_lv, b_lv, spec.pair_label(a_lv, b_lv), d
