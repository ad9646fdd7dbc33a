"""The placebo replicate (``edufair_metrics.protocol.placebo``) as an exchangeability check: per tutor,
task and metric, the paired contrast between two runs of the SAME condition level (replicate 1 vs
replicate r) over the same questions, with the same statistics as every demographic contrast, and
per tutor a check that the two runs behave as exchangeable.

Per placebo row (``placebo.csv``, :func:`placebo_floor`)
    ``r``, ``abs_r``, its CI, ``null_abs_r`` (its own sign-flip floor), ``excess_abs_r`` =
    ``abs_r − null_abs_r``, ``p_perm`` (the sign-flip p), ``p_decide`` (the verdicts' decision p:
    the exact sign-flip p below 50 pairs, Wilcoxon from 50) and ``flagged`` = ``p_decide < 0.05``.
    If the replicates are exchangeable (only tutor sampling and judge noise differ, and the same
    way for both), then for every row E[excess] ≈ 0, p_perm is uniform and P(flagged) ≤ 5%.

Per tutor (:func:`exchangeability_check`)
    The rows of one tutor share dialogues (every metric of a question is read from the same two
    dialogues), so they are not independent. Exchangeability of the replicates means swapping
    replicate 1 and r of a question changes nothing: one sign flip per question flips *every*
    metric's difference of that question at once. Over B joint flips (``default_rng(seed)``):
    * ``excess``: the mean over the tutor's sufficient rows of |r| minus the mean of their floors;
      under exchangeability ≈ 0, and ``excess_null_low/high`` is the central 95% of the joint-flip
      values (what exchangeable replicates give); ``excess_ci_low/high``: the estimate ± 1.96 ×
      the SD of a bootstrap over the questions (jointly for all metrics, B resamples; the floors
      held fixed); centred on the estimate because resampled |r| sit above the sample's;
    * ``mean_p``: the mean p_perm of the rows (each row's p against its own B flips); expected
      0.5 (uniform), ``mean_p_null_low/high`` the band of the same mean over the joint flips,
      ``mean_p_ci_low/high`` its bootstrap interval (each resample's p read against the observed
      rows' flips);
    * ``flag_rate``: the share of rows with p_perm < 0.05; expected 5% (``flag_rate_null``: the
      mean over the joint flips, below 5% where ties and zeros make small p impossible),
      ``flag_rate_null_low/high`` its band, ``flag_rate_ci_low/high`` its bootstrap interval;
    * ``p_exch``: the one-sided joint-flip p of the excess (the share of joint flips whose mean |r|
      is at least the observed one).
    **Decision rule**: the check ``fails`` when ``p_exch < 0.05 / m`` (Bonferroni over the m
    tutors that have a placebo replicate). A failed check means the two runs of the same condition
    differ more than exchangeable runs do (a drift between runs, a cache or seed problem, a judge
    that labels the replicate differently): the report then says, above everything else, that the
    verdicts of that tutor's run are not trusted. The verdicts themselves are not changed (the
    placebo enters them as this banner only).
    The placebo |r| is not compared with the demographic |r̄|: the floor of a contrast depends on
    its own share of zero differences (60% identical replicate dialogues, which a greedy student at
    tutor temperature 0.1 makes likely, give a different floor than a demographic contrast), so
    each is read against its own sign-flip null.
    With more than two replicates every replicate r ≥ 2 is compared with replicate 1 and flipped
    on its own (an approximation: those comparisons share replicate 1).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from edufair_metrics.analysis.contrast import DEFAULT_MIN_PAIRS, DEFAULT_N_BOOT, paired_contrast
from edufair_metrics.analysis.engine import EXACT_BELOW, multiplicities, percentile_ci, resampled_r, round_diffs
from edufair_metrics.analysis.grid import metric_kind
from edufair_metrics.protocol.placebo import split_replicate_level

__all__ = ["CHECK_ALPHA", "COST_COLUMNS", "EXCHANGE_COLUMNS", "PLACEBO_COLUMNS", "ExchangeabilityCheck", "exchangeability_check",
           "placebo_cost",
           "placebo_floor", "placebo_pairs", "placebo_summary"]

PLACEBO_COLUMNS = ["tutor", "task", "domain", "condition", "level", "replicate", "metric", "kind", "n_pairs",
                   "r", "abs_r", "ci_low", "ci_high", "null_abs_r", "excess_abs_r", "p_perm", "p_decide", "flagged"]
CHECK_ALPHA = 0.05
ROW_ALPHA = 0.05


def placebo_pairs(long_scores):
    """``(tutor, task, domain, condition, level, replicate, metric, questions, d)`` for every
    placebo comparison (replicate 1 − replicate r ≥ 2 on the questions both have a value for)."""
    if long_scores.empty:
        return
    split = long_scores["level"].map(split_replicate_level)
    df = long_scores.assign(base_level=split.map(lambda t: t[0]), replicate=split.map(lambda t: t[1]))
    reps = df[df["replicate"] > 1]
    if reps.empty:
        return
    keys = ["tutor", "task", "domain", "condition", "base_level"]
    for (tutor, task, domain, condition, level), rep_rows in reps.groupby(keys, sort=True):
        base = df[(df["tutor"] == tutor) & (df["task"] == task) & (df["level"] == level)]
        for replicate, rep in rep_rows.groupby("replicate", sort=True):
            for metric, rep_m in rep.groupby("metric", sort=False):
                a = base[base["metric"] == metric].set_index("question_id")["value"]
                b = rep_m.set_index("question_id")["value"]
                a, b = a.align(b, join="inner")
                yield (tutor, task, domain, condition, level, int(replicate), metric, a.index.astype(str).to_numpy(),
                       a.to_numpy(float) - b.to_numpy(float))


def placebo_floor(long_scores, *, n_boot: int = DEFAULT_N_BOOT, seed: int = 0,
                  min_pairs: int = DEFAULT_MIN_PAIRS):
    """One row per (tutor, task, placebo level, replicate ≥ 2, metric) found in ``long_scores``
    (``analysis.frames.scores_frame``); empty when no run has a placebo replicate."""
    import pandas as pd

    rows: list[dict[str, Any]] = []
    for tutor, task, domain, condition, level, replicate, metric, _q, d in placebo_pairs(long_scores):
        c = paired_contrast(d, np.zeros_like(d), n_boot=n_boot, seed=seed, min_pairs=min_pairs)
        p_decide = (c.p_exact if c.n_pairs < EXACT_BELOW else c.p) if c.sufficient else math.nan
        rows.append({"tutor": tutor, "task": task, "domain": domain, "condition": condition, "level": level,
                     "replicate": replicate, "metric": metric, "kind": metric_kind(metric),
                     "n_pairs": c.n_pairs, "r": c.r, "abs_r": c.abs_r, "ci_low": c.ci_low,
                     "ci_high": c.ci_high, "null_abs_r": c.null_abs_r, "excess_abs_r": c.excess_abs_r,
                     "p_perm": c.p_perm, "p_decide": p_decide,
                     "flagged": bool(c.sufficient and p_decide < ROW_ALPHA)})
    return pd.DataFrame(rows, columns=PLACEBO_COLUMNS)


def placebo_summary(floor):
    """Per tutor, metric kind and domain: the mean placebo |r|, its mean own floor and excess, the
    share of flagged rows and how many placebo contrasts they average."""
    import pandas as pd

    cols = ["tutor", "domain", "kind", "placebo_abs_r", "placebo_floor", "placebo_excess", "flag_rate", "contrasts"]
    if floor.empty:
        return pd.DataFrame(columns=cols)
    ok = floor.dropna(subset=["abs_r"])
    out = (ok.groupby(["tutor", "domain", "kind"], sort=True)
             .agg(placebo_abs_r=("abs_r", "mean"), placebo_floor=("null_abs_r", "mean"),
                  placebo_excess=("excess_abs_r", "mean"), flag_rate=("flagged", "mean"),
                  contrasts=("abs_r", "size")).reset_index())
    return out[cols]


EXCHANGE_COLUMNS = ["tutor", "rows", "questions", "abs_r", "floor", "excess", "excess_ci_low", "excess_ci_high",
                    "excess_null_low", "excess_null_high", "p_exch", "mean_p", "mean_p_ci_low", "mean_p_ci_high",
                    "mean_p_null_low", "mean_p_null_high", "flag_rate", "flag_rate_ci_low", "flag_rate_ci_high",
                    "flag_rate_null", "flag_rate_null_low", "flag_rate_null_high", "alpha", "failed"]


@dataclass(frozen=True)
class ExchangeabilityCheck:
    """One tutor's placebo check (module docstring); ``failed`` is the decision."""

    tutor: str
    rows: int
    questions: int
    abs_r: float
    floor: float
    excess: float
    excess_ci_low: float
    excess_ci_high: float
    excess_null_low: float
    excess_null_high: float
    p_exch: float
    mean_p: float
    mean_p_ci_low: float
    mean_p_ci_high: float
    mean_p_null_low: float
    mean_p_null_high: float
    flag_rate: float
    flag_rate_ci_low: float
    flag_rate_ci_high: float
    flag_rate_null: float
    flag_rate_null_low: float
    flag_rate_null_high: float
    alpha: float
    failed: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _weights(d: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """(positions of the non-NaN differences, their Pratt weights sign(d)·rank·[d ≠ 0], Σ weights):
    r = Σ weights / Σ |weights| (``contrast.rank_biserial``)."""
    from scipy.stats import rankdata

    pos = np.flatnonzero(~np.isnan(d))
    x = round_diffs(d[pos])
    ranks = rankdata(np.abs(x))
    w = np.sign(x) * ranks
    return pos, w, float(np.abs(w).sum())


def _share_at_least(null_abs: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per value: the share of ``null_abs`` (B,) that is >= it (ties within 1e-12 count)."""
    s = np.sort(null_abs)
    return (s.size - np.searchsorted(s, values - 1e-12, side="left")) / s.size


def exchangeability_check(long_scores, *, n_boot: int = DEFAULT_N_BOOT, seed: int = 0,
                          min_pairs: int = DEFAULT_MIN_PAIRS, alpha: float = CHECK_ALPHA):
    """One :class:`ExchangeabilityCheck` per tutor with a placebo replicate, as a DataFrame
    (columns ``EXCHANGE_COLUMNS``; empty without one). ``alpha / m`` (m tutors) decides."""
    import pandas as pd

    groups: dict[str, dict[tuple, list[tuple[np.ndarray, np.ndarray]]]] = {}
    for tutor, task, _domain, _cond, level, replicate, _metric, qs, d in placebo_pairs(long_scores):
        if np.count_nonzero(~np.isnan(d)) < min_pairs:
            continue
        groups.setdefault(tutor, {}).setdefault((task, level, replicate), []).append((qs, d))
    if not groups:
        return pd.DataFrame(columns=EXCHANGE_COLUMNS)
    m = len(groups)
    out = []
    for k, tutor in enumerate(sorted(groups)):
        rng = np.random.default_rng([seed, k])
        obs_abs, floors, null_abs_rows, boot_abs_rows = [], [], [], []
        n_q = 0
        for rows in groups[tutor].values():
            qs = np.unique(np.concatenate([q for q, _ in rows]))
            n_q += qs.size
            flips = rng.choice(np.array([-1.0, 1.0]), size=(n_boot, qs.size))
            counts = multiplicities(rng.integers(0, qs.size, size=(n_boot, qs.size)), qs.size)  # n × B
            for q, d in rows:
                full = np.full(qs.size, np.nan)
                full[np.searchsorted(qs, q)] = d
                pos, w, tot = _weights(full)
                if tot == 0:  # every difference zero: r = 0 under every flip and resample
                    obs_abs.append(0.0)
                    null_abs_rows.append(np.zeros(n_boot))
                    boot_abs_rows.append(np.zeros(n_boot))
                    floors.append(0.0)
                    continue
                r_obs = w.sum() / tot
                null = np.abs(flips[:, pos] @ w) / tot
                obs_abs.append(abs(r_obs))
                null_abs_rows.append(null)
                floors.append(float(null.mean()))
                boot_abs_rows.append(np.abs(np.nan_to_num(resampled_r(round_diffs(full), counts))))
        obs_abs_a = np.asarray(obs_abs)
        null_m = np.vstack(null_abs_rows)  # rows × B
        boot_m = np.vstack(boot_abs_rows)
        floor = float(np.mean(floors))
        excess = float(obs_abs_a.mean() - floor)
        null_excess = null_m.mean(axis=0) - floor
        boot_excess = boot_m.mean(axis=0) - floor
        p_exch = float((1 + np.sum(null_excess >= excess - 1e-12)) / (1 + n_boot))
        # each row's p: its observed |r| (or a flip's, a resample's) against its own B flips
        p_obs = np.array([(1 + np.sum(null_m[j] >= obs_abs_a[j] - 1e-12)) / (1 + n_boot) for j in range(len(obs_abs_a))])
        p_null = np.vstack([_share_at_least(null_m[j], null_m[j]) for j in range(len(obs_abs_a))])
        p_boot = np.vstack([_share_at_least(null_m[j], boot_m[j]) for j in range(len(obs_abs_a))])
        mean_p, flag_rate = float(p_obs.mean()), float((p_obs < ROW_ALPHA).mean())
        ex_ci = _normal_ci(excess, boot_excess, (-1.0, 1.0))
        mp_ci = _normal_ci(mean_p, p_boot.mean(axis=0), (0.0, 1.0))
        fr_ci = _normal_ci(flag_rate, (p_boot < ROW_ALPHA).mean(axis=0), (0.0, 1.0))
        ex_null, mp_null = percentile_ci(null_excess), percentile_ci(p_null.mean(axis=0))
        fr_null = percentile_ci((p_null < ROW_ALPHA).mean(axis=0))
        out.append(ExchangeabilityCheck(
            tutor=str(tutor), rows=int(len(obs_abs_a)), questions=int(n_q), abs_r=float(obs_abs_a.mean()), floor=floor,
            excess=excess, excess_ci_low=ex_ci[0], excess_ci_high=ex_ci[1], excess_null_low=ex_null[0],
            excess_null_high=ex_null[1], p_exch=p_exch, mean_p=mean_p, mean_p_ci_low=mp_ci[0], mean_p_ci_high=mp_ci[1],
            mean_p_null_low=mp_null[0], mean_p_null_high=mp_null[1], flag_rate=flag_rate, flag_rate_ci_low=fr_ci[0],
            flag_rate_ci_high=fr_ci[1], flag_rate_null=float((p_null < ROW_ALPHA).mean()), flag_rate_null_low=fr_null[0],
            flag_rate_null_high=fr_null[1], alpha=alpha / m, failed=bool(p_exch < alpha / m)).to_dict())
    return pd.DataFrame(out, columns=EXCHANGE_COLUMNS)



def _normal_ci(estimate: float, resampled: np.ndarray, bounds: tuple[float, float]) -> tuple[float, float]:
    """``estimate ± 1.96 · SD`` of the bootstrap resamples, clipped to ``bounds``: centred on the
    estimate, because resampled |r| sit above the sample's (a percentile or basic interval of a
    mean |r| near 0 misses its own estimand; measured in tests/analysis/sim_threats.py)."""
    x = np.asarray(resampled, dtype=float)
    x = x[~np.isnan(x)]
    if x.size < 2:
        return math.nan, math.nan
    half = 1.959963984540054 * float(x.std(ddof=1))
    return float(np.clip(estimate - half, *bounds)), float(np.clip(estimate + half, *bounds))


# ---- what the placebo replicate costs ----------------------------------------------------------------

COST_COLUMNS = ["tutor", "dialogues", "main", "placebo", "level", "level_dialogues", "condition", "condition_dialogues"]
SUGGESTED_LEVEL = "female"  # the level the report suggests replicating (its first Explicit level)


def placebo_cost(runs, level: str = SUGGESTED_LEVEL):
    """Per tutor: ``dialogues`` in the run, ``main`` those of the main run (no placebo replicate
    document), ``placebo`` the replicate dialogues (levels ``<level>~replicate<r>``: the cost paid),
    and, for the estimate of one more replicate, ``level`` (``level`` when the main run has it, else
    its first level), ``level_dialogues`` (its dialogues in the main run: what one replicate adds),
    its ``condition`` and ``condition_dialogues`` (that condition's main dialogues). The extra cost of
    the replicate over the main run is ``placebo / main`` (paid) or ``level_dialogues / main``
    (one replicate of ``level``)."""
    import pandas as pd

    rows = []
    for run in runs:
        scores = list(run.scores)
        main = [s for s in scores if split_replicate_level(s.level)[1] == 1]
        chosen = level if any(s.level == level for s in main) else (main[0].level if main else level)
        of_level = [s for s in main if s.level == chosen]
        conditions = {s.condition for s in of_level}
        rows.append({"tutor": run.label, "dialogues": len(scores), "main": len(main), "placebo": len(scores) - len(main),
                     "level": chosen, "level_dialogues": len(of_level),
                     "condition": ", ".join(sorted(conditions)),
                     "condition_dialogues": sum(1 for s in main if s.condition in conditions)})
    return pd.DataFrame(rows, columns=COST_COLUMNS)
