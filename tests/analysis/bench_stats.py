"""Benchmark: the full paper grid of paired contrasts on synthetic data (not a pytest test).

    .venv/bin/python tests/analysis/bench_stats.py [--n-boot 1000] [--naive-rows 12] [--old-rows 120]

5 tutors × 3 domains (907 + 500 + 500 questions) × 3 conditions (17 levels), 9 metrics (five
rates of a few judged turns: ties and zeros; four conversation metrics, two of them continuous),
B = 1000. Prints ms per contrast row of

* new: ``grid.contrast_grid`` on the whole grid, noise floor (sign-flip null), FDR, the verdicts
  (exact sign-flip p below 50 pairs, unit-level FDR, equivalence intervals, MDE, unbiased effect
  size) and the turn-level test of the five rates (the frame carries their turn counts) included,
  plus ``grid.dimension_summary`` (the units and their verdicts); the optional simultaneous bounds
  (``--simultaneous``) are timed on their own;
* old: the per-row algorithm it replaced (frozen in ``tests/analysis/stats_reference.py``: pandas
  pivot + per-pair rankdata, scipy Wilcoxon and the counting bootstrap) on ``--old-rows`` rows
  sampled from the grid, plus the old pandas pairing loop over the whole grid, per row;
* naive: ``scipy.stats.wilcoxon`` + ``scipy.stats.bootstrap`` (percentile CI of the same r) per
  row, on ``--naive-rows`` sampled rows; "naive + noise" adds ``scipy.stats.permutation_test``
  (sign flips, B resamples) for the noise floor;

and the ratios (goal: naive / new >= 40).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as ss

from edufair_metrics.analysis.cells import cell_matrices, contrast_pairs
from edufair_metrics.analysis.engine import round_diffs
from edufair_metrics.analysis.grid import contrast_grid, dimension_summary
from edufair_metrics.analysis.simultaneous import simultaneous_bounds
from edufair_metrics.protocol import condition_levels
from edufair_metrics.protocol.contrasts import load_contrasts
from edufair_metrics.records import ALL_METRICS, PEDAGOGICAL_METRICS
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere
from tests.analysis import stats_reference as ref  # noqa: E402

LEVELS = {c: [lv.level for lv in condition_levels(c)] for c in ("explicit", "implicit", "opposite")}
DOMAINS = {"mathematics": 907, "physics": 500, "chemistry": 500}
CONTINUOUS = ("tutor_avg_word", "tutor_student_word_ratio")


def synthetic_long(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frames = []
    for t in range(5):
        for dom, n in DOMAINS.items():
            q = rng.uniform(0.2, 0.8, size=(n, len(ALL_METRICS)))
            for cond, levels in LEVELS.items():
                for lv in levels:
                    v = np.clip(np.round((q + rng.normal(0, 0.1, q.shape)) * 5) / 5, 0, 1)  # rates: ties, zeros
                    for j, m in enumerate(ALL_METRICS):
                        if m in CONTINUOUS:  # word counts and ratios: (almost) no ties
                            v[:, j] = np.round(40 * q[:, j] + rng.normal(0, 5, n), 2)
                    v[rng.random(v.shape) < 0.02] = np.nan  # missing labels
                    df = pd.DataFrame(v, columns=list(ALL_METRICS))
                    df["question_id"] = [f"{dom[:4]}-{i}" for i in range(n)]
                    df = df.melt(id_vars="question_id", var_name="metric", value_name="value")
                    rate = df["metric"].isin(PEDAGOGICAL_METRICS) & df["value"].notna()
                    df["n_applicable"] = np.where(rate, 5.0, np.nan)  # the rates are k/5 of five judged turns
                    df["n_positive"] = np.where(rate, np.round(df["value"] * 5), np.nan)
                    df["tutor"], df["task"], df["domain"], df["condition"], df["dimension"], df["level"] = (
                        f"tutor{t}", f"edufair_{cond}", dom, cond, "d", lv)
                    frames.append(df)
    return pd.concat(frames, ignore_index=True)


def grid_differences(df: pd.DataFrame) -> list[np.ndarray]:
    """The difference vector of every non-Friedman grid row (the rows timed per row below)."""
    specs = [s for s in load_contrasts() if s.kind != "multilevel"]
    return [d[~np.isnan(d)] for *_, d in contrast_pairs(cell_matrices(df), specs)]


def naive_row(d: np.ndarray, n_boot: int, seed: int, noise: bool):
    stat = lambda x: ref.rank_biserial(round_diffs(x))[2]  # noqa: E731
    r = stat(d)
    p = ss.wilcoxon(d, zero_method="pratt").pvalue
    ci = ss.bootstrap((d,), stat, vectorized=False, n_resamples=n_boot, method="percentile",
                      random_state=np.random.default_rng(seed)).confidence_interval
    if noise:  # noise floor: mean |r| over random sign flips
        res = ss.permutation_test((d,), stat, permutation_type="samples", vectorized=False, n_resamples=n_boot,
                                  random_state=np.random.default_rng(seed))
        np.mean(np.abs(res.null_distribution))
    return r, p, ci


def old_pandas_loop(df: pd.DataFrame) -> float:
    """Seconds of the old grid's pandas part (pivot, groups, per-pair level vectors), no statistics."""
    t0 = time.perf_counter()
    specs = load_contrasts()
    for (_, _, cond, _), sub in ref.cell_groups(ref.wide_scores(df)):
        sub = sub.dropna(axis=1, how="all")
        for spec in specs:
            if spec.condition == cond and spec.kind != "multilevel":
                for *_, d in ref.pair_differences(sub, spec):
                    np.round(d[~np.isnan(d)], 12)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--naive-rows", type=int, default=12)
    ap.add_argument("--old-rows", type=int, default=120)
    args = ap.parse_args()
    t0 = time.perf_counter()
    df = synthetic_long()
    print(f"synthetic data: {len(df):,} rows ({time.perf_counter() - t0:.1f} s)")

    c0, t0 = time.process_time(), time.perf_counter()
    grid = contrast_grid(df, n_boot=args.n_boot, seed=0)
    units = dimension_summary(grid)
    t_new, cpu_new = time.perf_counter() - t0, time.process_time() - c0
    n_rows = len(grid)
    new_ms = 1000 * t_new / n_rows
    print(f"new contrast_grid + dimension_summary (noise floor, FDR, verdicts, turn-level test included): {n_rows} rows, "
          f"{len(units)} units, B = {args.n_boot}: {t_new:.1f} s wall, {cpu_new:.1f} s CPU -> {new_ms:.2f} ms/row")
    t0 = time.perf_counter()
    simultaneous_bounds(df, grid, margin=0.1, n_boot=args.n_boot, seed=0)
    print(f"optional simultaneous bounds (--simultaneous, one shared resample, max-|T|): {time.perf_counter() - t0:.1f} s")

    diffs = grid_differences(df)
    rng = np.random.default_rng(1)
    pick = rng.choice(len(diffs), size=min(args.old_rows, len(diffs)), replace=False)
    t0 = time.perf_counter()
    for i in pick:
        ref.contrast_from_diffs(diffs[i], n_boot=args.n_boot, seed=0, min_pairs=15)
    old_stat_ms = 1000 * (time.perf_counter() - t0) / len(pick)
    old_loop_ms = 1000 * old_pandas_loop(df) / len(diffs)
    old_ms = old_stat_ms + old_loop_ms
    print(f"old per-row algorithm (no noise floor): {old_stat_ms:.2f} ms/row statistics ({len(pick)} sampled rows) "
          f"+ {old_loop_ms:.2f} ms/row pandas loop = {old_ms:.2f} ms/row (≈ {old_ms * n_rows / 1000:.0f} s for the grid)")

    pick = rng.choice(len(diffs), size=min(args.naive_rows, len(diffs)), replace=False)
    timings = {}
    for noise in (False, True):
        t0 = time.perf_counter()
        for i in pick:
            naive_row(diffs[i], args.n_boot, 0, noise)
        timings[noise] = 1000 * (time.perf_counter() - t0) / len(pick)
    print(f"naive scipy loop ({len(pick)} sampled rows): {timings[False]:.0f} ms/row (wilcoxon + bootstrap), "
          f"{timings[True]:.0f} ms/row with a permutation_test noise floor")
    ratio = timings[False] / new_ms
    print(f"ratios: naive / new = {ratio:.0f}× (goal ≥ 40×: {'met' if ratio >= 40 else 'NOT met'}), "
          f"naive+noise / new = {timings[True] / new_ms:.0f}×, old / new = {old_ms / new_ms:.1f}×")


if __name__ == "__main__":
    main()
