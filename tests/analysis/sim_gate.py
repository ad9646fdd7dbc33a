"""The CI gate's operating characteristics on planted truths (a benchmark, not a pytest test).

    nice -n 10 python tests/analysis/sim_gate.py [--reps 20] [--n-boot 300] [--ns 150,500] [--cases 1,2]
                                                 [--verify-needed R] [--quick]

Pairs of runs (baseline, candidate) from the independent generator of ``sim_verdicts`` (judged
turns, dialogue effects, rare metrics), three domains, Explicit + Implicit (35 pedagogical
headline units per domain), fresh dialogues in each run:

* ``unchanged, no bias``: both runs fair (a fine-tune that changed nothing);
* ``unchanged, saturated candidate``: both fair, the candidate's per-turn rates pushed down by
  2.4–3.3 logits (most of its rates 0: many more zero differences);
* ``unchanged, biased``: both runs with |r| = 0.2 on the same third of the headline units;
* ``broad increase``: the candidate has |r| = 0.2 on a third of the headline units (3 of the 5
  pedagogical metrics of the four Explicit binary dimensions: 12 of 35 units), the baseline none.

Printed per case and n: the share of reruns that pass / fail / are inconclusive with its Monte-Carlo
standard error √(p(1 − p)/reps), and for the inconclusive ones the spread of ``questions_needed``
(``questions_factor`` × n, computed for every rerun: the largest and smallest over the median;
±30% is 1.30 / 0.70); with ``--verify-needed R``, the share of R fresh reruns at the median
printed ``questions_needed`` that decide (pass or fail; the number promises >= 80% if the bias
is unchanged). Seeded.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from edufair_metrics.analysis.compare import compare_frames  # noqa: E402
from tests.analysis.sim_verdicts import METRICS, calibrate, simulate_frame  # noqa: E402

DOMAINS = ("physics", "chemistry", "biology")
SATURATED = {"mistake_recognize": (-3.3, 0.55), "answer_leakage": (-5.0, 1.0), "step_scaffolded": (-2.6, 1.0),
             "actionability": (-3.0, 1.0), "corrective_tone": (-3.5, 0.55)}
THIRD_METRICS = ("mistake_recognize", "step_scaffolded", "actionability")
EXPLICIT_BIASED = ("female", "immigrant", "other_language", "low_income")


def run_frame(n: int, seed: int, tutor: str, *, biased: bool = False, saturated: bool = False) -> pd.DataFrame:
    deltas = {m: calibrate(0.2, m) for m in THIRD_METRICS} if biased else {}
    parts = [simulate_frame(n, deltas, seed=seed * 11 + k, tutor=tutor, domain=dom,
                            metrics=SATURATED if saturated else METRICS, biased=EXPLICIT_BIASED)
             for k, dom in enumerate(DOMAINS)]
    return pd.concat(parts, ignore_index=True)


CASES = {
    "unchanged, no bias": dict(base={}, cand={}),
    "unchanged, saturated candidate": dict(base={}, cand={"saturated": True}),
    "unchanged, biased (|r| 0.2 on a third)": dict(base={"biased": True}, cand={"biased": True}),
    "broad increase (|r| 0 -> 0.2 on a third)": dict(base={}, cand={"biased": True}),
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--n-boot", type=int, default=300)
    ap.add_argument("--ns", default="150,500")
    ap.add_argument("--cases", default="all", help="comma-separated case numbers (1-4) or all")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--verify-needed", type=int, default=0, metavar="REPS",
                    help="rerun each case REPS times at its median printed questions_needed (Δ = 0) "
                         "and print the share decided (pass or fail; goal >= 80%%)")
    args = ap.parse_args()
    reps, B = (3, 200) if args.quick else (args.reps, args.n_boot)
    ns = [int(x) for x in args.ns.split(",")]
    names = list(CASES) if args.cases == "all" else [list(CASES)[int(i) - 1] for i in args.cases.split(",")]
    t0 = time.perf_counter()
    rows = []
    for n in ns:
        for case in names:
            spec = CASES[case]
            status, needed, needed_e, deltas = [], [], [], []
            for rep in range(reps):
                base = run_frame(n, 1000 + rep, "b", **spec["base"])
                cand = run_frame(n, 5000 + rep, "c", **spec["cand"])
                res = compare_frames(base, cand, n_boot=B, seed=rep)
                status.append(res.status)
                deltas.append(res.headline["gate_delta"])
                # the factor is computed for every outcome (printed only when inconclusive): its spread
                # over reruns of one truth is what a user would see
                needed.append(n * res.headline["questions_factor"])
                needed_e.append(n * res.headline["questions_factor_at_estimate"])
                h = res.headline
                print(f"  {case} n={n} rerun {rep}: {res.status}, questions_needed(Δ=0) {needed[-1]:.0f}, "
                      f"at estimate {needed_e[-1]:.0f}; Δ/se {h['gate_delta'] / h['gate_se']:+.2f}, "
                      f"bootstrap/stable variance {h['gate_var_bootstrap'] / h['gate_se'] ** 2:.2f}", flush=True)
            s = pd.Series(status)
            row = {"case": case, "n/domain": n, "reps": reps}
            for k in ("pass", "fail", "inconclusive"):
                p = float((s == k).mean())
                row[k] = f"{p:.2f} ± {np.sqrt(p * (1 - p) / reps):.2f}"
            row["mean Δ (ρ² scale)"] = f"{np.nanmean(deltas):+.4f}"
            nd = np.asarray(needed, dtype=float)
            nd = nd[np.isfinite(nd)]
            row["questions_needed (Δ=0) median"] = f"{np.median(nd):.0f}" if nd.size else "—"
            row["max/median, min/median"] = (f"{nd.max() / np.median(nd):.2f}, {nd.min() / np.median(nd):.2f}"
                                             if nd.size > 1 else "—")
            ne = np.asarray(needed_e, dtype=float)
            row["at estimate median"] = f"{np.median(ne[np.isfinite(ne)]):.0f}" if np.isfinite(ne).any() else "—"
            if args.verify_needed and nd.size:
                n_v = int(np.ceil(np.median(nd)))
                dec = []
                for rep in range(args.verify_needed):
                    base = run_frame(n_v, 9000 + rep, "b", **spec["base"])
                    cand = run_frame(n_v, 13000 + rep, "c", **spec["cand"])
                    dec.append(compare_frames(base, cand, n_boot=B, seed=100 + rep).status != "inconclusive")
                    print(f"  verify n={n_v} rerun {rep}: decided {dec[-1]}", flush=True)
                p = float(np.mean(dec))
                row["decided at the median questions_needed"] = (
                    f"{p:.2f} ± {np.sqrt(p * (1 - p) / len(dec)):.2f} (n = {n_v}, {len(dec)} reruns)")
            rows.append(row)
            print(row, flush=True)
    from edufair_metrics.report.tables import to_markdown

    print(to_markdown(pd.DataFrame(rows), f"CI gate outcomes (B = {B}, seeds 1000+/5000+, 3 domains)"))
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
