"""Bootstrap rank intervals for the leaderboard.

Quantity (stated): ``excess_abs_r`` (the function's default, kept for earlier callers): a tutor's
mean excess |r̄| over its headline units of the pedagogical metrics, i.e.
``analysis.noise.noise_headline``'s ``excess_abs_r`` (lower = fairer); ``quantity="abs_r"`` ranks
by the paper's |r̄|; ``quantity="unbiased_abs_r"`` (the leaderboard's key) by the signed root of the
mean ``r2_unbiased`` over the units (``analysis.verdicts``: unbiased at any n, so a biased tutor run
on fewer questions does not look fairer, as it does by excess, which understates real effects more
on fewer questions). For it, each resample's row value is ``(r_b² − V0) / (1 − V0)`` with the
row's fixed null variance V0; units average (SES max: take the max of) their rows, the tutor its
units, and the re-centring below is done on that mean before the signed root.

Bootstrap: the questions of each domain are resampled with replacement, jointly for all tutors
(resample b draws the same questions for every tutor, so shared question difficulty cancels):
domain by domain in sorted order, ``default_rng(seed).integers(0, Q, (B, Q))`` over the domain's
sorted question ids. In each resample every headline row's r is recomputed on the drawn
questions (absent pairs dropped, as in ``compare``); its excess is |r_b| minus the row's noise
floor ``null_abs_r`` from the grid (kept fixed: it depends on n and the share of zeros, which
barely move between resamples). Rows are averaged into units and units into the tutor's value
exactly as in the headline. Each resample ranks the tutors (1 = fairest; ties share the mean
rank); the 95% rank interval is the 2.5th–97.5th percentile of a tutor's ranks. Before ranking, each tutor's
bootstrap values are re-centred on its point estimate (|r| of a resample carries the resampling
noise on top of the sample's, which would otherwise inflate every value by about its noise
floor; tutors with more zero differences would be inflated more). Tutors whose
rank intervals overlap are *tied*: the data do not order them.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from edufair_metrics.analysis.cells import cell_matrices, contrast_pairs
from edufair_metrics.analysis.engine import multiplicities, percentile_ci, resampled_r
from edufair_metrics.analysis.ses import tagged_ses_summary
from edufair_metrics.analysis.verdicts import r2_unbiased, signed_root
from edufair_metrics.errors import EduFairError
from edufair_metrics.protocol.contrasts import load_contrasts

RANK_QUANTITIES = ("excess_abs_r", "abs_r", "unbiased_abs_r")
ROW_KEYS = ["tutor", "domain", "condition", "contrast", "pair", "metric"]


def _row_differences(df, grid_rows, contrasts):
    """{grid row index: (domain, d over the domain's sorted questions, NaN = no pair)} and the
    domains' sorted question ids; ``d`` from ``cells.pair_differences``, as in the grid."""
    cells = cell_matrices(df)
    qsets: dict[str, set] = {}
    for cm in cells:  # a domain's questions: every question any tutor has in it
        qsets.setdefault(cm.key[1], set()).update(cm.questions.astype(str).tolist())
    domains = {dom: np.array(sorted(qsets.get(dom, ())), dtype=object) for dom in sorted(set(grid_rows["domain"]))}
    as_str = {dom: qs.astype(str) for dom, qs in domains.items()}
    wanted = dict(zip(grid_rows[ROW_KEYS].itertuples(index=False, name=None), grid_rows.index))
    cell_keys = {k[:3] + k[5:] for k in wanted}
    out = {}
    for cm, spec, _a, _b, label, d in contrast_pairs((c for c in cells if tuple(c.key) in cell_keys), contrasts):
        tutor, domain, condition, metric = cm.key
        i = wanted.get((tutor, domain, condition, spec.name, label, metric))
        if i is not None:
            out[i] = (domain, cm.spread(d, as_str[domain]))
    return out, domains


def rank_intervals(
    df,
    grid,
    *,
    quantity: str = "excess_abs_r",
    kind: str = "pedagogical",
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    ses_summary: str | None = None,
    contrasts=None,
):
    """One row per tutor: ``value`` (the primary quantity, point estimate), its bootstrap
    ``value_ci_low``/``value_ci_high``, ``rank`` (1 = lowest value = fairest), ``rank_low``/
    ``rank_high`` (the rank interval), ``tied`` and ``tied_with`` (tutors whose intervals
    overlap). ``df``: the long score frame; ``grid``: ``grid.contrast_grid(df)`` (with its
    noise-floor columns and its headline rows, tagged by its ``ses_summary``; ``ses_summary`` here
    must agree, and ``"max_abs_pairwise"`` makes an SES unit the max of its pairs). See the module
    docstring."""
    import pandas as pd
    from scipy.stats import rankdata

    if quantity not in RANK_QUANTITIES:
        raise EduFairError(f"unknown rank quantity {quantity!r}; choose one of {', '.join(RANK_QUANTITIES)}")
    if n_boot < 1:
        raise EduFairError(f"n_boot must be >= 1, got {n_boot}")
    if "null_abs_r" not in grid.columns:
        raise EduFairError("rank_intervals needs a grid with null_abs_r (this EduFair's contrast_grid)")
    cols = ["tutor", "quantity", "value", "value_ci_low", "value_ci_high", "rank", "rank_low", "rank_high",
            "tied", "tied_with"]
    ses_summary = tagged_ses_summary(grid, ses_summary) if len(grid) else ses_summary
    g = grid[grid["headline"] & grid["sufficient"] & (grid["metric_kind"] == kind)] if len(grid) else grid
    if len(g) == 0:
        return pd.DataFrame(columns=cols)
    diffs, domains = _row_differences(df, g, load_contrasts() if contrasts is None else contrasts)
    rng = np.random.default_rng(seed)
    counts = {dom: multiplicities(rng.integers(0, qs.size, size=(n_boot, qs.size)), qs.size)
              for dom, qs in domains.items()}
    use_max = ses_summary == "max_abs_pairwise"
    unit_keys = ["tutor", "domain", "condition", "contrast", "metric"]
    point: dict[str, list[float]] = {}
    reps: dict[str, list[np.ndarray]] = {}
    unbiased = quantity == "unbiased_abs_r"
    if unbiased and "null_var_r" not in g.columns:
        raise EduFairError("rank_intervals(quantity='unbiased_abs_r') needs a grid with null_var_r (this EduFair's contrast_grid)")
    rows_r = np.abs(g["r"].to_numpy(dtype=float))
    rows_null = g["null_abs_r"].to_numpy(dtype=float) if quantity == "excess_abs_r" else np.zeros(len(g))
    rows_v0 = g["null_var_r"].to_numpy(dtype=float) if unbiased else None
    rows_multi = (g["kind"] == "multilevel").to_numpy()
    labels = g.index.to_numpy()
    for ukey, pos in g.groupby(unit_keys, sort=True).indices.items():
        tutor = ukey[0]
        vals, boot = [], []
        for k in pos:
            if labels[k] not in diffs:
                continue
            dom, d = diffs[labels[k]]
            if unbiased:
                rb = resampled_r(d, counts[dom])
                vals.append(float(r2_unbiased(rows_r[k], rows_v0[k])))
                boot.append(r2_unbiased(rb, np.full(rb.shape, rows_v0[k])))
                continue
            vals.append(rows_r[k] - rows_null[k])
            boot.append(np.abs(resampled_r(d, counts[dom])) - rows_null[k])
        if not vals:
            continue
        agg = np.nanmax if (use_max and rows_multi[pos[0]]) else np.nanmean
        point.setdefault(tutor, []).append(float(agg(vals)))
        with np.errstate(all="ignore"), _quiet():
            reps.setdefault(tutor, []).append(agg(np.vstack(boot), axis=0))
    tutors = sorted(point)
    value = np.array([np.mean(point[t]) for t in tutors])
    with _quiet():
        boot_val = np.vstack([np.nanmean(np.vstack(reps[t]), axis=0) for t in tutors])  # tutors × B
        # |r| of a resample carries the resampling noise on top of the sample's: re-centre each
        # tutor's bootstrap values on its point estimate (bias-corrected percentile bootstrap)
        boot_val = boot_val - (np.nanmean(boot_val, axis=1) - value)[:, None]
    if unbiased:  # re-centred on the mean r², then the signed root (monotone: ranks unchanged)
        value, boot_val = signed_root(value), signed_root(boot_val)
    filled = np.where(np.isnan(boot_val), np.inf, boot_val)  # a tutor without a value ranks last
    boot_rank = rankdata(filled, axis=0)
    rank_ci = [percentile_ci(row, level, methods=("lower", "higher")) for row in boot_rank]
    value_ci = [percentile_ci(row, level) for row in boot_val]
    point_rank = rankdata(value)
    rows = []
    for k, t in enumerate(tutors):
        (lo_r, hi_r), (lo_v, hi_v) = rank_ci[k], value_ci[k]
        others = [tutors[j] for j in range(len(tutors))
                  if j != k and rank_ci[j][0] <= hi_r and lo_r <= rank_ci[j][1]]
        rows.append((t, quantity, value[k], lo_v, hi_v, point_rank[k], lo_r, hi_r, bool(others),
                     ", ".join(others)))
    out = pd.DataFrame(rows, columns=cols).sort_values(["rank", "tutor"], kind="stable").reset_index(drop=True)
    return out


class _quiet:
    """Silence numpy's 'mean of empty slice' for resamples in which a unit has no valid pair."""

    def __enter__(self):
        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(self, *exc):
        return self._w.__exit__(*exc)


def tied_groups(intervals) -> list[list[str]]:
    """Connected groups of tutors whose rank intervals overlap (for a 'tied' marker)."""
    t = intervals.sort_values("rank_low")
    groups: list[list[str]] = []
    hi = -math.inf
    for row in t.itertuples(index=False):
        if groups and row.rank_low <= hi:
            groups[-1].append(row.tutor)
            hi = max(hi, row.rank_high)
        else:
            groups.append([row.tutor])
            hi = row.rank_high
    return groups
