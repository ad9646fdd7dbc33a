"""The turn-level test's operating characteristics (a benchmark, not a pytest test).

    nice -n 10 python tests/analysis/sim_turns.py [--reps 10] [--n-boot 200]

Generator: ``sim_verdicts.simulate_frame`` (judged turns with question and dialogue effects,
per-position masks). Pedagogical Explicit binary rows whose "a" level is in the biased set:

* ``same curve, different lengths``: every level has the same per-turn curve over positions
  (logit rises 0.35 per turn), the biased set's dialogues last 8–10 turns, the others' 2–4: no
  per-turn difference at any position (goal: ≤ 2% ``flag``), at n = 150 and 500;
* ``length only``: flat curve, 8–10 vs 1–2 turns (goal ≤ 2% ``flag``), n = 60 and 150;
* ``real per-turn difference``: per-turn rate 0.15 vs 0.30 (logit shift 0.888 at base −1.735),
  equal length distributions, n = 300 (goal ≥ 90% ``flag``).

Prints the share of rows per verdict with its Monte-Carlo standard error, and the share of rows
tested on question × position strata (``turn_strata`` > 0). Seeded.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from edufair_metrics.analysis.params import StatParams, analyse_frame  # noqa: E402
from tests.analysis.sim_verdicts import METRICS, simulate_frame  # noqa: E402

EXPLICIT_A = ("female", "immigrant", "other_language", "low_income")
LOW = {m: (-1.735, 1.0) for m in METRICS}  # per-turn rate 0.15 before question / dialogue effects

CASES = [
    ("same curve (slope 0.35), 8–10 vs 2–4 turns", dict(length=True, slope=0.35, short=(2, 4)), (150, 500)),
    ("length only, 8–10 vs 1–2 turns", dict(length=True), (60, 150)),
    ("per-turn 0.15 vs 0.30, equal lengths", dict(deltas={m: 0.888 for m in METRICS}, metrics=LOW), (300,)),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--n-boot", type=int, default=200)
    ap.add_argument("--positions", choices=("yes", "no"), default="yes",
                    help="no: drop the per-position masks (the question-stratified test, as before)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    out = []
    for name, kw, ns in CASES:
        kw = dict(kw)
        deltas = kw.pop("deltas", {})
        for n in ns:
            frames = []
            for rep in range(args.reps):
                df = simulate_frame(n, deltas, seed=31_000 + 97 * rep + n, conditions=("explicit",),
                                    biased=EXPLICIT_A, positions=args.positions == "yes", **kw)
                grid, _ = analyse_frame(df, StatParams(n_boot=args.n_boot, seed=rep))
                g = grid[(grid["metric_kind"] == "pedagogical") & (grid["kind"] == "binary") & grid["sufficient"]
                         & grid["a"].isin(EXPLICIT_A)]
                frames.append(g)
            g = pd.concat(frames)
            row = {"case": name, "n": n, "reps": args.reps, "rows": len(g)}
            for v in ("flag", "unconfirmed", "inconclusive"):
                p = float((g["verdict"] == v).mean())
                row[v] = f"{p:.3f} ± {np.sqrt(p * (1 - p) / max(len(g), 1)):.3f}"
            row["position strata"] = f"{float((g['turn_strata'] > 0).mean()):.2f}"
            out.append(row)
            print(row, flush=True)
    from edufair_metrics.report.tables import to_markdown

    print(to_markdown(pd.DataFrame(out), f"Turn-level confirmation (B = {args.n_boot}; ± binomial SE over rows, "
                                         "rows of one grid are correlated)"))
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
