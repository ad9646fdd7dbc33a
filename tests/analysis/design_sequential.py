"""The sequential audit's design in the normal model (fast; what chose ``analysis.sequential``'s
spending functions before ``sim_sequential.py`` measured them on the audit's own verdicts).

One headline unit, margin M = ``--margin``; the rank-biserial r of n paired questions is
r̂ ~ N(ρ, (1 − ρ²)·V0/n) with V0 = 4/3 (the null variance of r on continuous differences), and
the r̂ of successive looks are a Brownian motion in n (independent increments). A look flags when
|r̂|/√(V0/n) >= its two-sided boundary (the Wilcoxon z), and certifies when |r̂| + z_k·se < M
with se = √((1 − r̂²)·V0/n) (the TOST; ``verdicts.equivalence_se`` without bootstrap noise) and it
does not flag. The fixed-n audit is one look at the plan's n (``--plan``; 826 at M = 0.15 for 80%
at ρ = M/3: ``sim_sequential``'s plan) at α = 0.05; each sequential design has ``--looks``
equally spaced looks up to its inflation x the plan. Printed per design and true ρ: the flag and
certify rates and the saving of dialogues against the plan, each with its MC se.

    nice -n 10 python -m tests.analysis.design_sequential --paths 100000
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy.stats import norm

from edufair_metrics.analysis.sequential import (
    CERTIFY_SPENDING,
    FLAG_SPENDING,
    Spending,
    boundaries,
)

V0 = 4 / 3


def simulate(rho, sizes, flag_z, cert_z, margin, paths, rng):
    """(flag rate, certify rate, questions per run) of one design at true ρ (module docstring)."""
    n = np.asarray(sizes, dtype=float)
    w = (rng.normal(size=(paths, n.size)) * np.sqrt(np.diff(np.r_[0, n]))).cumsum(axis=1)
    r = rho + math.sqrt((1 - rho * rho) * V0) * w / n
    flag = np.abs(r) / np.sqrt(V0 / n) >= flag_z
    se = np.sqrt(np.clip(1 - r * r, 0, 1) * V0 / n)
    with np.errstate(invalid="ignore"):
        cert = (np.abs(r) + cert_z * se < margin) & ~flag
    stop = flag | cert
    stop[:, -1] = True
    k = stop.argmax(axis=1)
    rows = np.arange(paths)
    return flag[rows, k], cert[rows, k], n[k]


def designs(args):
    """(name, inflation, flag spending, certification spending) of the designs compared."""
    linear = Spending("power", 0.0, 1.0)
    return [
        ("the audit's (flags O'Brien-Fleming, certify power rho=%g from %g)" % (CERTIFY_SPENDING.rho, CERTIFY_SPENDING.start),
         args.inflation, FLAG_SPENDING, CERTIFY_SPENDING),
        ("the first linear version (linear both, 1.2x)", 1.2, linear, linear),
        ("linear certification from 0 (same flags)", args.inflation, FLAG_SPENDING, linear),
        ("linear flags (same certification)", args.inflation, linear, CERTIFY_SPENDING),
        ("O'Brien-Fleming certification", args.inflation, FLAG_SPENDING, Spending("obf")),
    ]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paths", type=int, default=100_000)
    parser.add_argument("--looks", type=int, default=20)
    parser.add_argument("--inflation", type=float, default=1.15)
    parser.add_argument("--margin", type=float, default=0.15)
    parser.add_argument("--plan", type=int, default=826)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rhos = (0.0, args.margin / 3, args.margin, 2 * args.margin)
    se = lambda p: math.sqrt(max(p * (1 - p), 1e-12) / args.paths)  # noqa: E731

    def show(name, results):
        parts = []
        for rho, (f, c, n) in zip(rhos, results):
            parts.append(f"r={rho:.3f}: flag {f.mean():.2%}±{se(f.mean()):.2%} certify {c.mean():.2%}±{se(c.mean()):.2%} "
                         f"saving {1 - n.mean() / args.plan:.1%}±{n.std() / math.sqrt(args.paths) / args.plan:.1%}")
        print(f"{name}:\n  " + "\n  ".join(parts), flush=True)

    rng = np.random.default_rng(args.seed)
    fixed = [simulate(rho, [args.plan], np.array([norm.isf(0.025)]), np.array([norm.isf(0.05)]), args.margin,
                      args.paths, rng) for rho in rhos]
    show(f"fixed n = {args.plan}", fixed)
    for name, inflation, flag_spending, cert_spending in designs(args):
        n_max = math.ceil(inflation * args.plan)
        sizes = [round(n_max * j / args.looks) for j in range(1, args.looks + 1)]
        fr = [s / n_max for s in sizes]
        fz = np.array([lk.boundary for lk in boundaries(fr, 0.05, spending=flag_spending)])
        cz = np.array([lk.boundary for lk in boundaries(fr, 0.05, spending=cert_spending, sides=1)])
        show(f"{name}, {args.looks} looks to {n_max}",
             [simulate(rho, sizes, fz, cz, args.margin, args.paths, rng) for rho in rhos])


if __name__ == "__main__":
    main()
