"""Agreement between two raters of binary labels (a judge vs humans, a judge vs a detector, two
judges): percent agreement, Cohen's κ and Krippendorff's α (nominal), with percentile bootstrap
CIs over the rated items.

Definitions (two raters, every item rated by both; items where either side has no value are left
out before anything is computed, and ``n`` counts the items kept):
    percent_agreement  share of items with the same label
    cohen_kappa        (p_o − p_e) / (1 − p_e), p_e from each rater's own marginal rates
                       (``sklearn.metrics.cohen_kappa_score``); NaN when p_e = 1 (both raters
                       constant and equal: κ is undefined, not 1)
    krippendorff_alpha 1 − D_o / D_e, nominal, from the pooled values (the ``krippendorff``
                       package); NaN when only one value occurs at all
    CIs                95% percentile bootstrap: the *clusters* are resampled with replacement
                       ``n_boot`` times (``numpy.random.default_rng(seed)``), each with all its
                       items: the turns of one dialogue (or the responses of one MRBench
                       conversation) share a history and are not independent, and resampling
                       them one by one gives intervals that are too narrow (nominal 95% covering
                       79–85% on clustered labels; ``tests/analysis/sim_threats.py``). Without
                       ``clusters`` every item is its own cluster (the old turn bootstrap).
                       Resamples where the statistic is undefined are left out of the
                       percentiles (``engine.percentile_ci``, the interval of every EduFair
                       bootstrap).
    Order          the bootstrap resamples positions in a canonical order (items sorted by
                   their label pair; clusters by their 2×2 counts), so no CI depends on the order
                   the items were read in, nor on the clusters' names.

The point estimates come from the maintained libraries. The bootstrap uses the closed forms for
two raters and two categories on the 2×2 counts of every resample at once (vectorised, no loop
over resamples); tests check that these equal the libraries on random data.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np

from edufair_metrics.analysis.engine import CI_LEVEL, percentile_ci
from edufair_metrics.errors import EduFairError

DEFAULT_AGREEMENT_N_BOOT = 1000

AGREEMENT_COLUMNS = [
    "metric", "n", "clusters", "judge_rate", "human_rate", "percent_agreement", "percent_agreement_ci_low",
    "percent_agreement_ci_high", "cohen_kappa", "cohen_kappa_ci_low", "cohen_kappa_ci_high",
    "krippendorff_alpha", "krippendorff_alpha_ci_low", "krippendorff_alpha_ci_high",
]


def paired_labels(a: Sequence[Any], b: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """The items where both raters have a 0/1 value (None / NaN = no value), as int arrays."""
    if len(a) != len(b):
        raise EduFairError(f"agreement needs the same items from both raters ({len(a)} vs {len(b)} labels)")
    keep_a, keep_b = [], []
    for x, y in zip(a, b):
        if _missing(x) or _missing(y):
            continue
        for v in (x, y):
            if v not in (0, 1):
                raise EduFairError(f"agreement labels must be 0 or 1, got {v!r}")
        keep_a.append(int(x))
        keep_b.append(int(y))
    return np.asarray(keep_a, dtype=int), np.asarray(keep_b, dtype=int)


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def percent_agreement(a: Sequence[int], b: Sequence[int]) -> float:
    x, y = paired_labels(a, b)
    return float(np.mean(x == y)) if x.size else math.nan


def cohen_kappa(a: Sequence[int], b: Sequence[int]) -> float:
    """Cohen's κ (sklearn); NaN when undefined (no items, or both raters constant and equal)."""
    x, y = paired_labels(a, b)
    if x.size == 0:
        return math.nan
    if np.all(x == x[0]) and np.all(y == x[0]):
        return math.nan  # p_e = 1: sklearn would divide 0 by 0
    from sklearn.metrics import cohen_kappa_score

    return float(cohen_kappa_score(x, y, labels=[0, 1]))


def krippendorff_alpha(a: Sequence[int], b: Sequence[int]) -> float:
    """Krippendorff's α, nominal (the ``krippendorff`` package); NaN when only one value occurs."""
    x, y = paired_labels(a, b)
    if x.size == 0 or len(set(x.tolist()) | set(y.tolist())) < 2:
        return math.nan
    import krippendorff

    return float(krippendorff.alpha(reliability_data=np.vstack([x, y]).astype(float), level_of_measurement="nominal"))


# ---- closed forms on 2x2 counts (vectorised over resamples) ---------------------------------


def _counts(x: np.ndarray, y: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per resample (rows of ``idx``): n11, n10, n01, n00 (x first, y second)."""
    xs, ys = x[idx], y[idx]
    n11 = np.sum((xs == 1) & (ys == 1), axis=1)
    n10 = np.sum((xs == 1) & (ys == 0), axis=1)
    n01 = np.sum((xs == 0) & (ys == 1), axis=1)
    n00 = np.sum((xs == 0) & (ys == 0), axis=1)
    return n11, n10, n01, n00


def kappa_from_counts(n11, n10, n01, n00) -> np.ndarray:
    n = np.asarray(n11 + n10 + n01 + n00, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        po = (n11 + n00) / n
        px, py = (n11 + n10) / n, (n11 + n01) / n
        pe = px * py + (1 - px) * (1 - py)
        k = (po - pe) / (1 - pe)
    return np.where(np.isclose(pe, 1.0), np.nan, k)


def alpha_from_counts(n11, n10, n01, n00) -> np.ndarray:
    """Nominal α for two coders without missing values: 1 − (m − 1)(n10 + n01) / (m_0 m_1), with
    m = 2N pooled values, m_1 = 2 n11 + n10 + n01 of them 1 and m_0 = m − m_1."""
    m = 2.0 * np.asarray(n11 + n10 + n01 + n00, dtype=float)
    m1 = 2.0 * n11 + n10 + n01
    m0 = m - m1
    with np.errstate(divide="ignore", invalid="ignore"):
        a = 1.0 - (m - 1) * (n10 + n01) / (m0 * m1)
    return np.where((m0 == 0) | (m1 == 0), np.nan, a)


@dataclass(frozen=True)
class Agreement:
    """Agreement of rater x (the judge) with rater y (humans, a detector or a second judge)."""

    n: int
    x_rate: float
    y_rate: float
    percent_agreement: float
    percent_agreement_ci_low: float
    percent_agreement_ci_high: float
    cohen_kappa: float
    cohen_kappa_ci_low: float
    cohen_kappa_ci_high: float
    krippendorff_alpha: float
    krippendorff_alpha_ci_low: float
    krippendorff_alpha_ci_high: float
    clusters: int = 0  # the resampled units (dialogues / conversations; = n without clusters)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def as_row(self, metric: str, x_name: str = "judge", y_name: str = "human") -> dict[str, Any]:
        d = self.to_dict()
        row = {"metric": metric, "n": d.pop("n"), "clusters": d.pop("clusters"), f"{x_name}_rate": d.pop("x_rate"),
               f"{y_name}_rate": d.pop("y_rate")}
        row.update(d)
        return row


def agreement(x: Sequence[Any], y: Sequence[Any], *, n_boot: int = DEFAULT_AGREEMENT_N_BOOT, seed: int = 0,
              clusters: Sequence[Any] | None = None) -> Agreement:
    """Point estimates and bootstrap CIs for two raters' labels of the same items (None = no
    value). ``clusters``: per item its cluster (a dialogue, an MRBench conversation), resampled
    whole; None: every item alone."""
    if n_boot < 1:
        raise EduFairError(f"n_boot must be >= 1, got {n_boot}")
    if clusters is not None and len(clusters) != len(x):
        raise EduFairError(f"agreement needs one cluster per item ({len(clusters)} clusters for {len(x)} items)")
    a, b = paired_labels(x, y)
    nan = math.nan
    n = int(a.size)
    if n == 0:
        return Agreement(0, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, 0)
    if clusters is None:
        # the bootstrap resamples positions: in a canonical order of the pairs, its CIs depend only on
        # the pairs, never on the order the items were read in (samples files, shards, ranks)
        order = np.lexsort((b, a))
        a, b = a[order], b[order]
        idx = np.random.default_rng(seed).integers(0, n, size=(int(n_boot), n))
        counts = _counts(a, b, idx)
        n_clusters = n
    else:
        kept = [c for c, u, v in zip(clusters, x, y) if not (_missing(u) or _missing(v))]
        table = _cluster_counts(a, b, kept)
        n_clusters = int(table.shape[0])
        idx = np.random.default_rng(seed).integers(0, n_clusters, size=(int(n_boot), n_clusters))
        counts = _resampled_counts(table, idx)
    n_res = counts[0] + counts[1] + counts[2] + counts[3]
    with np.errstate(invalid="ignore", divide="ignore"):
        pa = (counts[0] + counts[3]) / n_res
    pa_ci = percentile_ci(pa, CI_LEVEL)
    kappa_ci = percentile_ci(kappa_from_counts(*counts), CI_LEVEL)
    alpha_ci = percentile_ci(alpha_from_counts(*counts), CI_LEVEL)
    return Agreement(
        n=n,
        x_rate=float(a.mean()),
        y_rate=float(b.mean()),
        percent_agreement=percent_agreement(a, b),
        percent_agreement_ci_low=pa_ci[0],
        percent_agreement_ci_high=pa_ci[1],
        cohen_kappa=cohen_kappa(a, b),
        cohen_kappa_ci_low=kappa_ci[0],
        cohen_kappa_ci_high=kappa_ci[1],
        krippendorff_alpha=krippendorff_alpha(a, b),
        krippendorff_alpha_ci_low=alpha_ci[0],
        krippendorff_alpha_ci_high=alpha_ci[1],
        clusters=n_clusters,
    )


def _cluster_counts(a: np.ndarray, b: np.ndarray, clusters: Sequence[Any]) -> np.ndarray:
    """Per cluster its 2×2 counts (n11, n10, n01, n00), rows in a canonical order (sorted by the
    counts: independent of the items' order and of the clusters' names)."""
    keys = np.asarray([str(c) for c in clusters], dtype=object)
    _, inv = np.unique(keys, return_inverse=True)
    cell = np.where(a == 1, np.where(b == 1, 0, 1), np.where(b == 1, 2, 3))
    table = np.zeros((int(inv.max()) + 1, 4), dtype=np.int64)
    np.add.at(table, (inv, cell), 1)
    order = np.lexsort(table.T[::-1])
    return table[order]


def _resampled_counts(table: np.ndarray, idx: np.ndarray, chunk: int = 100) -> tuple[np.ndarray, ...]:
    """n11, n10, n01, n00 of each resample of the clusters (rows of ``idx``)."""
    sums = np.empty((idx.shape[0], 4), dtype=np.int64)
    for s in range(0, idx.shape[0], chunk):
        sums[s:s + chunk] = table[idx[s:s + chunk]].sum(axis=1)
    return tuple(sums[:, k] for k in range(4))


__all__ = [
    "AGREEMENT_COLUMNS", "Agreement", "agreement", "alpha_from_counts", "cohen_kappa", "kappa_from_counts",
    "krippendorff_alpha", "paired_labels", "percent_agreement",
]
