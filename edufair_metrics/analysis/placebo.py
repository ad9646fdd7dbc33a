"""The empirical noise floor from a placebo replicate (``edufair_metrics.protocol.placebo``): per tutor,
task and metric, the paired contrast between two runs of the SAME condition level (replicate 1
vs replicate r) over the same questions, with the same statistics as every demographic contrast.
Its |r| is what tutor sampling plus judge noise alone produce; a demographic |r| is readable only
against it."""

from __future__ import annotations

from typing import Any

from edufair_metrics.analysis.contrast import DEFAULT_MIN_PAIRS, DEFAULT_N_BOOT, paired_contrast
from edufair_metrics.analysis.grid import metric_kind
from edufair_metrics.protocol.placebo import split_replicate_level

PLACEBO_COLUMNS = ["tutor", "task", "domain", "condition", "level", "replicate", "metric", "kind", "n_pairs",
                   "r", "abs_r", "ci_low", "ci_high", "null_abs_r"]


def placebo_floor(long_scores, *, n_boot: int = DEFAULT_N_BOOT, seed: int = 0,
                  min_pairs: int = DEFAULT_MIN_PAIRS):
    """One row per (tutor, task, placebo level, replicate ≥ 2, metric) found in ``long_scores``
    (``analysis.frames.scores_frame``); empty when no run has a placebo replicate."""
    import pandas as pd

    if long_scores.empty:
        return pd.DataFrame(columns=PLACEBO_COLUMNS)
    split = long_scores["level"].map(split_replicate_level)
    df = long_scores.assign(base_level=split.map(lambda t: t[0]), replicate=split.map(lambda t: t[1]))
    reps = df[df["replicate"] > 1]
    if reps.empty:
        return pd.DataFrame(columns=PLACEBO_COLUMNS)
    rows: list[dict[str, Any]] = []
    keys = ["tutor", "task", "domain", "condition", "base_level"]
    for (tutor, task, domain, condition, level), rep_rows in reps.groupby(keys, sort=True):
        base = df[(df["tutor"] == tutor) & (df["task"] == task) & (df["level"] == level)]
        for replicate, rep in rep_rows.groupby("replicate", sort=True):
            for metric, rep_m in rep.groupby("metric", sort=False):
                a = base[base["metric"] == metric].set_index("question_id")["value"]
                b = rep_m.set_index("question_id")["value"]
                a, b = a.align(b, join="inner")
                c = paired_contrast(a.to_numpy(float), b.to_numpy(float), n_boot=n_boot, seed=seed, min_pairs=min_pairs)
                rows.append({"tutor": tutor, "task": task, "domain": domain, "condition": condition, "level": level,
                             "replicate": int(replicate), "metric": metric, "kind": metric_kind(metric),
                             "n_pairs": c.n_pairs, "r": c.r, "abs_r": c.abs_r, "ci_low": c.ci_low,
                             "ci_high": c.ci_high, "null_abs_r": c.null_abs_r})
    return pd.DataFrame(rows, columns=PLACEBO_COLUMNS)


def placebo_summary(floor):
    """Per tutor, metric kind and domain: the mean placebo |r| (the empirical floor beside each
    table) and how many placebo contrasts it averages."""
    import pandas as pd

    if floor.empty:
        return pd.DataFrame(columns=["tutor", "domain", "kind", "placebo_abs_r", "contrasts"])
    ok = floor.dropna(subset=["abs_r"])
    return (ok.groupby(["tutor", "domain", "kind"], sort=True)
              .agg(placebo_abs_r=("abs_r", "mean"), contrasts=("abs_r", "size")).reset_index())
