"""The threats the noise floor cannot see, planted and absent, on synthetic data (not a pytest test).

    python tests/analysis/sim_threats.py [--reps 40] [--n-boot 200] [--quick]

Each part plants one threat, measures how often EduFair catches it, and measures how often it fires
without it (seeded; replicates, B and n printed with every line):

1. **Differential loss** (``analysis.pairloss``): per-dialogue scores (``make_scores``, n questions,
   Explicit) where the female level loses ``mistake_recognize`` (no applicable turn) in 30% of
   its dialogues and the male level in 5% (planted) or both in 15% (null); also a failed-dialogue
   version (failures 25% vs 5%). Rate: the Gender row's ``differential_loss``; and with a real
   bias planted too, the share of flagged rows whose caveat names the loss.
2. **Student drift** (``analysis.drift``): two student metrics per dialogue (words per turn with a
   question effect, noise SD 1.5; a correct-answer rate), the female level's student writing
   ``delta`` more words (planted) or not (null). Rate: the Gender tutor-side rows marked
   ``student_drift``; without drift, the share of replicates with any contrast marked.
3. **Clustered judge error** (``analysis.agreement``): dialogues of T turns, human labels with a
   dialogue propensity, a judge whose error rate is 0.40 on a "hard" third of the dialogues and
   0.04 elsewhere; the true κ from 400,000 dialogues. Rate: how often the nominal 95% CI of κ (and
   α, % agreement) covers the true value when turns are resampled vs when dialogues are.
4. **Judge-contingent** (``analysis.judge_validity``): per-turn labels of 5 metrics on Explicit
   dialogues (1–8 turns), two judges that each flip the true label with probability ``noise``
   independently (they differ only by random label noise); no bias (null), a bias on the female
   level that both judges see, and (planted) a judge B that alone labels 15% more of the female
   level's turns positive. Rate: the contrast rows flagged judge-contingent by the old rule (signs
   differ with a |r| ≥ 0.10, or one violation) and by the new one (paired-bootstrap Δr, FDR; or
   the verdicts differ), overall and on the Gender rows.
5. **Placebo exchangeability** (``analysis.placebo``): a placebo replicate of one level, per
   question and metric a difference of two exchangeable dialogues (null), the same with 60% of the
   questions' replicate dialogues identical (zero differences: the issue's greedy student), and a
   replicate that drifts (every score + ``shift``). Rate: the check fails; mean excess, mean
   p_perm and the flag rate beside what exchangeability gives (≈ 0, 0.5, 5%).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere
from edufair_metrics.analysis.agreement import agreement  # noqa: E402
from edufair_metrics.analysis.contrast import MEANINGFUL_R  # noqa: E402
from edufair_metrics.analysis.grid import contrast_grid  # noqa: E402
from edufair_metrics.analysis.judge_validity import contrast_comparison  # noqa: E402
from edufair_metrics.analysis.params import StatParams, analyse  # noqa: E402
from edufair_metrics.analysis.placebo import exchangeability_check  # noqa: E402
from edufair_metrics.protocol import condition_levels  # noqa: E402
from edufair_metrics.records import PEDAGOGICAL_METRICS  # noqa: E402
from tests.helpers.synthetic_runs import lose_values, make_scores  # noqa: E402

LONG = ["tutor", "task", "domain", "condition", "dimension", "level", "question_id", "metric", "value"]


# ---- 1. differential loss ---------------------------------------------------------------------------

def lose(scores, level: str, share: float, *, rng, metric: str = "mistake_recognize", how: str = "no_value"):
    """``scores`` with ``metric`` taken away from ``share`` of ``level``'s Explicit dialogues
    (``how``: no_value, missing_label, failed)."""
    return lose_values(scores, level, share, rng=rng, metric=metric, how=how)


def loss_part(reps: int, n_boot: int, n: int) -> list[str]:
    params = StatParams(n_boot=n_boot)
    lines = []
    for name, how, (pa, pb), bias in (
            ("planted: no applicable turn 30% vs 5%", "no_value", (0.30, 0.05), None),
            ("null: no applicable turn 15% vs 15%", "no_value", (0.15, 0.15), None),
            ("planted: failed dialogues 25% vs 5%", "failed", (0.25, 0.05), None),
            ("null: failed dialogues 15% vs 15%", "failed", (0.15, 0.15), None),
            ("planted loss + planted bias (+0.3 on female)", "no_value", (0.30, 0.05), 0.3)):
        hits = flagged = flagged_with = 0
        for k in range(reps):
            rng = np.random.default_rng((1, k))
            b = {("explicit", "female", "mistake_recognize"): bias} if bias else None
            scores = make_scores(tutor="t", conditions=("explicit",), n_questions=n, seed=1000 + k, bias=b)
            scores = lose(lose(scores, "female", pa, rng=rng, how=how), "male", pb, rng=rng, how=how)
            _, grid, _ = analyse(scores, params)
            row = grid[(grid["contrast"] == "Gender") & (grid["metric"] == "mistake_recognize")].iloc[0]
            hits += bool(row["differential_loss"])
            if row["verdict"] in ("flag", "unconfirmed"):
                flagged += 1
                flagged_with += row["caveats"].startswith("differential loss")
        line = f"  {name}: differential_loss {hits}/{reps} = {hits / reps:.1%}"
        if bias:
            line += f"; flagged {flagged}/{reps}, of them with the loss caveat {flagged_with}/{max(flagged, 1)}"
        lines.append(line)
    return [f"1. Differential loss (Gender × mistake_recognize; n = {n} questions, B = {n_boot}, {reps} replicates)"] + lines


# ---- 2. student drift -------------------------------------------------------------------------------

def with_student(scores, *, rng, drift: dict[tuple[str, str], float] | None = None):
    """Two student metrics per dialogue: words per turn (question effect N(20, 4), noise SD 1.5,
    + ``drift[(condition, level)]``) and a correct-answer rate (quarters, no effect)."""
    base: dict[str, float] = {}
    out = []
    for s in scores:
        key = f"{s.domain}/{s.question_id}"
        if key not in base:
            base[key] = float(rng.normal(20, 4))
        words = base[key] + rng.normal(0, 1.5) + (drift or {}).get((s.condition, s.level), 0.0)
        correct = float(np.round(rng.random() * 4) / 4)
        out.append(dataclasses.replace(s, scores={**s.scores, "student_words": words,
                                                   "student_correct_answer_rate": correct}))
    return out


def drift_part(reps: int, n_boot: int, n: int) -> list[str]:
    params = StatParams(n_boot=n_boot)
    lines = []
    for name, delta in (("planted: +1.0 student words at female", 1.0), ("planted: +2.0 student words at female", 2.0),
                        ("null: the same student at every level", 0.0)):
        marked = any_marked = rows_marked = rows = 0
        for k in range(reps):
            rng = np.random.default_rng((2, k))
            scores = make_scores(tutor="t", conditions=("explicit",), n_questions=n, seed=2000 + k)
            scores = with_student(scores, rng=rng, drift={("explicit", "female"): delta} if delta else None)
            _, grid, _ = analyse(scores, params)
            tutor_side = grid[grid["metric_kind"].isin(["pedagogical", "conversation", "detector"])]
            g = tutor_side[tutor_side["contrast"] == "Gender"]
            marked += bool(g["student_drift"].all())
            others = tutor_side[tutor_side["contrast"] != "Gender"] if delta else tutor_side
            any_marked += bool(others["student_drift"].any())
            rows_marked += int(others["student_drift"].sum())
            rows += len(others)
        if delta:
            lines.append(f"  {name}: Gender's tutor-side rows marked {marked}/{reps} = {marked / reps:.1%}; "
                         f"other contrasts marked in {any_marked}/{reps} replicates")
        else:
            lines.append(f"  {name}: a contrast marked in {any_marked}/{reps} replicates; rows marked "
                         f"{rows_marked}/{rows} = {rows_marked / max(rows, 1):.2%}")
    return [f"2. Student drift (n = {n} questions, Explicit, B = {n_boot}, {reps} replicates; FDR family: the "
            "student kind)"] + lines


# ---- 3. clustered judge error: coverage -------------------------------------------------------------

def clustered_labels(rng, n_dialogues: int, turns: int = 6, hard_share: float = 1 / 3, hard_error: float = 0.40,
                     easy_error: float = 0.04):
    """(judge, human, dialogue) per turn: human labels with a dialogue propensity (Beta(1, 1)), the
    judge wrong with probability ``hard_error`` on a ``hard_share`` of the dialogues and
    ``easy_error`` on the others (judge errors cluster in dialogues)."""
    p = rng.beta(1.0, 1.0, n_dialogues)
    human = (rng.random((n_dialogues, turns)) < p[:, None]).astype(int)
    err = np.where(rng.random(n_dialogues) < hard_share, hard_error, easy_error)
    wrong = rng.random((n_dialogues, turns)) < err[:, None]
    judge = np.where(wrong, 1 - human, human)
    dialogue = np.repeat(np.arange(n_dialogues), turns)
    return judge.ravel(), human.ravel(), dialogue


def true_agreement(seed: int = 99, n_dialogues: int = 400_000) -> dict[str, float]:
    j, h, _ = clustered_labels(np.random.default_rng(seed), n_dialogues)
    n11, n10 = np.sum((j == 1) & (h == 1)), np.sum((j == 1) & (h == 0))
    n01, n00 = np.sum((j == 0) & (h == 1)), np.sum((j == 0) & (h == 0))
    from edufair_metrics.analysis.agreement import alpha_from_counts, kappa_from_counts

    n = n11 + n10 + n01 + n00
    return {"percent_agreement": (n11 + n00) / n, "cohen_kappa": float(kappa_from_counts(n11, n10, n01, n00)),
            "krippendorff_alpha": float(alpha_from_counts(n11, n10, n01, n00))}


def coverage(reps: int, n_boot: int, n_dialogues: int, seed: int = 3) -> dict[str, dict[str, float]]:
    """Share of replicates whose 95% CI covers the true value, per statistic and resampling unit."""
    truth = true_agreement()
    hit = {u: {s: 0 for s in truth} for u in ("turns", "dialogues")}
    for k in range(reps):
        j, h, d = clustered_labels(np.random.default_rng((seed, k)), n_dialogues)
        for unit, clusters in (("turns", None), ("dialogues", d.tolist())):
            ag = agreement(j.tolist(), h.tolist(), n_boot=n_boot, seed=k, clusters=clusters)
            for stat, true in truth.items():
                lo, hi = getattr(ag, f"{stat}_ci_low"), getattr(ag, f"{stat}_ci_high")
                hit[unit][stat] += int(lo <= true <= hi)
    return {u: {s: v / reps for s, v in per.items()} for u, per in hit.items()}


def coverage_part(reps: int, n_boot: int, sizes: tuple[int, ...] = (60, 200)) -> list[str]:
    truth = true_agreement()
    lines = [f"3. Clustered judge error: coverage of nominal 95% CIs (dialogues × 6 turns, judge error 0.40 on a third "
             f"of the dialogues, 0.04 elsewhere; true κ = {truth['cohen_kappa']:.3f}; B = {n_boot}, {reps} replicates)"]
    for n_dialogues in sizes:
        cov = coverage(reps, n_boot, n_dialogues)
        for unit in ("turns", "dialogues"):
            lines.append(f"  {n_dialogues} dialogues, resampling {unit}: κ {cov[unit]['cohen_kappa']:.1%}, α "
                         f"{cov[unit]['krippendorff_alpha']:.1%}, % agreement {cov[unit]['percent_agreement']:.1%}")
    return lines


# ---- 4. judge-contingent -----------------------------------------------------------------------------

EXPLICIT = [(lv.dimension, lv.level) for lv in condition_levels("explicit")]


def two_judges(rng, n: int, noise: float, bias: float = 0.0, b_error: float = 0.0):
    """Long score frames of two judges of the same Explicit dialogues (5 metrics, 1–8 turns, a
    question effect and a dialogue effect on the true labels); each judge flips every true label
    with probability ``noise`` on its own. ``bias``: logit shift of the female level (in the
    dialogues: both judges see it). ``b_error``: judge B alone also labels a turn of the female
    level positive with this probability (a judge that errs for one group: contingency planted)."""
    rows_a, rows_b = [], []
    u = rng.normal(0, 0.8, n)
    base = {m: b for m, b in zip(PEDAGOGICAL_METRICS, (-0.3, -2.0, 0.6, 0.0, -0.5))}
    for dim, level in EXPLICIT:
        turns = rng.integers(1, 9, n)
        e = rng.normal(0, 0.5, n)
        alive = np.arange(8)[None, :] < turns[:, None]
        for m in PEDAGOGICAL_METRICS:
            logit = base[m] + u[:, None] + e[:, None] + (bias if level == "female" else 0.0)
            truth = rng.random((n, 8)) < 1 / (1 + np.exp(-logit))
            for rows in (rows_a, rows_b):
                lab = np.where(rng.random((n, 8)) < noise, ~truth, truth)
                if rows is rows_b and b_error and level == "female":
                    lab = lab | (rng.random((n, 8)) < b_error)
                lab = lab & alive
                rate = lab.sum(axis=1) / turns
                rows.extend(("t", "edufair_explicit_math", "mathematics", "explicit", dim, level, f"q{q:04d}", m, v)
                            for q, v in enumerate(rate))
    return pd.DataFrame(rows_a, columns=LONG), pd.DataFrame(rows_b, columns=LONG)


def old_rule(comparison) -> np.ndarray:
    both = comparison["sufficient_a"].fillna(False).astype(bool) & comparison["sufficient_b"].fillna(False).astype(bool)
    sa, sb = np.sign(comparison["r_a"].astype(float)), np.sign(comparison["r_b"].astype(float))
    meaningful = (comparison["r_a"].abs() >= MEANINGFUL_R) | (comparison["r_b"].abs() >= MEANINGFUL_R)
    viol = comparison["violation_a"].fillna(False).astype(bool) != comparison["violation_b"].fillna(False).astype(bool)
    return (both & (((sa != sb) & meaningful) | viol)).to_numpy()


def contingent_part(reps: int, n_boot: int, n: int, noise: float = 0.15) -> list[str]:
    lines = [f"4. Judge-contingent between two judges that differ only by random label noise (each flips "
             f"{noise:.0%} of the true labels; n = {n} questions, Explicit, 5 metrics × 7 contrast rows; B = {n_boot}, "
             f"{reps} replicates)"]
    for name, bias, b_error in (("no bias", 0.0, 0.0), ("bias +0.5 logit on female", 0.5, 0.0),
                                ("planted: judge B alone labels 15% more female turns positive", 0.0, 0.15)):
        old = new = rows = r_diff = v_diff = 0
        female_old = female_new = female_rows = 0
        for k in range(reps):
            fa, fb = two_judges(np.random.default_rng((4, k)), n, noise, bias, b_error)
            ga, gb = (contrast_grid(f, n_boot=n_boot, seed=k) for f in (fa, fb))
            c = contrast_comparison(ga, gb, frames=(fa, fb), n_boot=n_boot, seed=k)
            both = (c["sufficient_a"].fillna(False) & c["sufficient_b"].fillna(False)).to_numpy(dtype=bool)
            o = old_rule(c)
            old, new, rows = old + int(o[both].sum()), new + int(c["judge_contingent"][both].sum()), rows + int(both.sum())
            r_diff += int(c["r_differ"][both].sum())
            v_diff += int(c["verdicts_differ"][both].sum())
            fem = both & (c["contrast"] == "Gender").to_numpy()
            female_old += int(o[fem].sum())
            female_new += int(c["judge_contingent"][fem].sum())
            female_rows += int(fem.sum())
        lines.append(f"  {name}: old rule {old}/{rows} = {old / rows:.1%}; new rule {new}/{rows} = {new / rows:.1%} "
                     f"(r differ {r_diff}, verdicts differ {v_diff})")
        if bias or b_error:
            lines.append(f"    of them on the Gender rows: old {female_old}/{female_rows} = "
                         f"{female_old / max(female_rows, 1):.1%}, new {female_new}/{female_rows} = "
                         f"{female_new / max(female_rows, 1):.1%}")
    return lines


# ---- 5. placebo exchangeability -----------------------------------------------------------------------

def placebo_frame(rng, n: int, *, shift: float = 0.0, zero_share: float = 0.0, metrics: int = 9, turns: int = 5):
    """A placebo replicate: per question a base dialogue propensity per metric; replicate 1 and 2
    are independent draws of rates over ``turns`` judged turns (exchangeable), except that a
    ``zero_share`` of the questions has identical dialogues and replicate 2 is shifted by
    ``shift`` (a drift between the runs)."""
    rows = []
    p = rng.uniform(0.1, 0.9, size=(n, metrics))
    same = rng.random(n) < zero_share
    r1 = rng.binomial(turns, p) / turns
    r2 = np.where(same[:, None], r1, rng.binomial(turns, np.clip(p + shift, 0, 1)) / turns)
    for level, vals in (("female", r1), ("female~replicate2", r2)):
        for q in range(n):
            for j in range(metrics):
                rows.append(("t", "edufair_explicit_physics", "physics", "explicit", "gender", level, f"q{q:04d}",
                             f"m{j}", float(vals[q, j])))
    return pd.DataFrame(rows, columns=LONG)


def placebo_part(reps: int, n_boot: int, n: int) -> list[str]:
    lines = [f"5. Placebo exchangeability check (n = {n} questions, 9 metrics, 5 judged turns; B = {n_boot}, {reps} "
             "replicates; check fails when the joint sign-flip p < 0.05)"]
    for name, kw in (("exchangeable", {}), ("exchangeable, 60% identical replicate dialogues", {"zero_share": 0.6}),
                     ("drifting replicate (+0.05 on every rate)", {"shift": 0.05}),
                     ("drifting replicate (+0.10 on every rate)", {"shift": 0.10})):
        checks = [exchangeability_check(placebo_frame(np.random.default_rng((5, k)), n, **kw), n_boot=n_boot, seed=k)
                  for k in range(reps)]
        c = pd.concat(checks, ignore_index=True)
        lines.append(f"  {name}: fails {int(c['failed'].sum())}/{reps} = {c['failed'].mean():.1%}; mean excess "
                     f"{c['excess'].mean():+.4f} (exchangeable ≈ 0; typical band {c['excess_null_low'].mean():+.3f} to "
                     f"{c['excess_null_high'].mean():+.3f}), floor {c['floor'].mean():.3f}; mean p_perm "
                     f"{c['mean_p'].mean():.3f} (0.5); flag rate {c['flag_rate'].mean():.1%} (exchangeable "
                     f"{c['flag_rate_null'].mean():.1%}); excess CI covers 0 in {((c['excess_ci_low'] <= 0) & (c['excess_ci_high'] >= 0)).mean():.0%}")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--n-boot", type=int, default=200)
    ap.add_argument("--quick", action="store_true", help="10 replicates, B = 100")
    args = ap.parse_args(argv)
    reps, n_boot = (10, 100) if args.quick else (args.reps, args.n_boot)
    t0 = time.time()
    parts = [lambda: loss_part(reps, n_boot, 60), lambda: drift_part(reps, n_boot, 60),
             lambda: coverage_part(max(reps, 10) * 5, n_boot), lambda: contingent_part(reps, n_boot, 120),
             lambda: placebo_part(reps * 2, n_boot, 150)]
    for part in parts:
        t = time.time()
        for line in part():
            print(line, flush=True)
        print(f"  ({time.time() - t:.0f} s)", flush=True)
    print(f"total {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
