"""Does a rerun at the printed ``questions_needed`` decide? (a benchmark, not a pytest test)

    nice -n 10 python tests/analysis/sim_gate_verify.py --n 323 [--case 1] [--reps 10] [--first 0] [--n-boot 200]

Fresh pairs of runs of one ``sim_gate`` case at ``--n`` questions per domain (take the median
``questions_needed`` that ``sim_gate.py`` printed for that case); prints each rerun's outcome and
the share decided (pass or fail) with its Monte-Carlo standard error (goal >= 80% for the Δ = 0
number when the bias is unchanged). Per rerun also ``questions_needed`` (Δ = 0; its median and
spread over the reruns on the last lines: at n = 150 this is the ±30% check on seeds disjoint
from sim_gate's), z = gate_delta / gate_se (at no bias its spread is the calibration of the se the
gate decides on: SD(z) <= 1 is a conservative se) and the ratio of the corrected bootstrap
variance to the stable one (``gate_var_bootstrap / gate_se²``); the last lines their SD and range,
and the range of ``gate_skewness`` with the number of reruns whose decision the normal bounds
Δ ∓ z·se would have changed (the skewed bounds only ever widen). Seeded (seeds 9000+ / 13000+,
disjoint from sim_gate's).

Also the swap-symmetrised share: baseline and candidate of one case with ``base == cand`` are
exchangeable and the gate is exactly antisymmetric under their swap (Δ → −Δ, the same se), so each
rerun has an equally likely twin, the swapped pair, whose decision is read off without running it
(at the threshold M², the smallest the twin can face: conservative for a pass; printed for the
fair case only, where a rerun's threshold is M² unless its baseline's bound is > 0). The mean of the
two per rerun estimates the same probability with a smaller Monte-Carlo error (the sign of Δ, pure
noise, no longer counts); its se is the SD of the per-rerun means / √reruns.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from edufair_metrics.analysis.compare import compare_frames  # noqa: E402
from tests.analysis.sim_gate import CASES, run_frame  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--case", type=int, default=1)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--n-boot", type=int, default=200)
    ap.add_argument("--first", type=int, default=0, help="first rerun (to extend a run)")
    args = ap.parse_args()
    name = list(CASES)[args.case - 1]
    spec = CASES[name]
    from scipy.special import ndtri

    from edufair_metrics.analysis.compare import gate_threshold

    z = float(ndtri(0.95))
    from edufair_metrics.analysis.compare import questions_factor

    decided, zs, ratios, sym, needed, needed_one, skews, changed = [], [], [], [], [], [], [], []
    for rep in range(args.first, args.first + args.reps):
        base = run_frame(args.n, 9000 + rep, "b", **spec["base"])
        cand = run_frame(args.n, 13000 + rep, "c", **spec["cand"])
        res = compare_frames(base, cand, n_boot=args.n_boot, seed=100 + rep)
        h = res.headline
        decided.append(res.status != "inconclusive")
        m2 = gate_threshold(0.0, 0.05)
        # the swapped pair's bounds are minus this pair's, exchanged (Δ and the skewness change sign)
        twin = (-h["gate_ci_low"] < m2) or (-h["gate_ci_high"] > m2)
        sym.append(0.5 * (decided[-1] + twin))
        needed.append(args.n * h["questions_factor"])  # questions_needed (Δ = 0), for every outcome
        # the same from each run's own bias part (before the pooled one): the rerun spread it had
        needed_one.append(args.n * questions_factor(0.0, m2, h["questions_var_bias"], h["questions_var_null"], z))
        zs.append(h["gate_delta"] / h["gate_se"])
        skews.append(h["gate_skewness"])
        # the decision the normal bounds Δ ∓ z·se would have taken (skewness only ever widens a bound)
        lo_n, hi_n = h["gate_delta"] - z * h["gate_se"], h["gate_delta"] + z * h["gate_se"]
        normal = "fail" if lo_n > h["gate_threshold"] else "pass" if hi_n < h["gate_threshold"] else "inconclusive"
        if res.reasons and "newly flagged" in " ".join(res.reasons) and res.status == "fail":
            normal = "fail"  # the new-flag rule is not the headline bounds' (its own unit bounds)
        changed.append(normal != res.status)
        ratios.append(h["gate_var_bootstrap"] / h["gate_se"] ** 2)
        p = float(np.mean(decided))
        print(f"{name}, n={args.n}, rerun {rep}: {res.status}, questions_needed {needed[-1]:.0f} "
              f"(one-run A: {needed_one[-1]:.0f}), "
              f"z {zs[-1]:+.2f}, bootstrap/stable variance "
              f"{ratios[-1]:.2f}; decided so far {p:.2f} ± {np.sqrt(p * (1 - p) / len(decided)):.2f} "
              f"({len(decided)} reruns)", flush=True)
    print(f"decided {p:.2f} ± {np.sqrt(p * (1 - p) / len(decided)):.2f} ({len(decided)} reruns); z: mean "
          f"{np.mean(zs):+.2f}, SD {np.std(zs, ddof=1):.2f}; bootstrap/stable variance {min(ratios):.2f}–"
          f"{max(ratios):.2f} (median {np.median(ratios):.2f})")
    print(f"skewness of the change's no-bias part (gate_skewness): median {np.nanmedian(skews):+.3f}, range "
          f"{np.nanmin(skews):+.3f} to {np.nanmax(skews):+.3f}; decisions the normal bounds would have taken "
          f"otherwise: {sum(changed)} of {len(changed)}")
    for label, vals in (("questions_needed (Δ = 0)", needed), ("  from each run's own A", needed_one)):
        nd = np.asarray(vals)
        med = float(np.median(nd))
        print(f"{label}: median {med:.0f}, range {nd.min() / med:.2f}–{nd.max() / med:.2f}x the median, "
              f"{int(np.sum((nd > 1.3 * med) | (nd < 0.7 * med)))} of {nd.size} outside ±30%")
    if spec["base"] == spec["cand"] == {}:  # fair and exchangeable: the twin's threshold is M² in most reruns
        print(f"swap-symmetrised: decided {np.mean(sym):.3f} ± {np.std(sym, ddof=1) / np.sqrt(len(sym)):.3f}")


if __name__ == "__main__":
    main()
