"""The contrast grid of EduFair-Bench (paper §3.4): every protocol contrast of every (tutor, domain,
condition) cell and metric, its dimension units and the headline numbers.

Grid (:func:`contrast_grid`)
    One row per contrast *pair* (columns ``GRID_COLUMNS``) from the long frame of per-dialogue
    scores (columns ``LONG_COLUMNS``). The questions are paired by ``analysis.cells`` (the one
    pairing, shared with compare and the rank intervals); each row's numbers are those of
    ``contrast.paired_contrast`` on its differences (definitions in :mod:`edufair_metrics.analysis.contrast`),
    computed for all rows in one batch (``engine.paired_rows``). A multilevel (SES Friedman) row
    also carries its family's Friedman test and Bonferroni-adjusted p (``p_adj``); its violation
    needs Friedman p < 0.10.

    The ``headline`` column is tagged here, once, by the SES choice ``ses_summary``
    (``analysis.ses.apply_ses_summary``: the single SES contrast or the Friedman family is the
    headline unit); the same flags decide the FDR families of ``q_value`` (``analysis.noise``).
    Everything downstream reads this column and never re-tags it.

Summaries ("units")
    :func:`dimension_summary` reduces the pair-level grid to one row per (tutor, domain, condition,
    dimension, metric): ``abs_r`` (binary: |r|; SES: ``ses_summary``; implicit: mean |r| of pairs)
    and ``violation`` (any violating pair). Headline numbers (:func:`headline`) average ``abs_r`` over
    the *headline* dimensions: the four Explicit dimensions, the three Implicit contrasts, and
    Opposite Correct/Wrong (the tutor/student/interaction effects are reported but not pooled,
    since they re-use the same dialogues). The report, leaderboard, compare and the lm-eval
    aggregations all use these functions, so their numbers agree.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from edufair_metrics.analysis.cells import cell_matrices, complete_blocks, contrast_pairs
from edufair_metrics.analysis.contrast import (
    DEFAULT_MIN_PAIRS,
    DEFAULT_N_BOOT,
    MEANINGFUL_R,
    POSTHOC_ALPHA,
    PairedContrast,
    friedman_test,
    paired_contrasts,
)
from edufair_metrics.analysis.noise import add_noise_columns, check_fdr_method
from edufair_metrics.analysis.ses import apply_ses_summary, check_ses_summary, tagged_ses_summary
from edufair_metrics.protocol.contrasts import ContrastSpec, load_contrasts
from edufair_metrics.records import CONVERSATION_METRICS, DETECTOR_METRICS, PEDAGOGICAL_METRICS, STUDENT_METRICS

__all__ = ["GRID_COLUMNS", "LONG_COLUMNS", "contrast_grid", "dimension_summary", "headline", "metric_kind"]


def metric_kind(metric: str) -> str:
    if metric in PEDAGOGICAL_METRICS:
        return "pedagogical"
    if metric in CONVERSATION_METRICS:
        return "conversation"
    if metric in DETECTOR_METRICS:  # judge-invariant (edufair_metrics.detectors)
        return "detector"
    if metric in STUDENT_METRICS:  # the student-side monitor (edufair_metrics.detectors.student)
        return "student"
    return "other"


LONG_COLUMNS = ("tutor", "task", "domain", "condition", "dimension", "level", "question_id", "metric", "value")
GRID_COLUMNS = [
    "tutor", "domain", "condition", "contrast", "dimension", "kind", "pair", "a", "b", "metric",
    "metric_kind", "n_pairs", "n_zero", "w_plus", "w_minus", "r", "abs_r", "p", "p_adj", "ci_low",
    "ci_high", "meaningful", "violation", "sufficient", "friedman_stat", "friedman_p",
    "friedman_n", "posthoc", "headline", "null_abs_r", "excess_abs_r", "p_perm", "q_value", "violation_fdr",
]


def _row(cell: dict, spec: ContrastSpec, pair: str, a: str, b: str, metric: str, c: PairedContrast, **extra) -> dict:
    row = dict(cell)
    row.update(
        contrast=spec.name, dimension=spec.dimension, kind=spec.kind, pair=pair, a=a, b=b,
        metric=metric, metric_kind=metric_kind(metric), n_pairs=c.n_pairs, n_zero=c.n_zero,
        w_plus=c.w_plus, w_minus=c.w_minus, r=c.r, abs_r=abs(c.r), p=c.p, p_adj=c.p,
        ci_low=c.ci_low, ci_high=c.ci_high, meaningful=c.meaningful, violation=c.violation,
        sufficient=c.sufficient, friedman_stat=math.nan, friedman_p=math.nan, friedman_n=math.nan,
        posthoc=False, headline=spec.headline, null_abs_r=c.null_abs_r, p_perm=c.p_perm,
    )
    row.update(extra)
    return row


def _friedman(blocks: np.ndarray, min_pairs: int) -> tuple[float, float, int, bool]:
    """(statistic, p, complete blocks, post-hoc step performed) of a Friedman family."""
    n = int(blocks.shape[0])
    if n < max(min_pairs, 1):
        return math.nan, math.nan, n, False
    stat, p = friedman_test(blocks)
    return stat, p, n, bool(p < POSTHOC_ALPHA)


def _friedman_extra(c: PairedContrast, family: tuple[float, float, int, bool], k: int) -> dict:
    stat, p, n, posthoc = family
    return dict(p_adj=(min(1.0, c.p * k) if posthoc else math.nan), violation=bool(c.violation and posthoc),
                friedman_stat=stat, friedman_p=p, friedman_n=n, posthoc=posthoc)


def contrast_grid(
    df,
    *,
    contrasts: Sequence[ContrastSpec] | None = None,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
    min_pairs: int = DEFAULT_MIN_PAIRS,
    ses_summary: str = "single",  # analysis.ses default: tags the SES headline rows (and so the FDR family)
    progress: bool = False,
    fdr_method: str = "bh",
    fdr_family: Sequence[str] = ("tutor", "metric_kind"),
    fdr_alpha: float = 0.05,
):
    """Every contrast of every (tutor, domain, condition) cell and metric, as a tidy DataFrame
    (columns ``GRID_COLUMNS``; one row per contrast *pair*). ``df`` is the long frame of
    per-dialogue scores (columns ``LONG_COLUMNS``). Every pair uses ``seed`` for its bootstrap,
    so a row equals ``paired_contrast(a, b, seed=seed)`` on the same data. ``headline`` follows
    ``ses_summary`` (see the module docstring).
    The noise-floor columns (``null_abs_r``, ``excess_abs_r``, ``p_perm``) and the multiplicity
    columns (``q_value`` adjusted by ``fdr_method`` "bh" or "holm" within each ``fdr_family`` ×
    headline family, ``violation_fdr`` = violation and q < ``fdr_alpha``) are defined in
    :mod:`edufair_metrics.analysis.noise`. All rows are computed in one batch
    (:func:`edufair_metrics.analysis.engine.paired_rows`)."""
    import pandas as pd

    if contrasts is None:
        contrasts = load_contrasts()
    check_ses_summary(ses_summary)
    if len(df) == 0:
        return pd.DataFrame(columns=GRID_COLUMNS)
    check_fdr_method(fdr_method)
    cells = cell_matrices(df)
    it = cells
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(cells, desc="contrasts", unit="cell×metric", leave=False)
    pending: list[tuple] = []  # (cell, spec, label, a, b, metric, Friedman family or None)
    diffs: list[np.ndarray] = []
    families: dict[tuple, tuple[float, float, int, bool]] = {}
    for cm, spec, a_lv, b_lv, label, d in contrast_pairs(it, contrasts):
        tutor, domain, condition, metric = cm.key
        family = None
        if spec.kind == "multilevel":
            fkey = (cm.key, spec.name)
            if fkey not in families:
                families[fkey] = _friedman(complete_blocks(cm, spec), min_pairs)
            family = families[fkey]
        cell = {"tutor": tutor, "domain": domain, "condition": condition}
        pending.append((cell, spec, label, "+".join(a_lv), "+".join(b_lv), metric, family))
        diffs.append(d[~np.isnan(d)])
    found = paired_contrasts(diffs, n_boot=n_boot, seed=seed, min_pairs=min_pairs)
    rows = [_row(*p[:6], c) if p[6] is None else _row(*p[:6], c, **_friedman_extra(c, p[6], len(p[1].pairs)))
            for p, c in zip(pending, found)]
    out = pd.DataFrame(rows, columns=GRID_COLUMNS)
    for col in ("meaningful", "violation", "sufficient", "posthoc", "headline"):
        out[col] = out[col].astype(bool)
    out = apply_ses_summary(out, ses_summary)  # the SES headline unit, tagged once
    add_noise_columns(out, null_abs_r=out["null_abs_r"], p_perm=out["p_perm"], headline=out["headline"],
                      family=fdr_family, method=fdr_method, alpha=fdr_alpha)
    out["violation_fdr"] = out["violation_fdr"].astype(bool)
    return out


def dimension_summary(grid, *, ses_summary: str | None = None):
    """One row per (tutor, domain, condition, contrast, dimension, metric): ``abs_r`` = |r| of a
    binary contrast, ``ses_summary`` of the SES pairwise |r| (mean or max), mean |r| of implicit
    pairs (NaN pairs ignored; NaN if no pair is sufficient); ``violation`` = any pair violates;
    ``n_pairs_min``; ``sufficient`` = at least one pair sufficient. ``headline`` is the grid's
    (tagged by :func:`contrast_grid`'s ``ses_summary``, which ``ses_summary`` must agree with; None:
    the grid's choice, the mean for a Friedman family: ``analysis.ses.tagged_ses_summary``)."""
    import pandas as pd

    keys = ["tutor", "domain", "condition", "contrast", "dimension", "kind", "metric", "metric_kind", "headline"]
    if len(grid) == 0:
        check_ses_summary(ses_summary or "single")
        return pd.DataFrame(columns=keys + ["abs_r", "violation", "meaningful", "sufficient", "n_pairs_min", "n_parts"])
    ses_summary = tagged_ses_summary(grid, ses_summary)
    g = grid.assign(abs_r=grid["r"].abs())
    gb = g.groupby(keys, sort=False, dropna=False)
    mean_r = gb["abs_r"].mean()
    max_r = gb["abs_r"].max()
    out = pd.DataFrame({
        "abs_r": mean_r,
        "violation": gb["violation"].any(),
        "sufficient": gb["sufficient"].any(),
        "n_pairs_min": gb["n_pairs"].min(),
        "n_parts": gb["pair"].count(),
    }).reset_index()
    if ses_summary == "max_abs_pairwise":
        multi = out["kind"].to_numpy() == "multilevel"
        out.loc[multi, "abs_r"] = max_r.to_numpy()[multi]
    out["meaningful"] = out["abs_r"] >= MEANINGFUL_R
    return out


def headline(units, *, by: Sequence[str] = ("tutor",), kind: str = "pedagogical"):
    """Headline fairness per ``by`` group from :func:`dimension_summary` rows: ``abs_r`` = mean
    |r̄| over the headline units of metric ``kind`` (NaN units ignored), ``violations`` = number of
    violating units, ``units`` = number of sufficient units."""
    import pandas as pd

    u = units[(units["headline"]) & (units["metric_kind"] == kind)]
    by = list(by)
    if len(u) == 0:
        return pd.DataFrame(columns=by + ["abs_r", "violations", "units"])
    gb = u.groupby(by, sort=True)
    return pd.DataFrame({
        "abs_r": gb["abs_r"].mean(),
        "violations": gb["violation"].sum().astype(int),
        "units": gb["sufficient"].sum().astype(int),
    }).reset_index()
