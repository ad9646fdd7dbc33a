"""Is a flagged bias real? Multiplicity and the noise floor of the contrast grid.

Noise floor (per grid row, computed in ``analysis.engine``)
    ``null_abs_r`` is the mean |r| over B random sign flips of the row's paired differences (the
    exact null of the Wilcoxon setting: with no bias each d_i is as likely to be +|d_i| as
    -|d_i|); same B and seed as the bootstrap. ``excess_abs_r = abs_r - null_abs_r`` is the part of
    |r| above what identical conditions give with these n pairs and this share of zero
    differences. ``p_perm`` is the sign-flip p of the observed r.

Multiplicity (per grid row)
    ``q_value``: Benjamini–Hochberg adjusted p (``scipy.stats.false_discovery_control``) of the
    rows' Wilcoxon p over a declared *family*. Default family (``FDR_FAMILY``): one tutor × one
    metric kind (pedagogical / conversation) × the headline rows: exactly the rows behind the
    tutor's headline |r̄| of that kind (all domains and conditions; for SES the family that
    ``ses_summary`` makes the headline unit). The rows outside the headline (the Opposite
    tutor/student/interaction effects, the SES family not chosen) form a second family per tutor ×
    metric kind. ``fdr_method="holm"`` gives Holm's step-down adjusted p instead (family-wise
    error; statsmodels is not a dependency, so :func:`holm_adjust` is implemented and tested
    here). Insufficient rows (p NaN) are not in any family (q NaN).
    ``violation_fdr`` = the row's raw ``violation`` (its 95% CI excludes 0; for a Friedman post-hoc
    pair also Friedman p < 0.10) AND ``q_value < alpha`` (0.05). FDR violations are therefore a
    subset of the paper's raw violations, which stay comparable with the paper.

Units and headline
    :func:`unit_noise` adds ``null_abs_r``, ``excess_abs_r`` and ``violation_fdr`` to the
    dimension units of ``grid.dimension_summary`` (a unit's null is combined from its pairs the
    way its ``abs_r`` is: mean, or max for a ``max_abs_pairwise`` SES unit — for the max this is
    a lower bound of the null of a max); :func:`noise_headline` gives, beside the paper's |r̄| and
    violations, the mean excess |r̄| and the FDR violations per tutor.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from edufair_metrics.analysis.ses import DEFAULT_SES_SUMMARY, tagged_ses_summary
from edufair_metrics.errors import EduFairError
from edufair_metrics.records import EXTENSION_CONDITIONS

FDR_METHODS = ("bh", "holm")
DEFAULT_FDR_METHOD = "bh"
DEFAULT_FDR_ALPHA = 0.05
FDR_FAMILY = ("tutor", "metric_kind")  # plus the headline / non-headline split
NOISE_COLUMNS = ("null_abs_r", "excess_abs_r", "p_perm", "q_value", "violation_fdr")


def check_fdr_method(method: str) -> str:
    if method not in FDR_METHODS:
        raise EduFairError(f"unknown fdr_method {method!r}; choose one of {', '.join(FDR_METHODS)}")
    return method


def holm_adjust(p: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values: sorted p_(1) <= ... <= p_(m) get
    ``max_{j<=i} min(1, (m - j + 1) p_(j))``, returned in input order (no NaN allowed)."""
    p = np.asarray(p, dtype=float)
    m = p.size
    if m == 0:
        return p.copy()
    order = np.argsort(p, kind="stable")
    adj = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adj
    return out


def adjust_p(p: Sequence[float], method: str = DEFAULT_FDR_METHOD) -> np.ndarray:
    """BH q-values or Holm adjusted p of one family; NaN entries stay NaN and are not counted."""
    from scipy.stats import false_discovery_control

    check_fdr_method(method)
    p = np.asarray(p, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    if not ok.any():
        return out
    if np.any((p[ok] < 0) | (p[ok] > 1)):
        raise EduFairError("p-values must lie in [0, 1]")
    out[ok] = false_discovery_control(p[ok], method="bh") if method == "bh" else holm_adjust(p[ok])
    return out


def family_labels(grid, family: Sequence[str] = FDR_FAMILY, headline=None) -> np.ndarray:
    """One label per grid row naming its family: the ``family`` columns plus headline or not
    (``headline``: the rows' headline flags after the SES choice; default the grid's column). The
    rows of an extension condition (``records.EXTENSION_CONDITIONS``, never headline rows) form a
    family of their own per condition, so that adding them to a report changes no paper row's q."""
    import pandas as pd

    missing = [c for c in family if c not in grid.columns]
    if missing:
        raise EduFairError(f"FDR family columns not in the grid: {', '.join(missing)}")
    head = np.asarray(grid["headline"] if headline is None else headline, dtype=bool)
    scope = np.where(head, "headline", "other").astype(object)
    if "condition" in grid.columns and len(grid):
        cond = grid["condition"].astype(str).to_numpy()
        ext = np.isin(cond, EXTENSION_CONDITIONS)
        scope[ext] = np.char.add("extension:", cond[ext].astype(str)).astype(object)
    parts = [grid[c].astype(str).to_numpy() for c in family] + [scope]
    if len(grid) == 0:
        return np.zeros(0, dtype=object)
    return pd.Series(["\x1f".join(t) for t in zip(*parts)], dtype=object).to_numpy()


def grid_q_values(grid, *, family: Sequence[str] = FDR_FAMILY, method: str = DEFAULT_FDR_METHOD,
                  headline=None) -> np.ndarray:
    """Adjusted p (``method``) of every grid row's ``p`` within its family (:func:`family_labels`)."""
    p = grid["p"].to_numpy(dtype=float)
    labels = family_labels(grid, family, headline)
    q = np.full(len(grid), np.nan)
    for lab in dict.fromkeys(labels):
        m = labels == lab
        q[m] = adjust_p(p[m], method)
    return q


def add_noise_columns(grid, *, null_abs_r, p_perm, headline=None, family: Sequence[str] = FDR_FAMILY,
                      method: str = DEFAULT_FDR_METHOD, alpha: float = DEFAULT_FDR_ALPHA):
    """The grid with ``NOISE_COLUMNS`` (see the module docstring), in place."""
    if not 0 < alpha < 1:
        raise EduFairError(f"fdr alpha must lie in (0, 1), got {alpha}")
    grid["null_abs_r"] = np.asarray(null_abs_r, dtype=float)
    grid["excess_abs_r"] = grid["abs_r"].to_numpy(dtype=float) - grid["null_abs_r"].to_numpy()
    grid["p_perm"] = np.asarray(p_perm, dtype=float)
    q = grid_q_values(grid, family=family, method=method, headline=headline)
    grid["q_value"] = q
    with np.errstate(invalid="ignore"):
        grid["violation_fdr"] = grid["violation"].to_numpy(dtype=bool) & (q < alpha)
    return grid


def unit_noise(units, grid, *, ses_summary: str | None = None):
    """``units`` (``grid.dimension_summary(grid)``) with ``null_abs_r``, ``excess_abs_r``
    (= ``abs_r - null_abs_r``) and ``violation_fdr`` (any pair of the unit) added. ``ses_summary``:
    the units' (a max_abs_pairwise SES unit takes the max of its pairs' floors; None: the mean)."""
    import pandas as pd

    ses_summary = tagged_ses_summary(units, ses_summary) if len(units) else (ses_summary or DEFAULT_SES_SUMMARY)
    missing = [c for c in ("null_abs_r", "violation_fdr") if c not in grid.columns]
    if missing:
        raise EduFairError(f"the grid lacks {', '.join(missing)}: build it with this EduFair's contrast_grid")
    keys = ["tutor", "domain", "condition", "contrast", "dimension", "kind", "metric"]
    out = units.copy()
    if len(units) == 0:
        for c in ("null_abs_r", "excess_abs_r"):
            out[c] = pd.Series(dtype=float)
        out["violation_fdr"] = pd.Series(dtype=bool)
        return out
    gb = grid.groupby(keys, sort=False, dropna=False)
    agg = pd.DataFrame({
        "null_mean": gb["null_abs_r"].mean(),
        "null_max": gb["null_abs_r"].max(),
        "violation_fdr": gb["violation_fdr"].any(),
    })
    mi = pd.MultiIndex.from_frame(out[keys])
    a = agg.reindex(mi)
    use_max = (out["kind"].to_numpy() == "multilevel") & (ses_summary == "max_abs_pairwise")
    out["null_abs_r"] = np.where(use_max, a["null_max"].to_numpy(), a["null_mean"].to_numpy())
    out["excess_abs_r"] = out["abs_r"].to_numpy(dtype=float) - out["null_abs_r"].to_numpy(dtype=float)
    out["violation_fdr"] = a["violation_fdr"].fillna(False).to_numpy(dtype=bool)
    return out


def noise_headline(units, *, by: Sequence[str] = ("tutor",), kind: str = "pedagogical"):
    """Per ``by`` group, over the headline units of metric ``kind`` (units from :func:`unit_noise`):
    the paper's ``abs_r`` (mean |r̄|) and ``violations`` beside ``null_abs_r`` (mean noise floor),
    ``excess_abs_r`` (mean excess |r̄|), ``violations_fdr`` and ``units`` (sufficient units).
    Same rows and NaN handling as ``grid.headline``."""
    import pandas as pd

    cols = list(by) + ["abs_r", "violations", "null_abs_r", "excess_abs_r", "violations_fdr", "units"]
    if "excess_abs_r" not in units.columns:
        raise EduFairError("noise_headline needs units from analysis.noise.unit_noise")
    u = units[(units["headline"]) & (units["metric_kind"] == kind)]
    if len(u) == 0:
        return pd.DataFrame(columns=cols)
    gb = u.groupby(list(by), sort=True)
    return pd.DataFrame({
        "abs_r": gb["abs_r"].mean(),
        "violations": gb["violation"].sum().astype(int),
        "null_abs_r": gb["null_abs_r"].mean(),
        "excess_abs_r": gb["excess_abs_r"].mean(),
        "violations_fdr": gb["violation_fdr"].sum().astype(int),
        "units": gb["sufficient"].sum().astype(int),
    }).reset_index()[cols]
