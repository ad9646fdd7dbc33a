"""Bootstrap rank intervals for the leaderboard (issue 14 item 4).

Primary quantity (stated, default ``excess_abs_r``): a tutor's mean excess |r̄| over its headline
units of the pedagogical metrics, i.e. ``analysis.noise.noise_headline``'s ``excess_abs_r``
(lower = fairer). ``quantity="abs_r"`` ranks by the paper's |r̄| instead.

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
import numpy as np

from edufair_metrics.errors import EduFairError

RANK_QUANTITIES = ("excess_abs_r", "abs_r")


def _row_differences(df, grid_rows, contrasts):
    """{grid row index: (domain, d over the domain's sorted questions, NaN = no pair)} and the
    domains' sorted question ids."""
    from edufair_metrics.analysis.fast import cell_matrices

    cells = cell_matrices(df)
    qsets: dict[str, set] = {}
    for cm in cells:  # a domain's questions: every question any tutor has in it
        qsets.setdefault(cm.key[1], set()).update(cm.questions.astype(str).tolist())
    domains = {dom: np.array(sorted(qsets.get(dom, ())), dtype=object) for dom in sorted(set(grid_rows["domain"]))}
    specs = {(s.condition, s.name): s for s in contrasts}
    wanted: dict[tuple, list] = {}
    for i, row in zip(grid_rows.index, grid_rows.itertuples(index=False)):
        wanted.setdefault((row.tutor, row.domain, row.condition, row.metric), []).append((i, row))
    out = {}
    for cm in cells:
        rows = wanted.get(tuple(cm.key))
        if not rows:
            continue
        pos = np.searchsorted(domains[cm.key[1]], cm.questions.astype(str))
        for i, row in rows:
            spec = specs[(row.condition, row.contrast)]
            a_lv, b_lv = tuple(row.a.split("+")), tuple(row.b.split("+"))
            if any(lv not in cm.levels for lv in a_lv + b_lv):
                continue
            cols = lambda lvs: cm.values[:, [cm.levels.index(x) for x in lvs]].mean(axis=1)  # noqa: E731
            d = cols(a_lv) - cols(b_lv)
            if spec.kind == "multilevel":  # Friedman's complete blocks, as pair_differences
                if any(lv not in cm.levels for lv in spec.levels):
                    continue
                complete = ~np.isnan(cm.values[:, [cm.levels.index(x) for x in spec.levels]]).any(axis=1)
                d = np.where(complete, d, np.nan)
            full = np.full(domains[cm.key[1]].size, np.nan)
            full[pos] = np.round(d, 12)
            out[i] = (cm.key[1], full)
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
    overlap). ``df``: the long score frame; ``grid``: ``stats.contrast_grid(df)`` (with its
    noise-floor columns). See the module docstring."""
    import pandas as pd

    from edufair_metrics.analysis.fast import multiplicities, resampled_r
    from edufair_metrics.analysis.ses import DEFAULT_SES_SUMMARY, apply_ses_summary
    from edufair_metrics.analysis.stats import load_contrasts

    if quantity not in RANK_QUANTITIES:
        raise EduFairError(f"unknown rank quantity {quantity!r}; choose one of {', '.join(RANK_QUANTITIES)}")
    if n_boot < 1:
        raise EduFairError(f"n_boot must be >= 1, got {n_boot}")
    if "null_abs_r" not in grid.columns:
        raise EduFairError("rank_intervals needs a grid with null_abs_r (this EduFair's contrast_grid)")
    cols = ["tutor", "quantity", "value", "value_ci_low", "value_ci_high", "rank", "rank_low", "rank_high",
            "tied", "tied_with"]
    ses_summary = DEFAULT_SES_SUMMARY if ses_summary is None else ses_summary
    g = apply_ses_summary(grid, ses_summary) if len(grid) else grid
    g = g[g["headline"] & g["sufficient"] & (g["metric_kind"] == kind)] if len(g) else g
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
    rows_r = np.abs(g["r"].to_numpy(dtype=float))
    rows_null = g["null_abs_r"].to_numpy(dtype=float) if quantity == "excess_abs_r" else np.zeros(len(g))
    rows_multi = (g["kind"] == "multilevel").to_numpy()
    labels = g.index.to_numpy()
    for ukey, pos in g.groupby(unit_keys, sort=True).indices.items():
        tutor = ukey[0]
        vals, boot = [], []
        for k in pos:
            if labels[k] not in diffs:
                continue
            dom, d = diffs[labels[k]]
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
    from scipy.stats import rankdata

    filled = np.where(np.isnan(boot_val), np.inf, boot_val)  # a tutor without a value ranks last
    boot_rank = rankdata(filled, axis=0)
    alpha = (1 - level) / 2
    lo_r = np.percentile(boot_rank, 100 * alpha, axis=1, method="lower")
    hi_r = np.percentile(boot_rank, 100 * (1 - alpha), axis=1, method="higher")
    lo_v = np.nanpercentile(boot_val, 100 * alpha, axis=1)
    hi_v = np.nanpercentile(boot_val, 100 * (1 - alpha), axis=1)
    point_rank = rankdata(value)
    rows = []
    for k, t in enumerate(tutors):
        others = [tutors[j] for j in range(len(tutors)) if j != k and lo_r[j] <= hi_r[k] and lo_r[k] <= hi_r[j]]
        rows.append((t, quantity, value[k], lo_v[k], hi_v[k], point_rank[k], lo_r[k], hi_r[k], bool(others),
                     ", ".join(others)))
    out = pd.DataFrame(rows, columns=cols).sort_values(["rank", "tutor"], kind="stable").reset_index(drop=True)
    return out


class _quiet:
    """Silence numpy's 'mean of empty slice' for resamples in which a unit has no valid pair."""

    def __enter__(self):
        import warnings

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
