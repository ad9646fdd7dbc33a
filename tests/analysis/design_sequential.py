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

``--gate``: the CI gate in the same spirit (``sim_sequential --gate`` measures it on the gate's own
verdicts). At no change the gate's change of the mean unbiased r² has the variance of a mean of
squares at ρ = 0, which falls as 1/n² (``compare``'s B part): Δ̂(n) = W(n²)/n² (a degenerate
U-statistic: Cov(Δ̂_m, Δ̂_n) = Var Δ̂_n), so the pass statistic (τ − Δ̂)/se grows *linearly* in n,
τ/se = ``K0``·n/plan with K0 = 2.53 at the fixed-n plan that passes 80% (1.645 + 0.84 ≈ 2.49; the
exact null variance 2·(2·V0²)/n² of a fair baseline and candidate at 300 questions and τ = M² =
0.0225 give 2.53). The decision is thus nearly a function of n (the fixed n for 99% is only 1.6x
the plan's for 80%, 2.5x for a Brownian statistic), and a sequential gate cannot stop much before
the plan when it must pass as often. Clearly worse (0 -> 0.35): the change Δ̂/se is Brownian in n
with drift ``K1``·√(n/plan) (K1 = 2.75: the new-flag rule's unit change at 300 questions), failing
at Z >= the look's boundary. Printed per budget multiple and spending: the pass / fail rate, the
mean candidate questions, the saving against the plan and against the fixed n with the same
decision probability (closed form above), and the false-pass rate at Δ = τ (the pass bound's H0;
the variance there is A/n + B/n², A = 3.9e-4, B = 7.9e-5 at 300 questions: mostly Brownian).

    nice -n 10 python -m tests.analysis.design_sequential --gate --paths 40000
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy.stats import norm

from edufair_metrics.analysis.sequential import (
    BUDGET_MULTIPLE,
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
    full = Spending("power", CERTIFY_SPENDING.start, CERTIFY_SPENDING.rho)  # all of α per TOST side
    return [
        ("the audit's (flags O'Brien-Fleming, certify power rho=%g from %g, %g alpha per side)"
         % (CERTIFY_SPENDING.rho, CERTIFY_SPENDING.start, CERTIFY_SPENDING.share),
         args.inflation, FLAG_SPENDING, CERTIFY_SPENDING),
        ("the previous design (all of alpha per TOST side, 1.15x)", 1.15, FLAG_SPENDING, full),
        ("all of alpha per TOST side at the audit's budget", args.inflation, FLAG_SPENDING, full),
        ("0.74 alpha per TOST side (the fixed n's 3.7%)", args.inflation, FLAG_SPENDING,
         Spending("power", CERTIFY_SPENDING.start, CERTIFY_SPENDING.rho, 0.74)),
        ("the audit's certification at 1.25x", 1.25, FLAG_SPENDING, CERTIFY_SPENDING),
        ("the first linear version (linear both, 1.2x)", 1.2, linear, linear),
        ("linear certification from 0 (same flags)", args.inflation, FLAG_SPENDING, linear),
        ("linear flags (same certification)", args.inflation, linear, CERTIFY_SPENDING),
        ("O'Brien-Fleming certification", args.inflation, FLAG_SPENDING, Spending("obf")),
    ]


GATE_PLAN, K0, K1 = 300, 2.53, 2.75


def gate_paths(sizes, c, paths, rng, kind):
    """Per path and look: does the gate decide there (``nochange``: pass; ``worse``: fail;
    ``margin``: a false pass at Δ = τ)? No decision below 50 shared questions (``local.audit``)."""
    m = np.asarray(sizes, dtype=float)

    def bm(times):
        return (rng.normal(size=(paths, times.size)) * np.sqrt(np.diff(np.r_[0, times]))).cumsum(axis=1)

    if kind == "nochange":
        z = K0 * m / GATE_PLAN - bm(m * m) / m
    elif kind == "worse":
        z = K1 * np.sqrt(m / GATE_PLAN) + bm(m) / np.sqrt(m)
    else:
        a, b, tau = 3.9e-4, 7.9e-5, 0.0225
        d = tau + math.sqrt(a * GATE_PLAN) * bm(m) / m + math.sqrt(b) * GATE_PLAN * bm(m * m) / (m * m)
        z = (tau - d) / np.sqrt(a * GATE_PLAN / m + b * (GATE_PLAN / m) ** 2)
    return (z >= c) & (m >= 50)


def gate_designs(args):
    """(name, budget multiple, pass-bound spending, fail-bound spending) of the gate designs compared."""
    from edufair_metrics.analysis.sequential import GATE_BUDGET_MULTIPLE, GATE_FAIL_SPENDING, GATE_SPENDING

    linear, obf = Spending("power", 0.0, 1.0), Spending("obf")
    return [(f"the audit's gate (pass linear, fail O'Brien-Fleming, {GATE_BUDGET_MULTIPLE}x)", GATE_BUDGET_MULTIPLE,
             GATE_SPENDING, GATE_FAIL_SPENDING),
            (f"both bounds linear, {GATE_BUDGET_MULTIPLE}x (the design before)", GATE_BUDGET_MULTIPLE, linear, linear),
            ("linear, 1.0x (the budget of the earlier benchmark)", 1.0, linear, linear),
            ("linear, 1.3x", 1.3, linear, linear), ("linear, 1.6x", 1.6, linear, linear),
            ("power rho=2, 1.4x", 1.4, Spending("power", 0.0, 2.0), Spending("power", 0.0, 2.0)),
            ("O'Brien-Fleming, 1.4x", 1.4, obf, obf),
            ("power rho=1/2 from 0.3, 1.4x", 1.4, Spending("power", 0.3, 0.5), Spending("power", 0.3, 0.5))]


def gate_main(args) -> None:
    rng = np.random.default_rng(args.seed)
    same = {"nochange": lambda p: GATE_PLAN * (norm.isf(0.05) + norm.ppf(min(p, 0.999))) / K0,
            "worse": lambda p: GATE_PLAN * ((norm.isf(0.05) + norm.ppf(min(p, 0.999))) / K1) ** 2}
    print(f"fixed n = {GATE_PLAN}: pass {norm.cdf(K0 - norm.isf(0.05)):.1%} at no change, fail "
          f"{norm.cdf(K1 - norm.isf(0.05)):.1%} when clearly worse")
    for name, mult, pass_spending, fail_spending in gate_designs(args):
        n_max = math.ceil(mult * GATE_PLAN)
        sizes = [round(n_max * j / args.looks) for j in range(1, args.looks + 1)]
        fractions = [s / n_max for s in sizes]
        c = {kind: np.array([lk.boundary for lk in boundaries(fractions, 0.05, spending=sp, sides=1)])
             for kind, sp in (("pass", pass_spending), ("fail", fail_spending))}
        parts = []
        for kind in ("nochange", "worse"):
            ok = gate_paths(sizes, c["pass" if kind == "nochange" else "fail"], args.paths, rng, kind)
            stop = ok.copy()
            stop[:, -1] = True
            k = stop.argmax(axis=1)
            p, n = ok[np.arange(args.paths), k].mean(), np.asarray(sizes, dtype=float)[k]
            parts.append(f"{kind}: decided {p:.1%} after {n.mean():.0f}, saving {1 - n.mean() / GATE_PLAN:.0%} vs the "
                         f"plan, {1 - n.mean() / same[kind](p):.0%} vs the fixed n for {p:.1%} ({same[kind](p):.0f})")
        fp = gate_paths(sizes, c["pass"], args.paths, rng, "margin").any(axis=1).mean()
        print(f"{name}, {args.looks} looks to {n_max}:\n  " + "\n  ".join(parts)
              + f"\n  false pass at the margin {fp:.2%}±{math.sqrt(fp * (1 - fp) / args.paths):.2%}", flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paths", type=int, default=100_000)
    parser.add_argument("--looks", type=int, default=20)
    parser.add_argument("--inflation", type=float, default=BUDGET_MULTIPLE)
    parser.add_argument("--margin", type=float, default=0.15)
    parser.add_argument("--plan", type=int, default=826)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gate", action="store_true", help="the CI gate's design (module docstring)")
    args = parser.parse_args(argv)
    if args.gate:
        args.looks = 10 if args.looks == 20 else args.looks  # the gate's benchmark: 10 looks
        return gate_main(args)
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
