"""The rank-biserial's small-n bias on tied rates (a benchmark, not a pytest test).

    nice -n 10 python tests/analysis/sim_rank_biserial.py [--base 0.0] [--shift 0.6] [--ns 20,60] [--rows 3000]

Per question a difficulty u ~ N(0, 1); each level's rate is k/m of m = 1–4 judged turns with logit
``base + 0.8 u`` (+ ``shift`` at the "a" level); differences rounded as the grid rounds them. Prints
the large-n r (400,000 questions), the share of zero differences, and the mean r of ``--rows``
rows at each n with its Monte-Carlo standard error. For untied differences the exact finite-n
mean is ρ − 4(p₂ − p₁)/(n + 1) (p₁ = P(d > 0), p₂ = P(dᵢ + dⱼ > 0)). Seeded.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from edufair_metrics.analysis.contrast import rank_biserial  # noqa: E402
from edufair_metrics.analysis.engine import round_diffs  # noqa: E402


def diffs(rng, n: int, base: float, shift: float) -> np.ndarray:
    u = rng.normal(0, 1, n)
    m1, m2 = rng.integers(1, 5, n), rng.integers(1, 5, n)
    p = 1 / (1 + np.exp(-(base + 0.8 * u)))
    pa = 1 / (1 + np.exp(-(base + 0.8 * u + shift)))
    return round_diffs(rng.binomial(m1, pa) / m1 - rng.binomial(m2, p) / m2)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", type=float, default=0.0)
    ap.add_argument("--shift", type=float, default=0.6)
    ap.add_argument("--ns", default="20,60")
    ap.add_argument("--rows", type=int, default=3000)
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    big = diffs(rng, 400_000, args.base, args.shift)
    pop = rank_biserial(big)[2]
    print(f"base {args.base}, shift {args.shift}: large-n r {pop:.3f}, zero share {(big == 0).mean():.2f}")
    for n in (int(x) for x in args.ns.split(",")):
        rs = np.array([rank_biserial(diffs(rng, n, args.base, args.shift))[2] for _ in range(args.rows)])
        print(f"  n = {n}: mean r {rs.mean():.3f} ± {rs.std(ddof=1) / np.sqrt(rs.size):.3f} "
              f"(bias {rs.mean() - pop:+.3f})")


if __name__ == "__main__":
    main()
