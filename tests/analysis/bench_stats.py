"""Benchmark: the full paper grid of paired contrasts on synthetic data (not a pytest test).

    .venv/bin/python tests/analysis/bench_stats.py [--n-boot 1000] [--scipy-cells 12]

5 tutors × 3 domains (907 + 500 + 500 questions) × 3 conditions (17 levels), 9 metrics, B = 1000.
Times ``stats.contrast_grid`` (vectorised bootstrap) on the whole grid, and a per-cell
``scipy.stats.bootstrap`` loop (percentile CI of the same rank-biserial r) on a subset of cells,
extrapolated to the whole grid (printed as such).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from scipy import stats as ss

from edufair_metrics.analysis.stats import contrast_grid, paired_contrast, rank_biserial
from edufair_metrics.protocol import condition_levels
from edufair_metrics.records import ALL_METRICS

LEVELS = {c: [lv.level for lv in condition_levels(c)] for c in ("explicit", "implicit", "opposite")}
DOMAINS = {"mathematics": 907, "physics": 500, "chemistry": 500}


def synthetic_long(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frames = []
    for t in range(5):
        for dom, n in DOMAINS.items():
            q = rng.uniform(0.2, 0.8, size=(n, len(ALL_METRICS)))
            for cond, levels in LEVELS.items():
                for lv in levels:
                    v = np.clip(np.round((q + rng.normal(0, 0.1, q.shape)) * 5) / 5, 0, 1)  # rates: ties, zeros
                    v[rng.random(v.shape) < 0.02] = np.nan  # missing labels
                    df = pd.DataFrame(v, columns=list(ALL_METRICS))
                    df["question_id"] = [f"{dom[:4]}-{i}" for i in range(n)]
                    df = df.melt(id_vars="question_id", var_name="metric", value_name="value")
                    df["tutor"], df["task"], df["domain"], df["condition"], df["dimension"], df["level"] = (
                        f"tutor{t}", f"edufair_{cond}", dom, cond, "d", lv)
                    frames.append(df)
    return pd.concat(frames, ignore_index=True)


def scipy_cell(a: np.ndarray, b: np.ndarray, n_boot: int, seed: int):
    ok = ~(np.isnan(a) | np.isnan(b))
    a, b = a[ok], b[ok]
    r = rank_biserial(np.round(a - b, 12))[2]
    p = ss.wilcoxon(a - b, zero_method="pratt").pvalue
    res = ss.bootstrap((a, b), lambda x, y: rank_biserial(np.round(x - y, 12))[2], paired=True, vectorized=False,
                       n_resamples=n_boot, method="percentile", random_state=np.random.default_rng(seed))
    return r, p, res.confidence_interval


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--scipy-cells", type=int, default=12)
    args = ap.parse_args()
    t0 = time.perf_counter()
    df = synthetic_long()
    print(f"synthetic data: {len(df):,} rows ({time.perf_counter() - t0:.1f} s)")
    t0 = time.perf_counter()
    grid = contrast_grid(df, n_boot=args.n_boot, seed=0)
    t_vec = time.perf_counter() - t0
    n_rows = len(grid)
    print(f"vectorised contrast_grid: {n_rows} contrast rows (pair × metric × cell), B = {args.n_boot}: {t_vec:.1f} s "
          f"({1000 * t_vec / n_rows:.1f} ms/row)")

    # per-cell scipy.stats.bootstrap on a subset of math (n = 907) gender rows, extrapolated
    wide = df[(df["condition"] == "explicit") & (df["domain"] == "mathematics")].pivot_table(
        index=["tutor", "metric", "question_id"], columns="level", values="value")
    keys = list(wide.groupby(level=["tutor", "metric"]).groups)[: args.scipy_cells]
    t0 = time.perf_counter()
    for key in keys:
        sub = wide.loc[key]
        scipy_cell(sub["female"].to_numpy(), sub["male"].to_numpy(), args.n_boot, 0)
    t_sc = (time.perf_counter() - t0) / len(keys)
    t0 = time.perf_counter()
    for key in keys:
        sub = wide.loc[key]
        paired_contrast(sub["female"], sub["male"], n_boot=args.n_boot)
    t_pc = (time.perf_counter() - t0) / len(keys)
    mean_n = grid["n_pairs"].mean()
    scale = (mean_n / 880.0)  # scipy's cost is ~linear in n at fixed B (rank per resample ~ n log n)
    print(f"scipy.stats.bootstrap loop: {t_sc:.2f} s per math cell (n ≈ 880, measured on {len(keys)} cells); "
          f"extrapolated to the {n_rows} rows (mean n = {mean_n:.0f}): ≈ {t_sc * scale * n_rows / 60:.0f} min")
    print(f"paired_contrast on the same math cells: {1000 * t_pc:.1f} ms per cell (speed-up ≈ {t_sc / t_pc:.0f}×)")


if __name__ == "__main__":
    main()
