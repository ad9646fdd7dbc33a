"""Calibration of the verdicts on an independent generator of judged dialogues (not a pytest test).

    python tests/analysis/sim_verdicts.py [--reps 25] [--n-boot 400] [--quick]

The generator (:func:`simulate_frame`) writes per-dialogue scores the way EduFair computes them:
per question a difficulty u_q ~ N(0, 1); per dialogue (question × level) T tutor turns (1–10,
longer for harder questions) and a dialogue effect e_d ~ N(0, 0.5) (turns of one dialogue are
correlated); per turn and pedagogical metric an applicability draw (mistake_recognize and
corrective_tone apply on about half of the turns) and a binary judge label with logit
``base_m + 0.8 u_q + e_d + δ_m · [level biased]``; the per-dialogue rate is positives /
applicable turns (NaN without an applicable turn), and ``tutor_turns`` = T. Base rates differ by
metric (answer_leakage is rare: most of its differences are zero). Levels: the protocol's Explicit
(gender, immigration, language, SES with its Friedman family) and Implicit (four names, two pairs
per contrast) conditions.

Planted bias: the "a" levels of the Explicit binary contrasts (female, immigrant, other_language,
low_income) and the female names (jessica, ji_yoon) get the per-turn shift δ_m, calibrated per
metric (:func:`calibrate`, bisection on 40,000 simulated questions) so that a biased pair has
population |r| = 0.1, 0.2 or 0.4 *without* length differences (the mean r of three samples of 200,000 questions, SE ≈ 0.0015). A
pair is biased when exactly one of
its levels is. Length differences (``length=True``): the biased-set levels' dialogues last 8–10
turns, the others' 1–2, with the same per-turn behaviour (δ = 0 for "no bias").

Printed tables: shares of rows and units flagged / unconfirmed / certified / inconclusive by truth;
the Implicit two-pair units' false violations under the null; the false-certify rate when the true
|r| exceeds the margin; the CI gate's outcomes on null pairs of runs with different zero shares and
on a planted increase; unbiased |r| against excess |r| at n = 150 and 500. Seeded; minutes.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere
from edufair_metrics.analysis.compare import compare_frames  # noqa: E402
from edufair_metrics.analysis.engine import paired_rows, round_diffs  # noqa: E402
from edufair_metrics.analysis.params import StatParams, analyse_frame  # noqa: E402
from edufair_metrics.analysis.verdicts import add_row_verdicts  # noqa: E402
from edufair_metrics.protocol import condition_levels  # noqa: E402

METRICS = {  # base logit, share of turns the metric applies to
    "mistake_recognize": (-0.3, 0.55),
    "answer_leakage": (-2.6, 1.0),
    "step_scaffolded": (0.6, 1.0),
    "actionability": (0.0, 1.0),
    "corrective_tone": (-0.5, 0.55),
}
BIASED_LEVELS = ("female", "immigrant", "other_language", "low_income", "jessica", "ji_yoon")
CONDITIONS = ("explicit", "implicit")
LEVELS = {c: [(lv.dimension, lv.level) for lv in condition_levels(c)] for c in CONDITIONS}


def _turns(rng, u: np.ndarray, long: bool | None, short=(1, 2)) -> np.ndarray:
    if long is None:  # 1–10 turns, harder questions last longer
        p = 1 / (1 + np.exp(-(u + rng.normal(0, 0.7, u.size))))
        return np.clip(np.round(1 + 9 * p), 1, 10).astype(int)
    return rng.integers(8, 11, u.size) if long else rng.integers(short[0], short[1] + 1, u.size)


def _dialogue_rates(rng, u, turns, delta: dict[str, float], metrics=METRICS, slope: float = 0.0):
    """Per metric (value, n_applicable, n_positive, applicable mask, positive mask) arrays over
    the dialogues (one per question); ``slope``: the per-turn logit rises by this much per turn
    position (the same curve for every level)."""
    n, tmax = u.size, 10
    e = rng.normal(0, 0.5, n)
    alive = np.arange(tmax)[None, :] < turns[:, None]
    bit = 2.0 ** np.arange(tmax)
    out = {}
    for m, (base, app) in metrics.items():
        applies = alive & (rng.random((n, tmax)) < app)
        logit = base + 0.8 * u[:, None] + e[:, None] + delta.get(m, 0.0) + slope * np.arange(tmax)[None, :]
        pos = applies & (rng.random((n, tmax)) < 1 / (1 + np.exp(-logit)))
        k, y = applies.sum(axis=1), pos.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[m] = (np.where(k > 0, y / np.where(k > 0, k, 1), np.nan), k.astype(float), y.astype(float),
                      applies @ bit, pos @ bit)
    return out


def simulate_frame(n: int, deltas: dict[str, float] | None = None, *, length: bool = False, seed: int = 0,
                   tutor: str = "t", domain: str = "physics", metrics=METRICS, conditions=CONDITIONS,
                   biased=BIASED_LEVELS, slope: float = 0.0, short=(1, 2), positions: bool = True) -> pd.DataFrame:
    """The long score frame (with n_applicable / n_positive and, with ``positions``, the per-position
    masks turn_app_mask / turn_pos_mask) of one tutor (module docstring). ``slope``: the per-turn
    logit rises by this much per turn position for every level; ``short``: the turn range of the
    short dialogues with ``length``."""
    rng = np.random.default_rng(seed)
    deltas = deltas or {}
    u = rng.normal(0, 1, n)
    qid = np.array([f"{domain[:3]}-{i:04d}" for i in range(n)])
    parts = []
    for cond in conditions:
        for dim, lv in LEVELS[cond]:
            is_b = lv in biased
            turns = _turns(rng, u, is_b if length else None, short)
            rates = _dialogue_rates(rng, u, turns, deltas if is_b else {}, metrics, slope)
            rows = {"metric": [], "value": [], "n_applicable": [], "n_positive": [], "turn_app_mask": [],
                    "turn_pos_mask": []}
            for m, (v, k, y, am, pm) in rates.items():
                rows["metric"] += [m] * n
                rows["value"] += list(v)
                rows["n_applicable"] += list(k)
                rows["n_positive"] += list(y)
                rows["turn_app_mask"] += list(am)
                rows["turn_pos_mask"] += list(pm)
            rows["metric"] += ["tutor_turns"] * n
            rows["value"] += list(turns.astype(float))
            for c in ("n_applicable", "n_positive", "turn_app_mask", "turn_pos_mask"):
                rows[c] += [np.nan] * n
            df = pd.DataFrame(rows)
            if not positions:
                df = df.drop(columns=["turn_app_mask", "turn_pos_mask"])
            df["question_id"] = np.tile(qid, len(metrics) + 1)
            df["tutor"], df["task"], df["domain"], df["condition"], df["dimension"], df["level"] = (
                tutor, f"edufair_{cond}_{domain}", domain, cond, dim, lv)
            parts.append(df)
    return pd.concat(parts, ignore_index=True)


def pair_diffs(n: int, delta: float, metric: str, *, length: bool = False, seed: int = 0) -> np.ndarray:
    """The differences of one biased pair (level a biased) of one metric, NaN dropped, rounded."""
    rng = np.random.default_rng(seed)
    u = rng.normal(0, 1, n)
    m = {metric: METRICS[metric]}
    a = _dialogue_rates(rng, u, _turns(rng, u, True if length else None), {metric: delta}, m)[metric][0]
    b = _dialogue_rates(rng, u, _turns(rng, u, False if length else None), {}, m)[metric][0]
    d = a - b
    return round_diffs(d[~np.isnan(d)])


def population_r(delta: float, metric: str, n: int = 200_000, seed: int = 12345, seeds: int = 3) -> float:
    """The r of ``seeds`` independent samples of n questions, averaged (SE ≈ 0.0015)."""
    from edufair_metrics.analysis.contrast import rank_biserial

    return float(np.mean([rank_biserial(pair_diffs(n, delta, metric, seed=seed + 7919 * k))[2] for k in range(seeds)]))


@functools.lru_cache(maxsize=None)
def calibrate(target: float, metric: str) -> float:
    """The per-turn logit shift δ whose biased pair has population r = ``target`` (no length
    differences; bisection with common random numbers)."""
    if target == 0:
        return 0.0
    lo, hi = 0.0, 4.0
    for _ in range(15):
        mid = (lo + hi) / 2
        if population_r(mid, metric) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def deltas_for(target: float) -> dict[str, float]:
    return {m: calibrate(target, m) for m in METRICS}


def _truth(grid) -> np.ndarray:
    a = grid["a"].astype(str).str.split("+")
    b = grid["b"].astype(str).str.split("+")
    return np.array([(set(x) <= set(BIASED_LEVELS)) != (set(y) <= set(BIASED_LEVELS)) for x, y in zip(a, b)])


VERDICT_ORDER = ("flag", "unconfirmed", "certify", "inconclusive", "insufficient")


def shares(v: pd.Series) -> dict[str, float]:
    c = v.value_counts(normalize=True)
    return {k: float(c.get(k, 0.0)) for k in VERDICT_ORDER}


def grid_shares(reps: int, n_boot: int, ns=(60, 150, 500), targets=(0.0, 0.1, 0.2, 0.4), lengths=(False, True)):
    rows, units_rows = [], []
    for length in lengths:
        for target in targets:
            deltas = deltas_for(target)
            for n in ns:
                gs, us = [], []
                for rep in range(reps):
                    df = simulate_frame(n, deltas, length=length, seed=1000 * rep + n + int(100 * target) + 7 * length)
                    grid, units = analyse_frame(df, StatParams(n_boot=n_boot, seed=rep))
                    grid = grid.assign(truth=_truth(grid))
                    gs.append(grid)
                    # a unit is biased when one of its pairs is
                    t = grid.groupby(["contrast", "metric"])["truth"].any()
                    us.append(units.assign(truth=[t.get((c, m), False) for c, m in zip(units["contrast"], units["metric"])]))
                g, u = pd.concat(gs), pd.concat(us)
                ped_g = g[g["metric_kind"] == "pedagogical"]
                ped_u = u[(u["metric_kind"] == "pedagogical") & u["headline"]]
                for _label, frame, out in (("rows", ped_g, rows), ("units", ped_u, units_rows)):
                    for truth in (True, False):
                        sub = frame[frame["truth"] == truth]
                        if len(sub) == 0 or (target == 0 and not length and truth):
                            continue
                        out.append({"length diff.": "yes" if length else "no", "planted |r|": target, "n": n,
                                    "truth": "biased" if truth else "null", "count": len(sub),
                                    "mean |r|": float(sub["abs_r"].mean()), **shares(sub["verdict"])})
    return pd.DataFrame(rows), pd.DataFrame(units_rows)


def implicit_null(reps: int, n_boot: int, ns=(60, 150, 500)):
    """Implicit two-pair units under no bias: the share of units with a raw violation by the old
    rule (either pair's 95% CI excludes 0), by the new one (either pair's 97.5% CI: Bonferroni), of
    units with p_unit < 0.05, and flagged (FDR over the family)."""
    out = []
    for n in ns:
        old = new = punit = flag = total = 0
        for rep in range(reps):
            df = simulate_frame(n, {}, seed=50_000 + 31 * rep + n, conditions=("implicit",))
            grid, units = analyse_frame(df, StatParams(n_boot=n_boot, seed=rep))
            g = grid[(grid["kind"] == "pairs") & grid["sufficient"]]
            old += int(g.groupby(["contrast", "metric"])["violation"].any().sum())
            u = units[(units["kind"] == "pairs") & units["sufficient"]]
            new += int(u["violation"].sum())
            punit += int((u["p_unit"] < 0.05).sum())
            flag += int((u["verdict"] == "flag").sum())
            total += len(u)
        out.append({"n": n, "units": total, "old rule (any 95% CI)": old / total, "new rule (97.5% CI, Bonferroni)": new / total,
                    "p_unit < 0.05": punit / total, "flagged (FDR)": flag / total})
    return pd.DataFrame(out)


def false_certify(reps: int, n_boot: int):
    """Rows whose true |r| is at or above the margin: the share certified (must stay <= 5%)."""
    out = []
    configs = [(0.10, 0.10, n) for n in (150, 500, 2000)] + [(0.10, 0.12, n) for n in (500, 2000)] \
        + [(0.10, 0.15, n) for n in (500, 2000)] + [(0.30, 0.30, n) for n in (60, 150)] + [(0.30, 0.35, n) for n in (60, 150)]
    for margin, target, n in configs:
        cert = total = 0
        for metric in ("actionability", "answer_leakage"):
            delta = calibrate(target, metric)
            diffs = [pair_diffs(n, delta, metric, seed=70_000 + rep + 97 * n) for rep in range(reps)]
            res = paired_rows(diffs, n_boot=n_boot, seed=1, min_pairs=15)
            g = pd.DataFrame({k: getattr(res, k) for k in ("n_pairs", "r", "p", "p_exact", "boot_sd", "null_var_r",
                                                           "ci_low", "ci_high", "ci_low_unit", "ci_high_unit", "sufficient")})
            g = g.assign(kind="binary", posthoc=False, violation=False, tutor=[f"t{i}" for i in range(len(g))],
                         domain="d", condition="c", contrast="x", dimension="x", metric=metric,
                         metric_kind="conversation", headline=True)
            add_row_verdicts(g, margin=margin)
            cert += int(g["certified"].sum())
            total += len(g)
        measured = np.mean([population_r(calibrate(target, m), m, seed=4242, seeds=2)
                            for m in ("actionability", "answer_leakage")])
        out.append({"margin": margin, "true |r|": target, "true |r| (re-measured)": measured, "n": n, "rows": total,
                    "certified (false)": cert / total})
    return pd.DataFrame(out)


def _row_frame(diffs, n_boot: int, seed: int, metric: str) -> pd.DataFrame:
    res = paired_rows(diffs, n_boot=n_boot, seed=seed, min_pairs=15)
    g = pd.DataFrame({k: getattr(res, k) for k in ("n_pairs", "n_zero", "r", "p", "p_exact", "boot_sd", "null_var_r",
                                                   "ci_low", "ci_high", "ci_low_unit", "ci_high_unit", "sufficient")})
    return g.assign(kind="binary", posthoc=False, violation=False, tutor=[f"t{i}" for i in range(len(g))],
                    domain="d", condition="c", contrast="x", dimension="x", metric=metric,
                    metric_kind="conversation", headline=True)


def n_decide_holds(reps: int, n_boot: int, n: int = 150, margin: float = 0.10, targets=(0.0, 0.05)):
    """Rows of n pairs print ``n_decide``; a fresh row of that many pairs (same truth) is flagged or
    certified how often? (≥ 80% ± 5 points)."""
    out = []
    for target in targets:
        for metric in ("actionability", "answer_leakage"):
            delta = calibrate(target, metric)
            g = _row_frame([pair_diffs(n, delta, metric, seed=150_000 + rep) for rep in range(reps)], n_boot, 1, metric)
            add_row_verdicts(g, margin=margin)
            need = g["n_decide"].to_numpy(dtype=float)
            ok = np.isfinite(need) & (need <= 20_000)
            fresh = [pair_diffs(int(k), delta, metric, seed=160_000 + rep) for rep, k in enumerate(need) if np.isfinite(k)
                     and k <= 20_000]
            h = _row_frame(fresh, n_boot, 2, metric)
            add_row_verdicts(h, margin=margin)
            decided = h["verdict"].isin(["flag", "certify"])
            p = float(decided.mean()) if len(h) else float("nan")
            out.append({"true |r|": target, "metric": metric, "n": n, "rows": reps,
                        "n_decide finite (≤ 20,000)": float(ok.mean()), "median n_decide": float(np.nanmedian(need)),
                        "fresh rows decided": p, "± MC": float(np.sqrt(p * (1 - p) / max(len(h), 1)))})
    return pd.DataFrame(out)


def gate_outcomes(reps: int, n_boot: int, ns=(60, 150, 500)):
    """The CI gate on null pairs of runs with different zero shares (the candidate's rates mostly 0),
    and on a planted increase (|r| = 0.4 on the biased levels)."""
    out = []
    sat = {"mistake_recognize": (-3.3, 0.55), "answer_leakage": (-5.0, 1.0), "step_scaffolded": (-2.6, 1.0),
           "actionability": (-3.0, 1.0), "corrective_tone": (-3.5, 0.55)}
    for n in ns:
        for case in ("null, same zero shares", "null, different zero shares", "planted increase |r| = 0.4"):
            counts = {"pass": 0, "inconclusive": 0, "fail": 0}
            old_fail = 0
            for rep in range(reps):
                base = simulate_frame(n, {}, seed=90_000 + rep + n, tutor="b")
                if case.startswith("null, same"):
                    cand = simulate_frame(n, {}, seed=95_000 + rep + n, tutor="c")
                elif case.startswith("null"):
                    cand = simulate_frame(n, {}, seed=95_000 + rep + n, tutor="c", metrics=sat)
                else:
                    cand = simulate_frame(n, deltas_for(0.4), seed=95_000 + rep + n, tutor="c")
                res = compare_frames(base, cand, n_boot=n_boot, seed=rep)
                counts[res.status] += 1
                h = res.headline
                old_fail += int(h["delta"] > 0.05 and h["delta_ci_low"] > 0)
            out.append({"case": case, "n": n, "reps": reps, **{k: v / reps for k, v in counts.items()},
                        "old gate (Δ|r̄| > 0.05, CI > 0) fails": old_fail / reps})
    return pd.DataFrame(out)


def effect_sizes(reps: int, n_boot: int, ns=(150, 500)):
    """Mean over biased pedagogical rows of |r|, excess |r| and the unbiased |r| at a true |r| = 0.2."""
    out = []
    deltas = deltas_for(0.2)
    for n in ns:
        vals = {"abs_r": [], "excess_abs_r": [], "r2_unbiased": []}
        for rep in range(reps):
            df = simulate_frame(n, deltas, seed=120_000 + rep + n, conditions=("explicit",))
            grid, _ = analyse_frame(df, StatParams(n_boot=n_boot, seed=rep))
            g = grid[(grid["metric_kind"] == "pedagogical") & _truth(grid) & grid["sufficient"]]
            for k in vals:
                vals[k] += g[k].tolist()
        m2 = float(np.nanmean(vals["r2_unbiased"]))
        out.append({"true |r|": 0.2, "n": n, "mean |r|": float(np.nanmean(vals["abs_r"])),
                    "mean excess |r|": float(np.nanmean(vals["excess_abs_r"])),
                    "unbiased |r| (root of mean r2_unbiased)": float(np.sign(m2) * np.sqrt(abs(m2)))})
    return pd.DataFrame(out)


def _print(title: str, df: pd.DataFrame) -> None:
    from edufair_metrics.report.tables import to_markdown

    fmt = df.copy()
    for c in fmt.columns:
        if fmt[c].dtype.kind == "f" and c not in ("planted |r|", "margin", "true |r|"):  # 3 decimals
            fmt[c] = fmt[c].map(lambda x: f"{x:.3f}")
    print(to_markdown(fmt, title))
    sys.stdout.flush()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=25)
    ap.add_argument("--n-boot", type=int, default=400)
    ap.add_argument("--quick", action="store_true", help="3 replicates, B = 200 (a smoke run)")
    ap.add_argument("--only", choices=("n_decide",), help="just this table")
    ap.add_argument("--nd-ns", default="150", help="n_decide table: comma-separated pairs per row")
    ap.add_argument("--nd-targets", default="0,0.05", help="n_decide table: comma-separated true |r|")
    args = ap.parse_args()
    reps, B = (3, 200) if args.quick else (args.reps, args.n_boot)
    t0 = time.perf_counter()
    nd_targets = tuple(float(x) for x in args.nd_targets.split(","))
    if args.only == "n_decide":
        for nd_n in (int(x) for x in args.nd_ns.split(",")):
            _print(f"n_decide at n = {nd_n}, margin 0.10: fresh rows at the printed n ({reps * 8} rows per line)",
                   n_decide_holds(reps * 8, B, n=nd_n, targets=nd_targets))
        print(f"({time.perf_counter() - t0:.0f} s)")
        return
    print("calibrated per-turn logit shifts δ (population |r| of a biased pair, no length differences):")
    for target in (0.1, 0.2, 0.4):
        print(f"  |r| = {target}: " + ", ".join(f"{m} {d:.3f}" for m, d in deltas_for(target).items()))
    print()
    rows, units = grid_shares(reps, B)
    _print(f"Rows (pedagogical contrast pairs), share by verdict, {reps} replicates per line", rows)
    _print(f"Units (pedagogical headline units), share by verdict, {reps} replicates per line", units)
    _print(f"Implicit two-pair units under no bias ({reps * 8} replicates per line)", implicit_null(reps * 8, B))
    _print(f"False certification when the true |r| is at or above the margin ({reps * 16} rows per metric and line)",
           false_certify(reps * 16, B))
    _print(f"CI gate outcomes ({reps} replicate pairs of runs per line)", gate_outcomes(reps, B))
    _print(f"n_decide at n = 150, margin 0.10: fresh rows at the printed n ({reps * 8} rows per line)",
           n_decide_holds(reps * 8, B))
    _print(f"Effect size at a true |r| of 0.2 (biased pedagogical rows, {reps} replicates)", effect_sizes(reps, B))
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
