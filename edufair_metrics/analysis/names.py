"""Many names per group (condition ``implicit_names``, an EduFair extension): a group contrast whose
names are a random sample of the group's names, so that a gap between groups is told apart from a
reaction to one name.

The contrast (``protocol.contrasts`` kind ``names``; the pairing is ``analysis.cells.names_design``):
per question ``d_q`` = the mean over strata of (mean of side a's names − mean of side b's names),
on the questions that have every name (the paper's averaged sides, with k names per side and
stratum instead of one). Its r, Wilcoxon p, exact sign-flip p and noise floor are the paired
contrast's of ``d`` (``analysis.contrast``): they treat the names as fixed. On top of them
(:func:`name_inference`):

* **CI with the names random** (``ci_low`` / ``ci_high`` / ``boot_sd`` replace the question-only
  bootstrap): a two-way bootstrap. Resample b draws the questions with replacement
  (``engine.bootstrap_indices``, the grid's own draws) and, independently, within every (side,
  stratum) cell of k names, k names with replacement (``SeedSequence(seed).spawn(2)[1]``); ``d`` is
  recomputed with the resampled names and r on the resampled questions. 95% percentile interval,
  ``boot_sd`` its standard deviation. The paper-style ``violation`` reads this interval.
* **Name-level test** ``p_name``: the group gap over names. Each name's mean score over the
  questions is one observation; the estimate is the mean over strata of (mean of side a's names −
  mean of side b's names) (= the mean of ``d``), its standard error from the pooled variance of
  the names around their cell means (``name_df`` = names − cells degrees of freedom): a two-sided
  t-test. It is valid whatever the questions (they are the same for every name) when the names
  are a random draw of their cells; with one name per cell (``name_df`` = 0) it cannot be done
  (NaN).
* **Decision** (``analysis.verdicts``): a names row's decision p is max(question-level p, p_name),
  an intersection–union test: the gap must hold over the questions AND over the names. p_name NaN
  counts as 1: with one name per cell no gap can be told apart from its names.
* **Name heterogeneity** ``name_het_p``: do names of the same cell differ? Friedman's statistic
  over the names of each (side, stratum) cell with at least two names (questions as blocks, ties
  corrected; the same statistic as ``scipy.stats.friedmanchisquare``, computed here for k = 2
  too), summed over the cells, against χ² with Σ(k − 1) degrees of freedom.
* **Between-name spread** beside the contrast: each name's own r (the paired contrast of that
  name against the other side's names of its stratum, signed a − b like the row), their standard
  deviation within side a (``name_spread_a``) and side b (``name_spread_b``), the range
  (``name_r_min``..``name_r_max``) and the name farthest from the median per-name r
  (``name_outlier``, ``name_outlier_r``).
* **Name check** (``name_check``, :func:`add_name_checks`): ``group gap`` = the row is flagged (both
  tests); ``name artefact`` = it would be flagged with the names fixed (``q_flag_fixed`` < α: the
  question-level decision through the same FDR step) but not with the names random, and the names
  of a cell differ (``name_het_p`` < α): one or a few names carry the gap; ``not generalised`` = it
  would be flagged with the names fixed, the names do not detectably differ, and the name-level
  test does not carry it (too few names, e.g. one per cell); empty otherwise.

:func:`name_effects` gives the per-name r of every names contrast as a long table (``names.csv``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from edufair_metrics.analysis.cells import NamesDesign, cell_matrices, names_design
from edufair_metrics.analysis.contrast import rank_biserial
from edufair_metrics.analysis.engine import CI_LEVEL, bootstrap_indices, percentile_ci, round_diffs
from edufair_metrics.protocol.contrasts import ContrastSpec, load_contrasts

NAME_COLUMNS = ["names_a", "names_b", "p_question", "p_name", "name_df", "name_het_p", "name_spread_a",
                "name_spread_b", "name_r_min", "name_r_max", "name_outlier", "name_outlier_r", "q_flag_fixed",
                "name_check"]
NAME_CHECKS = ("group gap", "name artefact", "not generalised")


@dataclass(frozen=True)
class NameInference:
    """The random-names numbers of one names contrast row (module docstring)."""

    names_a: int
    names_b: int
    ci_low: float
    ci_high: float
    boot_sd: float
    p_name: float
    name_df: int
    het_stat: float
    het_df: int
    het_p: float
    spread_a: float
    spread_b: float
    r_min: float
    r_max: float
    outlier: str
    outlier_r: float
    per_name: tuple[tuple[str, str, str, float], ...]  # (level, side, stratum, r)


def _columns_r(d: np.ndarray) -> np.ndarray:
    """Rank-biserial r (Pratt ranking) of every column of ``d`` (n × B, rounded, no NaN)."""
    from scipy.stats import rankdata

    ranks = rankdata(np.abs(d), axis=0)
    w_plus = (ranks * (d > 0)).sum(axis=0)
    w_minus = (ranks * (d < 0)).sum(axis=0)
    tot = w_plus + w_minus
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(tot > 0, (w_plus - w_minus) / tot, 0.0)


def two_way_bootstrap(values: np.ndarray, design: NamesDesign, *, n_boot: int, seed: int) -> np.ndarray:
    """r of ``n_boot`` resamples of the questions (rows of ``values``: complete questions × the
    design's names) and, independently, of the names within each (side, stratum) cell."""
    n = values.shape[0]
    idx = bootstrap_indices(n, n_boot, seed)  # B × n: the grid's own question draws
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[1])
    weights = np.zeros((len(design.levels), n_boot))
    for pos in design.cells().values():
        k = pos.size
        draws = rng.integers(0, k, size=(n_boot, k))
        counts = np.stack([np.bincount(row, minlength=k) for row in draws]) if k > 1 else np.ones((n_boot, 1))
        weights[pos, :] = design.weights[pos, None] * counts.T
    d = values @ weights  # n × B: each column with its own names
    resampled = round_diffs(d[idx.T, np.arange(n_boot)])
    return _columns_r(resampled)


def name_level_test(means: np.ndarray, design: NamesDesign) -> tuple[float, int]:
    """(two-sided p, degrees of freedom) of the stratified t-test of the group gap over the names'
    mean scores ``means`` (one per name of ``design``); p NaN with no degree of freedom."""
    from scipy.stats import t as t_dist

    cells = design.cells()
    df = int(sum(pos.size - 1 for pos in cells.values()))
    strata = list(dict.fromkeys(design.strata))
    diffs, inv = [], 0.0
    for s in strata:
        a, b = cells[("a", s)], cells[("b", s)]
        diffs.append(means[a].mean() - means[b].mean())
        inv += 1 / a.size + 1 / b.size
    est = float(np.mean(diffs))
    if df == 0:
        return math.nan, 0
    ss = float(sum(((means[pos] - means[pos].mean()) ** 2).sum() for pos in cells.values()))
    var = ss / df * inv / len(strata) ** 2
    if var <= 1e-24:
        return (0.0 if abs(est) > 1e-12 else 1.0), df
    t = est / math.sqrt(var)
    return float(2 * t_dist.sf(abs(t), df)), df


def friedman_statistic(blocks: np.ndarray) -> float:
    """Friedman's χ² of ``blocks`` (n blocks × k ≥ 2 treatments, no NaN), ties corrected as scipy
    does (0 when every block is constant)."""
    from scipy.stats import rankdata

    n, k = blocks.shape
    if n == 0 or k < 2:
        return 0.0
    ranks = rankdata(blocks, axis=1)
    ties = ((blocks[:, :, None] == blocks[:, None, :]).sum(axis=2) ** 2 - 1).sum()
    c = 1 - ties / (n * k * (k * k - 1))
    if c <= 1e-12:
        return 0.0
    r = ranks.sum(axis=0)
    return float((12 / (n * k * (k + 1)) * (r * r).sum() - 3 * n * (k + 1)) / c)


def heterogeneity(values: np.ndarray, design: NamesDesign) -> tuple[float, int, float]:
    """(statistic, df, p) of the names' heterogeneity within their cells (module docstring)."""
    from scipy.stats import chi2

    stat, df = 0.0, 0
    for pos in design.cells().values():
        if pos.size >= 2:
            stat += friedman_statistic(values[:, pos])
            df += pos.size - 1
    if df == 0 or values.shape[0] == 0:
        return math.nan, 0, math.nan
    return stat, df, float(chi2.sf(stat, df))


def per_name_r(values: np.ndarray, design: NamesDesign) -> list[tuple[str, str, str, float]]:
    """Each name's r against the other side's names of its stratum, signed a − b."""
    cells = design.cells()
    out = []
    for i, (lv, side, stratum) in enumerate(zip(design.levels, design.sides, design.strata)):
        other = cells[("b" if side == "a" else "a", stratum)]
        rest = values[:, other].mean(axis=1)
        d = values[:, i] - rest if side == "a" else rest - values[:, i]
        out.append((lv, side, stratum, float(rank_biserial(round_diffs(d))[2])))
    return out


def _sd(x: Sequence[float]) -> float:
    return float(np.std(x, ddof=1)) if len(x) >= 2 else math.nan


def name_inference(cell, spec: ContrastSpec, *, n_boot: int, seed: int, level: float = CI_LEVEL) -> NameInference | None:
    """The random-names numbers of ``spec`` (kind names) in ``cell`` (None: no stratum with names
    of both sides, or no complete question)."""
    design = names_design(cell, spec)
    if design is None:
        return None
    values = cell.values[design.complete][:, design.columns]
    if values.shape[0] == 0:
        return None
    rs = two_way_bootstrap(values, design, n_boot=n_boot, seed=seed)
    lo, hi = percentile_ci(rs, level)
    p_name, df = name_level_test(values.mean(axis=0), design)
    het_stat, het_df, het_p = heterogeneity(values, design)
    names = per_name_r(values, design)
    r_all = np.asarray([r for *_, r in names])
    med = float(np.median(r_all))
    far = int(np.argmax(np.abs(r_all - med)))
    return NameInference(
        names_a=len(design.a), names_b=len(design.b), ci_low=lo, ci_high=hi,
        boot_sd=float(np.std(rs, ddof=1)) if rs.size > 1 else math.nan, p_name=p_name, name_df=df,
        het_stat=het_stat, het_df=het_df, het_p=het_p,
        spread_a=_sd([r for _, s, _, r in names if s == "a"]), spread_b=_sd([r for _, s, _, r in names if s == "b"]),
        r_min=float(r_all.min()), r_max=float(r_all.max()), outlier=names[far][0], outlier_r=float(r_all[far]),
        per_name=tuple(names),
    )


def inference_columns(inf: NameInference | None) -> dict[str, object]:
    """A names row's columns from its inference (``NAME_COLUMNS`` but the decision ones)."""
    if inf is None:
        return {c: math.nan for c in NAME_COLUMNS if c not in ("p_question", "q_flag_fixed", "name_check")}
    return {"names_a": inf.names_a, "names_b": inf.names_b, "p_name": inf.p_name, "name_df": inf.name_df,
            "name_het_p": inf.het_p, "name_spread_a": inf.spread_a, "name_spread_b": inf.spread_b,
            "name_r_min": inf.r_min, "name_r_max": inf.r_max, "name_outlier": inf.outlier,
            "name_outlier_r": inf.outlier_r}


def add_name_checks(grid, *, alpha: float = 0.05) -> None:
    """``name_check`` of every names row (module docstring), in place; "" elsewhere."""
    names = (grid["kind"] == "names").to_numpy()
    flagged = grid["verdict"].isin(["flag", "unconfirmed"]).to_numpy()
    with np.errstate(invalid="ignore"):
        fixed = grid["q_flag_fixed"].to_numpy(dtype=float) < alpha
        het = grid["name_het_p"].to_numpy(dtype=float) < alpha
    check = np.full(len(grid), "", dtype=object)
    check[names & fixed & ~flagged & ~het] = "not generalised"
    check[names & fixed & ~flagged & het] = "name artefact"
    check[names & flagged] = "group gap"
    grid["name_check"] = check


def name_effects(df, contrasts: Sequence[ContrastSpec] | None = None):
    """Per (tutor, domain, condition, contrast, metric, name): the name's side, stratum and own r
    (:func:`per_name_r`) for every names contrast of the long score frame ``df``."""
    import pandas as pd

    specs = [s for s in (load_contrasts() if contrasts is None else contrasts) if s.kind == "names"]
    cols = ["tutor", "domain", "condition", "contrast", "metric", "name", "side", "stratum", "r", "n_questions"]
    if not specs or len(df) == 0:
        return pd.DataFrame(columns=cols)
    conds = {s.condition for s in specs}
    rows = []
    for cm in cell_matrices(df[df["condition"].isin(conds)]):
        tutor, domain, condition, metric = cm.key
        for spec in specs:
            if spec.condition != condition:
                continue
            design = names_design(cm, spec)
            if design is None:
                continue
            values = cm.values[design.complete][:, design.columns]
            if values.shape[0] == 0:
                continue
            for lv, side, stratum, r in per_name_r(values, design):
                rows.append((tutor, domain, condition, spec.name, metric, lv, side, stratum, r, int(values.shape[0])))
    return pd.DataFrame(rows, columns=cols)


__all__ = ["NAME_CHECKS", "NAME_COLUMNS", "NameInference", "add_name_checks", "friedman_statistic", "heterogeneity",
           "inference_columns", "name_effects", "name_inference", "name_level_test", "per_name_r", "two_way_bootstrap"]
