"""Power: the smallest |r| a run can detect, so that "no violation" is read correctly.

Model (documented, closed form; deterministic)
    A contrast has ``n`` pairs of which a share ``zero_share`` have a zero difference. The zeros
    take the lowest Pratt ranks 1..n0 (n0 = round(zero_share · n)); the other differences are
    taken untied, with ranks n0+1..n, and their signs are independent of their sizes with
    P(+) = (1 + ρ) / 2. Then the expected rank-biserial r is ρ, and the Wilcoxon statistic
    D = W+ - W- has mean ρ·T and variance (1 - ρ²)·S, where T = Σ ranks and S = Σ ranks² of the
    non-zero differences (under H0, ρ = 0: mean 0, variance S — Pratt's null). The two-sided
    test at level α rejects when |D| > z_{1-α/2}·√S (the normal approximation scipy uses for
    n > 50), so

        power(ρ) = Φ((ρT - z√S) / √((1-ρ²)S)) + Φ((-ρT - z√S) / √((1-ρ²)S)).

    :func:`min_detectable_r` solves power(ρ) = 0.80 for ρ (NaN when even ρ → 1 is not enough).
    Ties among the non-zero differences (rates of a few judged turns) lower S and so slightly
    raise the power: the model is conservative for them. A violation needs the bootstrap CI of r
    to exclude 0, which at 95% behaves like the test at α = 0.05. :func:`power_by_simulation`
    checks the formula by simulation (seeded) and the tests compare them.

FDR
    Under Benjamini–Hochberg the per-test level lies between α/m (no real effect among the m
    tests of the family) and α (all real). :func:`power_table` reports both bounds: ``mde_r``
    (α = 0.05, the paper's raw violations) and ``mde_r_fdr`` (α/m, the FDR violations when
    few units are biased).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from edufair_metrics.analysis.engine import wilcoxon_normal_p
from edufair_metrics.analysis.ses import tagged_ses_summary
from edufair_metrics.errors import EduFairError

DEFAULT_POWER = 0.80
DEFAULT_ALPHA = 0.05


def _rank_moments(n: int, zero_share: float) -> tuple[float, float]:
    n0 = int(round(zero_share * n))
    k = np.arange(n0 + 1, n + 1, dtype=float)
    return float(k.sum()), float((k * k).sum())


def wilcoxon_power(r: float, n: int, zero_share: float = 0.0, alpha: float = DEFAULT_ALPHA) -> float:
    """Power of the two-sided Wilcoxon (Pratt) test at level ``alpha`` for an effect r (model in
    the module docstring)."""
    from scipy.special import ndtr, ndtri

    _check(n, zero_share, alpha)
    rho = abs(float(r))
    if rho >= 1:
        return 1.0
    T, S = _rank_moments(n, zero_share)
    if S == 0:
        return 0.0
    z = -ndtri(alpha / 2)
    sd = math.sqrt((1 - rho * rho) * S)
    return float(ndtr((rho * T - z * math.sqrt(S)) / sd) + ndtr((-rho * T - z * math.sqrt(S)) / sd))


def min_detectable_r(n: int, zero_share: float = 0.0, *, power: float = DEFAULT_POWER,
                     alpha: float = DEFAULT_ALPHA) -> float:
    """Smallest |r| detected with probability ``power`` (80%) by the two-sided test at ``alpha``
    with ``n`` pairs and a share ``zero_share`` of zero differences; NaN if none below 1."""
    from scipy.optimize import brentq

    _check(n, zero_share, alpha)
    if not 0 < power < 1:
        raise EduFairError(f"power must lie in (0, 1), got {power}")
    hi = 1 - 1e-9
    if wilcoxon_power(hi, n, zero_share, alpha) < power:
        return math.nan
    if wilcoxon_power(0.0, n, zero_share, alpha) >= power:
        return 0.0
    return float(brentq(lambda x: wilcoxon_power(x, n, zero_share, alpha) - power, 0.0, hi, xtol=1e-6))


def power_by_simulation(r: float, n: int, zero_share: float = 0.0, *, alpha: float = DEFAULT_ALPHA,
                        n_sim: int = 2000, seed: int = 0) -> float:
    """Share of ``n_sim`` simulated contrasts (the model of the module docstring, |d| ~ U(0, 1),
    signs + with probability (1 + r) / 2) whose two-sided Wilcoxon p is below ``alpha``. The p is
    scipy's asymptotic one with Pratt's zero correction (``engine.wilcoxon_normal_p``, equal to
    ``scipy.stats.wilcoxon`` for n > 50), computed for all simulations at once; seeded."""
    _check(n, zero_share, alpha)
    rng = np.random.default_rng(seed)
    n0 = int(round(zero_share * n))
    mag = rng.uniform(0.01, 1, size=(int(n_sim), n - n0))
    positive = rng.random((int(n_sim), n - n0)) < (1 + r) / 2
    ranks = np.argsort(np.argsort(mag, axis=1), axis=1) + n0 + 1  # zeros take ranks 1..n0
    w_plus = np.where(positive, ranks, 0).sum(axis=1).astype(float)
    p = wilcoxon_normal_p(w_plus, np.full(w_plus.shape, n), np.full(w_plus.shape, n0), np.zeros(w_plus.shape))
    return float(np.mean(p < alpha))


def power_table(grid, *, by: Sequence[str] = ("tutor",), kind: str = "pedagogical", ses_summary: str | None = None,
                power: float = DEFAULT_POWER, alpha: float = DEFAULT_ALPHA):
    """Per ``by`` group, over the sufficient headline rows of metric ``kind``: ``rows`` (m),
    ``n_median`` (median pairs per contrast, rounded down), ``zero_share`` (Σ zero differences / Σ pairs),
    ``mde_r`` (smallest |r| found with 80% power at α = 0.05, the raw-violation rule) and
    ``mde_r_fdr`` (the same at α/m: the FDR rule when few units are biased). For summary.md.
    The headline rows are the grid's (tagged by ``contrast_grid``); ``ses_summary``, if given, must
    agree with them."""
    import pandas as pd

    cols = list(by) + ["rows", "n_median", "zero_share", "mde_r", "mde_r_fdr"]
    if len(grid):
        tagged_ses_summary(grid, ses_summary)
    g = grid[grid["headline"] & grid["sufficient"] & (grid["metric_kind"] == kind)] if len(grid) else grid
    if len(g) == 0:
        return pd.DataFrame(columns=cols)
    out = []
    for key, sub in g.groupby(list(by), sort=True):
        key = key if isinstance(key, tuple) else (key,)
        n_med = int(math.floor(float(sub["n_pairs"].median())))  # rounded down: conservative
        zs = float(sub["n_zero"].sum() / sub["n_pairs"].sum())
        m = len(sub)
        out.append((*key, m, n_med, zs, min_detectable_r(n_med, zs, power=power, alpha=alpha),
                    min_detectable_r(n_med, zs, power=power, alpha=alpha / m)))
    return pd.DataFrame(out, columns=cols)


def _check(n: int, zero_share: float, alpha: float) -> None:
    if int(n) < 1:
        raise EduFairError(f"power needs n >= 1 pairs, got {n}")
    if not 0 <= zero_share < 1:
        raise EduFairError(f"zero_share must lie in [0, 1), got {zero_share}")
    if not 0 < alpha < 1:
        raise EduFairError(f"alpha must lie in (0, 1), got {alpha}")
