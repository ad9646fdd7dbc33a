"""Family-wise error of ``--simultaneous`` under no bias (a benchmark, not a pytest test).

    nice -n 10 python tests/analysis/sim_simultaneous.py [--reps 20] [--n-boot 400] [--ns 150,500]
                                                         [--flags-only] [--first 0]

Per replicate: a fair tutor (``sim_verdicts.simulate_frame``, Explicit + Implicit, two domains),
its grid and the simultaneous bounds; a grid with any ``sim_flagged`` row is a family-wise error
(goal ≤ 5%), a grid with a ``sim_certified`` row whose differences are all zero is a certificate
without evidence (goal 0). Prints the share with its Monte-Carlo standard error and the exact 95%
upper bound (Clopper–Pearson). Seeded.

``--flags-only``: the family-wise error of the flags alone, about 20x faster (no grid, no
bootstrap): the rows of the grid with >= 15 defined differences, their signed ranks and
``simultaneous.max_t_flags`` (the very rule ``simultaneous_bounds`` flags with, the same flips).
Per false flag it prints the row, its |T|, its non-zero differences and the critical value; at
the end, per metric, how many rows exceeded |T| = 2.0 / 2.5 / 3.0 / 3.5 against the count the
normal tail expects (the per-row null of the sign-flip statistic, ties and zeros included), and
the calibration of the family-wise p: the share of grids whose smallest p is <= 0.05 / 0.1 / 0.2 /
0.5 (a valid test: at most that level).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from edufair_metrics.analysis.grid import contrast_grid  # noqa: E402
from edufair_metrics.analysis.simultaneous import _signed_ranks, max_t_flags, simultaneous_bounds  # noqa: E402
from tests.analysis.sim_verdicts import simulate_frame  # noqa: E402


def flags_only(df, n_boot: int, seed: int, min_pairs: int = 15):
    """(rows, false flags) of the sign-flip max-|T| test on the grid's sufficient rows of ``df``."""
    from edufair_metrics.analysis.cells import cell_matrices, contrast_pairs
    from edufair_metrics.protocol.contrasts import load_contrasts

    cells = cell_matrices(df)
    qsets: dict[str, set] = {}
    for cm in cells:
        qsets.setdefault(cm.key[1], set()).update(cm.questions.astype(str).tolist())
    domains = {dom: np.array(sorted(q), dtype=str) for dom, q in qsets.items()}
    ranks, pair_of, nz = {}, {}, {}
    for cm, spec, _a, _b, label, d in contrast_pairs(cells, load_contrasts()):
        if int((~np.isnan(d)).sum()) < min_pairs:
            continue
        tutor, domain, condition, metric = cm.key
        key = (tutor, domain, condition, spec.name, label, metric)
        ranks[key] = _signed_ranks(cm.spread(d, domains[domain]))
        pair_of[key] = key[:5]
        nz[key] = int((ranks[key] != 0).sum())
    t, c, p = max_t_flags(ranks, pair_of, n_boot=n_boot, seed=seed)
    return len(ranks), [(k, t[k], nz[k], c) for k in ranks if t[k] > c], {k: t[k] for k in ranks}, min(p.values())


def main() -> None:
    from scipy.stats import beta

    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--n-boot", type=int, default=400)
    ap.add_argument("--ns", default="150,500")
    ap.add_argument("--first", type=int, default=0, help="first replicate (to extend a run)")
    ap.add_argument("--flags-only", action="store_true", help="the flags' family-wise error alone (fast)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    out, tails, min_p = [], {}, {}
    for n in (int(x) for x in args.ns.split(",")):
        fwe = empty_cert = rows = 0
        for rep in range(args.first, args.first + args.reps):
            df = pd.concat([simulate_frame(n, {}, seed=77_000 + 13 * rep + k + n, domain=dom)
                            for k, dom in enumerate(("physics", "chemistry"))], ignore_index=True)
            if args.flags_only:
                n_rows, false, t_rows, p_min = flags_only(df, args.n_boot, rep)
                min_p.setdefault(n, []).append(p_min)
                for k, tt in t_rows.items():
                    tails.setdefault((n, k[5]), []).append(tt)
                rows += n_rows
                fwe += bool(false)
                print(f"  n={n} grid {rep}: false sim flag {bool(false)}"
                      + "".join(f"; {k[2]} {k[3]} {k[4]} {k[5]} |T| {tt:.2f} (non-zero {m}, c {c:.2f})"
                                for k, tt, m, c in false), flush=True)
                continue
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
    if tails:
        from scipy.stats import norm

        cuts = (2.0, 2.5, 3.0, 3.5)
        tab = [{"n/domain": n, "metric": m, "rows": len(v),
                **{f"|T| > {c}": f"{int((np.asarray(v) > c).sum())} (normal {len(v) * 2 * norm.sf(c):.1f})" for c in cuts}}
               for (n, m), v in sorted(tails.items())]
        print(to_markdown(pd.DataFrame(tab), "rows beyond |T| against the normal tail"))
        cal = [{"n/domain": n, "grids": len(v), **{f"min p <= {a}": f"{np.mean(np.asarray(v) <= a):.3f} ± "
                                                  f"{np.sqrt(np.mean(np.asarray(v) <= a) * (1 - np.mean(np.asarray(v) <= a)) / len(v)):.3f}"
                                                  for a in (0.05, 0.1, 0.2, 0.5)}} for n, v in sorted(min_p.items())]
        print(to_markdown(pd.DataFrame(cal), "family-wise p: share of grids with min p at or below a level"))
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
