"""summary.md's headline per tutor and metric kind (the paper's |r̄| and violations beside the
unbiased and excess |r̄| and the FDR violations); the HTML view shows the same table."""

from __future__ import annotations

import math

import pandas

from edufair_metrics.analysis.noise import noise_headline, unit_noise
from edufair_metrics.analysis.verdicts import verdict_headline
from edufair_metrics.catalogue import headline_kinds
from edufair_metrics.errors import EduFairError
from edufair_metrics.report.tables import N_CONV, N_PED, count_word


# (metric kind, short name in the headline columns), in the order the summary shows them
HEADLINE_KINDS = headline_kinds()

HEADLINE_NOTE = (
    f"Per metric kind (ped = the {count_word(N_PED)} judged pedagogical metrics, conv = the {count_word(N_CONV)} "
    "conversation metrics, det = the judge-invariant detector metrics). |r̄|: mean over headline units (Explicit dimensions, Implicit contrasts, "
    "Opposite Correct/Wrong) of the unit's |r| (the paper's number, not noise-corrected); unbiased |r̄|: the signed "
    "root of the mean over the same units of (r² − V0)/(1 − V0), V0 the variance of r under random sign flips (≈ 0 "
    "without bias, ≈ the true |r| with bias, at any n: the number to compare tutors by); excess |r̄|: the mean of |r| "
    "minus its noise floor (the mean |r| under random sign flips of the same paired differences: what identical "
    "conditions give with these n pairs and zero differences; ≈ 0 without bias, but it understates real effects, "
    "more so on fewer questions); viol.: units whose CI excludes 0 (the paper's rule; a unit of k pairs at the "
    "Bonferroni level 0.05/k); FDR viol.: units with a pair that is also significant after the multiplicity "
    "correction (q < 0.05; see Parameters) within the tutor × metric kind headline family.")

def headline_table(units, grid=None):
    """One row per tutor: for each metric kind present, the paper's |r̄| and violations beside the
    mean excess |r̄| and the FDR violations (``analysis.noise.noise_headline``); ``units`` without
    the noise columns get them from ``grid``."""
    if "excess_abs_r" not in units.columns:
        if grid is None:
            raise EduFairError("headline_table needs units with noise columns (analysis.params.analyse) or the grid")
        units = unit_noise(units, grid)
    head = None
    for kind, short in HEADLINE_KINDS:
        h = noise_headline(units, kind=kind)
        if not len(h):
            continue
        if "verdict" in units.columns:
            v = verdict_headline(units, kind=kind)[["tutor", "unbiased_abs_r"]]
            h = h.merge(v, on="tutor", how="left")
        else:
            h = h.assign(unbiased_abs_r=math.nan)
        h = h[["tutor", "abs_r", "unbiased_abs_r", "excess_abs_r", "violations", "violations_fdr", "units"]].rename(columns={
            "abs_r": f"{short} |r̄|", "unbiased_abs_r": f"{short} unbiased |r̄|", "excess_abs_r": f"{short} excess |r̄|",
            "violations": f"{short} viol.", "violations_fdr": f"{short} FDR viol.", "units": f"{short} units"})
        head = h if head is None else head.merge(h, on="tutor", how="outer")
    if head is None:
        return pandas.DataFrame(columns=["tutor"])
    for c in head.columns:
        if c.endswith(("viol.", "units")):
            head[c] = head[c].fillna(0).astype(int)
    return head

OUTCOME_HEADLINE_NOTE = (" out = the outcome metrics of the post-test (edufair.posttest: post-test correct, learning "
                         "gain, learned without a reveal, revealed outcome; see \"Outcome fairness\" below).")
