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

    Verdicts (``analysis.verdicts``): every row also gets ``verdict`` (flag / unconfirmed /
    certify / inconclusive / insufficient) with its decision columns (decision p, unit-level
    q, the equivalence interval for the margin ``equivalence_margin``, the unbiased effect size,
    the MDE and the questions that would decide), and pedagogical rows the turn-level test
    (``analysis.turns``) when the score frame carries turn counts. A Friedman post-hoc pair's
    paper-style ``violation`` needs its Bonferroni p (``p_adj``) < 0.05 (and Friedman p < 0.10).

    The ``headline`` column is tagged here, once, by the SES choice ``ses_summary``
    (``analysis.ses.apply_ses_summary``: the single SES contrast or the Friedman family is the
    headline unit); the same flags decide the FDR families of ``q_value`` (``analysis.noise``).
    Everything downstream reads this column and never re-tags it.

Summaries ("units")
    :func:`dimension_summary` reduces the pair-level grid to one row per (tutor, domain, condition,
    dimension, metric): ``abs_r`` (binary: |r|; SES: ``ses_summary``; implicit: mean |r| of pairs),
    ``violation`` (the paper's rule for a unit of k pairs at the Bonferroni level: some pair's
    (1 − 0.05/k) percentile CI excludes 0, so that two name pairs do not double the false
    violations; k = 1: the 95% CI) and the unit's ``verdict`` (``analysis.verdicts``). Headline numbers (:func:`headline`) average ``abs_r`` over
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
    CI_LEVEL,
    DEFAULT_MIN_PAIRS,
    DEFAULT_N_BOOT,
    MEANINGFUL_R,
    POSTHOC_ALPHA,
    PairedContrast,
    friedman_test,
    paired_contrasts,
)
from edufair_metrics.analysis.engine import EXACT_BELOW
from edufair_metrics.analysis.names import NAME_COLUMNS, add_name_checks, inference_columns, name_inference
from edufair_metrics.analysis.noise import add_noise_columns, check_fdr_method
from edufair_metrics.analysis.ses import apply_ses_summary, check_ses_summary, tagged_ses_summary
from edufair_metrics.analysis.turns import COUNT_COLUMNS, MASK_COLUMNS, TURN_COLUMNS, turn_contributions, turn_tests
from edufair_metrics.analysis.verdicts import (
    DEFAULT_MARGIN,
    ROW_VERDICT_COLUMNS,
    UNIT_VERDICT_COLUMNS,
    add_row_verdicts,
    check_margin,
    unit_verdicts,
)
from edufair_metrics.protocol.contrasts import ContrastSpec, load_contrasts
from edufair_metrics.records import (
    CONVERSATION_METRICS,
    DETECTOR_METRICS,
    OUTCOME_METRICS,
    PEDAGOGICAL_METRICS,
    STUDENT_METRICS,
)

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
    if metric in OUTCOME_METRICS:  # outcome fairness, the post-test (edufair_metrics.detectors.outcome)
        return "outcome"
    return "other"


VIOLATION_ALPHA = 0.05
LONG_COLUMNS = ("tutor", "task", "domain", "condition", "dimension", "level", "question_id", "metric", "value")
GRID_COLUMNS = [
    "tutor", "domain", "condition", "contrast", "dimension", "kind", "pair", "a", "b", "metric",
    "metric_kind", "n_pairs", "n_zero", "w_plus", "w_minus", "r", "abs_r", "p", "p_adj", "ci_low",
    "ci_high", "meaningful", "violation", "sufficient", "friedman_stat", "friedman_p",
    "friedman_n", "posthoc", "headline", "null_abs_r", "excess_abs_r", "p_perm", "q_value", "violation_fdr",
    # verdicts (analysis.verdicts) and what they read from the engine
    "p_exact", "boot_sd", "ci_low_unit", "ci_high_unit",
    *[c for c in ROW_VERDICT_COLUMNS if c not in ("null_var_r",)], "null_var_r",
]
_ENGINE_EXTRA = ("p_exact", "boot_sd", "ci_low_unit", "ci_high_unit", "null_var_r")


def _row(cell: dict, spec: ContrastSpec, pair: str, a: str, b: str, metric: str, c: PairedContrast, **extra) -> dict:
    row = dict(cell)
    row.update(
        contrast=spec.name, dimension=spec.dimension, kind=spec.kind, pair=pair, a=a, b=b,
        metric=metric, metric_kind=metric_kind(metric), n_pairs=c.n_pairs, n_zero=c.n_zero,
        w_plus=c.w_plus, w_minus=c.w_minus, r=c.r, abs_r=abs(c.r), p=c.p, p_adj=c.p,
        ci_low=c.ci_low, ci_high=c.ci_high, meaningful=c.meaningful, violation=c.violation,
        sufficient=c.sufficient, friedman_stat=math.nan, friedman_p=math.nan, friedman_n=math.nan,
        posthoc=False, headline=spec.headline, null_abs_r=c.null_abs_r, p_perm=c.p_perm,
        **{k: getattr(c, k) for k in _ENGINE_EXTRA},
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
    p_adj = min(1.0, c.p * k) if posthoc else math.nan
    # a post-hoc pair violates by its Bonferroni p (the marks of Table 10b), only after Friedman p < 0.10
    return dict(p_adj=p_adj, violation=bool(posthoc and c.sufficient and p_adj < VIOLATION_ALPHA),
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
    equivalence_margin: float = DEFAULT_MARGIN,
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
    (:func:`edufair_metrics.analysis.engine.paired_rows`). The verdict columns
    (``analysis.verdicts``: margin ``equivalence_margin``, α = ``fdr_alpha``, the units' FDR
    families = ``fdr_family`` × headline) and, when ``df`` has the turn counts ``n_applicable`` /
    ``n_positive``, the turn-level test of the pedagogical rows (``analysis.turns``) follow."""
    import pandas as pd

    if contrasts is None:
        contrasts = load_contrasts()
    check_ses_summary(ses_summary)
    check_margin(equivalence_margin)
    if len(df) == 0:
        return pd.DataFrame(columns=GRID_COLUMNS)
    check_fdr_method(fdr_method)
    cells = cell_matrices(df, extras=COUNT_COLUMNS + MASK_COLUMNS)
    it = cells
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(cells, desc="contrasts", unit="cell×metric", leave=False)
    pending: list[tuple] = []  # (cell, spec, label, a, b, metric, Friedman family or None)
    cells_of: list = []  # per row: its CellMatrix (the names rows' inference reads the whole cell)
    diffs: list[np.ndarray] = []
    turns: list = []  # per row: analysis.turns.turn_contributions, or None
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
        cells_of.append(cm)
        diffs.append(d[~np.isnan(d)])
        turns.append(turn_contributions(cm, a_lv, b_lv, d) if metric in PEDAGOGICAL_METRICS and cm.extras else None)
    # a unit of k pairs (Implicit: 2) judges its pairs' percentile CIs at the Bonferroni level 0.05 / k
    unit_size: dict[tuple, int] = {}
    for p in pending:
        unit_size[_unit_key(p)] = unit_size.get(_unit_key(p), 0) + 1
    unit_alpha = [VIOLATION_ALPHA / unit_size[_unit_key(p)] if p[6] is None and unit_size[_unit_key(p)] > 1
                  else 1 - CI_LEVEL for p in pending]
    found = paired_contrasts(diffs, n_boot=n_boot, seed=seed, min_pairs=min_pairs, unit_alpha=unit_alpha)
    rows = [_row(*p[:6], c) if p[6] is None else _row(*p[:6], c, **_friedman_extra(c, p[6], len(p[1].pairs)))
            for p, c in zip(pending, found)]
    has_names = any(p[1].kind == "names" for p in pending)
    if has_names:  # many names per group: the names as a random effect (analysis.names)
        for k, (p, c) in enumerate(zip(pending, found)):
            if p[1].kind == "names":
                rows[k].update(_names_extra(cells_of[k], p[1], c, n_boot=n_boot, seed=seed))
    base_cols = [c for c in GRID_COLUMNS if c not in ROW_VERDICT_COLUMNS or c == "null_var_r"]
    out = pd.DataFrame(rows, columns=base_cols + ([c for c in NAME_COLUMNS if c not in ("q_flag_fixed", "name_check")]
                                                  if has_names else []))
    tt = turn_tests(turns, n_boot=n_boot, seed=seed, min_questions=min_pairs)
    for c in TURN_COLUMNS:
        out[c] = tt[c]
    for col in ("meaningful", "violation", "sufficient", "posthoc", "headline"):
        out[col] = out[col].astype(bool)
    out = apply_ses_summary(out, ses_summary)  # the SES headline unit, tagged once
    add_noise_columns(out, null_abs_r=out["null_abs_r"], p_perm=out["p_perm"], headline=out["headline"],
                      family=fdr_family, method=fdr_method, alpha=fdr_alpha)
    out["violation_fdr"] = out["violation_fdr"].astype(bool)
    add_row_verdicts(out, margin=equivalence_margin, alpha=fdr_alpha, method=fdr_method, family=fdr_family)
    if has_names:
        add_name_checks(out, alpha=fdr_alpha)
        return out[GRID_COLUMNS + NAME_COLUMNS]
    return out[GRID_COLUMNS]


def _names_extra(cm, spec: ContrastSpec, c: PairedContrast, *, n_boot: int, seed: int) -> dict:
    """A names row's random-names columns (``analysis.names``): the two-way bootstrap CI in place of
    the question-only one (its unit-level bounds too: a names unit is one row), the paper-style
    violation on it, the name-level test, heterogeneity and spread; ``p_question`` = the row's
    question-level decision p (exact sign-flip below 50 pairs, Wilcoxon from 50)."""
    p_question = c.p_exact if c.n_pairs < EXACT_BELOW else c.p
    inf = name_inference(cm, spec, n_boot=n_boot, seed=seed) if c.sufficient else None
    extra = {"p_question": p_question, **inference_columns(inf)}
    if inf is not None:
        extra.update(ci_low=inf.ci_low, ci_high=inf.ci_high, ci_low_unit=inf.ci_low, ci_high_unit=inf.ci_high,
                     boot_sd=inf.boot_sd, violation=bool(inf.ci_low > 0 or inf.ci_high < 0))
    return extra


def _unit_key(p: tuple) -> tuple:
    cell, spec, _label, _a, _b, metric, _family = p
    return (cell["tutor"], cell["domain"], cell["condition"], spec.name, metric)


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
        return pd.DataFrame(columns=keys + ["abs_r", "violation", "meaningful", "sufficient", "n_pairs_min", "n_parts",
                                            *UNIT_VERDICT_COLUMNS])
    ses_summary = tagged_ses_summary(grid, ses_summary)
    g = grid.assign(abs_r=grid["r"].abs())
    gb = g.groupby(keys, sort=False, dropna=False)
    mean_r = gb["abs_r"].mean()
    max_r = gb["abs_r"].max()
    out = pd.DataFrame({
        "abs_r": mean_r,
        # a unit of k pairs: a pair's (1 - 0.05/k) CI excludes 0 (grids from before: any pair's violation)
        "violation": gb["violation_unit" if "violation_unit" in g.columns else "violation"].any(),
        "sufficient": gb["sufficient"].any(),
        "n_pairs_min": gb["n_pairs"].min(),
        "n_parts": gb["pair"].count(),
    }).reset_index()
    multi = out["kind"].to_numpy() == "multilevel"
    use_max = multi & (ses_summary == "max_abs_pairwise")
    if ses_summary == "max_abs_pairwise":
        out.loc[multi, "abs_r"] = max_r.to_numpy()[multi]
    out["meaningful"] = out["abs_r"] >= MEANINGFUL_R
    if "verdict" in g.columns:
        uv = unit_verdicts(g, keys, use_max=use_max)
        for c in UNIT_VERDICT_COLUMNS:
            out[c] = uv[c].to_numpy()
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
