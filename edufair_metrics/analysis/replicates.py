"""Replicate dialogues in the statistics (``edufair.replicates``, ``protocol/replicates.py``): the
averaging that keeps the question the unit of inference, and the variance components that say
how much of a paired difference's variance is dialogue noise, and so which k would have been
most efficient.

* :func:`average_replicates`: one row per (tutor, task, domain, condition, dimension, level,
  question, metric): the mean of the question's replicates at that level (NaN replicates left out;
  the turn counts summed; the per-position turn masks of the replicates stacked side by side,
  :func:`stack_replicate_masks`, so the turn test keeps its position strata). Every paired
  statistic reads this frame (``frames.scores_frame``).
* :func:`variance_components`: per (tutor, domain, condition, metric) the model
  ``x[q, l, r] = mu_l + u_q + v_ql + e_qlr``. The paired difference of two levels removes the
  question effect ``u_q``: its between-question part is ``2 var(v)`` (question x level
  heterogeneity, ``between_var`` = var(v)) and its within-question part ``2 var(e) / k`` (dialogue
  noise, ``within_var`` = var(e)). ``within_var`` is the mean replicate variance of a
  (question, level) (k >= 2), or, in a k = 1 run with a placebo replicate, half the mean squared
  difference between a placebo level's two runs; ``between_var`` is the two-way ANOVA residual
  mean square of the per-level question means over the complete questions minus
  ``within_var / k`` (clipped at 0). The most efficient k for costs ``c_q`` (a new question: its
  bank entry, the student's opening turn shared by its replicates) and ``c_r`` (one more dialogue)
  is the classical two-stage sampling optimum (Cochran, *Sampling Techniques*, 3rd ed., §10)
  ``k* = sqrt((c_q / c_r) * within_var / between_var)``, at least 1 (infinite when
  ``between_var`` is 0: only replicates buy precision).
"""

from __future__ import annotations

import math

import numpy as np

from edufair_metrics.protocol.placebo import REPLICATE_SEP, split_replicate_level
from edufair_metrics.protocol.replicates import REPLICATE_FIELD

REPLICATE_COLUMN = REPLICATE_FIELD
_GROUP = ["tutor", "task", "domain", "condition", "dimension", "level", "question_id", "metric"]
COMPONENT_COLUMNS = ["tutor", "domain", "condition", "metric", "source", "k", "questions", "levels", "within_var",
                     "between_var", "share_within", "k_star", "k_star_whole"]
# c_q / c_r when the user states none: a new question costs as much as one more dialogue (its bank
# entry is finite; the student's opening turn is shared by a question's replicates)
DEFAULT_COST_RATIO = 1.0


MASK_COLUMNS = ("turn_app_mask", "turn_pos_mask")  # analysis.turns: per-position bit masks
MASK_BITS = 53  # a float64 holds integers exactly up to 2**53


def replicate_mask_stride(long) -> int | None:
    """The bits one replicate's per-position masks take in a replicate frame's combined masks (the
    most turn positions any dialogue reached), or None when the k replicates need more than
    :data:`MASK_BITS` bits together (or the frame has no masks)."""
    if REPLICATE_COLUMN not in long.columns or not all(c in long.columns for c in MASK_COLUMNS):
        return None
    app = long[MASK_COLUMNS[0]].to_numpy(dtype=float)
    app = app[np.isfinite(app)]
    if not app.size:
        return None
    stride = max(int(app.max()).bit_length(), 1)
    k = int(long[REPLICATE_COLUMN].max())
    return stride if stride * k <= MASK_BITS else None


def stack_replicate_masks(long):
    """``long`` with replicate r's per-position masks shifted by ``(r − 1) · stride`` bits
    (:func:`replicate_mask_stride`), so that the sum over a question's replicates at one level,
    which :func:`average_replicates` takes, holds every replicate's turns: bit ``(r − 1) · stride +
    t`` = the t-th tutor turn of replicate r. The turn test (``analysis.turns``) then stratifies by
    question × (replicate, position): at replicate r and position t the two levels' dialogues of
    tutor seed r (the same seed for every level of a question, ``protocol.replicates``) are
    compared where both reached t. Swapping the level labels of a question still flips the sign
    of each of its strata, so the within-question permutation stays exact. When the masks do not
    fit (:data:`MASK_BITS`), they are dropped and the test falls back to question strata."""
    if not all(c in long.columns for c in MASK_COLUMNS) or REPLICATE_COLUMN not in long.columns:
        return long
    stride = replicate_mask_stride(long)
    if stride is None:
        return long.drop(columns=list(MASK_COLUMNS))
    out = long.copy()
    shift = np.exp2((out[REPLICATE_COLUMN].to_numpy(dtype=float) - 1) * stride)
    for col in MASK_COLUMNS:
        out[col] = out[col].to_numpy(dtype=float) * shift  # exact: a power of two times an integer < 2**53
    return out


def average_replicates(long):
    """``long`` (``frames.scores_frame(..., replicates="keep")``) with each question's replicates
    averaged within each level, without the replicate column; unchanged when it has none. The
    turn counts are summed; the per-position masks are stacked (:func:`stack_replicate_masks`)
    and summed (a missing mask in any replicate: missing), or dropped when they do not fit."""
    if REPLICATE_COLUMN not in long.columns:
        return long
    long = stack_replicate_masks(long)
    group = [c for c in _GROUP if c in long.columns]
    grouped = long.groupby(group, sort=False, dropna=False)
    out = grouped["value"].mean().to_frame()
    for col in ("n_applicable", "n_positive"):
        if col in long.columns:
            out[col] = grouped[col].sum(min_count=1)
    if all(c in long.columns for c in MASK_COLUMNS):
        size = grouped.size()
        for col in MASK_COLUMNS:
            out[col] = grouped[col].sum(min_count=1).where(grouped[col].count() == size)
    return out.reset_index()


def _anova_residual(means: np.ndarray) -> tuple[float, int]:
    """Residual mean square of a complete questions x levels table (two-way, no replication), and
    the number of questions."""
    q, lv = means.shape
    if q < 2 or lv < 2:
        return math.nan, q
    resid = means - means.mean(axis=1, keepdims=True) - means.mean(axis=0, keepdims=True) + means.mean()
    return float((resid ** 2).sum() / ((q - 1) * (lv - 1))), q


def k_star(within_var: float, between_var: float, cost_ratio: float = DEFAULT_COST_RATIO) -> float:
    """The most efficient number of dialogues per question and level, ``sqrt((c_q/c_r) σ²_w / σ²_b)``
    (at least 1; inf when σ²_b is 0 and σ²_w is not; NaN when either is unknown)."""
    if not (math.isfinite(within_var) and math.isfinite(between_var)):
        return math.nan
    if within_var <= 0:
        return 1.0
    if between_var <= 0:
        return math.inf
    return max(1.0, math.sqrt(cost_ratio * within_var / between_var))


def whole_k(k: float) -> float:
    """k* as the whole number of replicates to run (the better of its floor and ceiling for the
    cost-weighted variance, which is flat near the optimum: the nearest integer, at least 1)."""
    if not math.isfinite(k):
        return k
    return float(max(1, round(k)))


def variance_components(long, cost_ratio: float = DEFAULT_COST_RATIO):
    """One row per (tutor, domain, condition, metric) with a within-question noise estimate
    (replicates, or a placebo replicate): ``COMPONENT_COLUMNS`` (see the module docstring).
    ``long``: ``frames.scores_frame(..., replicates="keep")``. Empty when no run has either."""
    import pandas as pd

    rows = []
    if long is None or not len(long):
        return pd.DataFrame(columns=COMPONENT_COLUMNS)
    placebo_levels = long["level"].astype(str).str.contains(REPLICATE_SEP, regex=False)
    if REPLICATE_COLUMN not in long.columns and not placebo_levels.any():
        return pd.DataFrame(columns=COMPONENT_COLUMNS)
    df = long[long["value"].notna()]
    split = df["level"].map(split_replicate_level)
    df = df.assign(base_level=split.map(lambda t: t[0]), placebo=split.map(lambda t: t[1]))
    has_reps = REPLICATE_COLUMN in df.columns
    for (tutor, domain, condition, metric), cell in df.groupby(["tutor", "domain", "condition", "metric"], sort=True):
        plain = cell[cell["placebo"] == 1]
        placebo = cell[cell["placebo"] > 1]
        k = 1
        if has_reps and plain[REPLICATE_COLUMN].max() > 1:
            k = int(plain[REPLICATE_COLUMN].max())
            per = plain.groupby(["question_id", "level"])["value"]
            var = per.var(ddof=1)  # NaN for a (question, level) with one replicate left
            within, source = float(var.dropna().mean()) if var.notna().any() else math.nan, "replicates"
        elif len(placebo):
            base = plain.set_index(["question_id", "level"])["value"]
            diffs = []
            for (q, lv), v in placebo.set_index(["question_id", "base_level"])["value"].items():
                if (q, lv) in base.index:
                    diffs.append(float(base.loc[(q, lv)]) - float(v))
            if not diffs:
                continue
            within, source = float(np.mean(np.square(diffs)) / 2), "placebo"
        else:
            continue
        means = plain.groupby(["question_id", "level"])["value"].mean().unstack("level")
        means = means.dropna(axis=0, how="any").to_numpy(dtype=float)
        resid, questions = _anova_residual(means)
        between = max(0.0, resid - within / k) if math.isfinite(resid) and math.isfinite(within) else math.nan
        total = within + between
        ks = k_star(within, between, cost_ratio)
        rows.append({"tutor": tutor, "domain": domain, "condition": condition, "metric": metric, "source": source,
                     "k": k, "questions": questions, "levels": int(means.shape[1]) if means.size else 0,
                     "within_var": within, "between_var": between,
                     "share_within": within / total if total > 0 else math.nan, "k_star": ks, "k_star_whole": whole_k(ks)})
    return pd.DataFrame(rows, columns=COMPONENT_COLUMNS)
