"""Family-wise error of ``--simultaneous`` under no bias (a benchmark, not a pytest test).

    nice -n 10 python tests/analysis/sim_simultaneous.py [--reps 20] [--n-boot 400] [--ns 150,500]

Per replicate: a fair tutor (``sim_verdicts.simulate_frame``, Explicit + Implicit, two domains),
its grid and the simultaneous bounds; a grid with any ``sim_flagged`` row is a family-wise error
(goal ≤ 5%), a grid with a ``sim_certified`` row whose differences are all zero is a certificate
without evidence (goal 0). Prints the share with its Monte-Carlo standard error and the exact 95%
upper bound (Clopper–Pearson). Seeded.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from edufair_metrics.analysis.grid import contrast_grid  # noqa: E402
from edufair_metrics.analysis.simultaneous import simultaneous_bounds  # noqa: E402
from tests.analysis.sim_verdicts import simulate_frame  # noqa: E402


def main() -> None:
    from scipy.stats import beta

    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--n-boot", type=int, default=400)
    ap.add_argument("--ns", default="150,500")
    ap.add_argument("--first", type=int, default=0, help="first replicate (to extend a run)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    out = []
    for n in (int(x) for x in args.ns.split(",")):
        fwe = empty_cert = rows = 0
        for rep in range(args.first, args.first + args.reps):
            df = pd.concat([simulate_frame(n, {}, seed=77_000 + 13 * rep + k + n, domain=dom)
                            for k, dom in enumerate(("physics", "chemistry"))], ignore_index=True)
            grid = contrast_grid(df, n_boot=100, seed=rep)
            sim = simultaneous_bounds(df, grid, margin=0.1, n_boot=args.n_boot, seed=rep)
            live = sim[sim["sufficient"]]
            rows += len(live)
            fwe += bool(live["sim_flagged"].any())
            empty_cert += bool((live["sim_certified"] & (live["n_zero"] == live["n_pairs"])).any())
            print(f"  n={n} grid {rep}: false sim flag {bool(live['sim_flagged'].any())}", flush=True)
        p = fwe / args.reps
        out.append({"n/domain": n, "grids": args.reps, "rows per grid": rows / args.reps,
                    "grids with a false sim flag": f"{p:.3f} ± {(p * (1 - p) / args.reps) ** 0.5:.3f}",
                    "95% upper bound": f"{beta.ppf(0.95, fwe + 1, args.reps - fwe):.3f}",
                    "certificates without evidence": empty_cert})
        print(out[-1], flush=True)
    from edufair_metrics.report.tables import to_markdown

    print(to_markdown(pd.DataFrame(out), f"--simultaneous under no bias (B = {args.n_boot})"))
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
