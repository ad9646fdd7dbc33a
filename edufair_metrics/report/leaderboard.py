"""``edufair leaderboard``: one table ranking tutors by fairness, with their pedagogy level.

    edufair leaderboard RUN [RUN ...] [--out DIR] [--n-boot 1000] [--seed 0] [--min-pairs 15] [--margin 0.10]

Primary quantity (the ranking key, lower = fairer): ``ped unbiased |r̄|``, the signed root of the
tutor's mean over its pedagogical headline units (Explicit dimensions, Implicit contrasts, Opposite
Correct/Wrong; all domains) of ``r2_unbiased = (r² − V0) / (1 − V0)``, V0 the exact variance of r
under random sign flips (``analysis.verdicts``). It is ≈ 0 for a tutor without bias and ≈ its true
|r| with bias, at any number of questions and share of zero differences. Neither the paper's |r̄|
(its noise floor, ≈ 0.06 at n = 300, is as large as the effects: identical tutors would be
ordered by chance, and tutors with more zero differences would look fairer) nor the excess |r̄|
(|r| minus the floor, which understates a real effect more on fewer questions, so a biased tutor
run on fewer questions looks fairer) is the key. When the tutors' median pairs per unit differ by
more than 1.5× the table carries a warning: their precisions differ, and so do their verdicts'.

Rank interval: ``analysis.ranks.rank_intervals`` — the questions of each domain are resampled
jointly for all tutors (B = ``--n-boot``, ``--seed``), every tutor's primary quantity is recomputed
and the tutors are ranked in each resample; ``rank 95% interval`` is the 2.5th–97.5th percentile of
a tutor's ranks. Tutors whose intervals overlap are **tied** (``tied with``): the data do not
order them, whatever the point ranks say. ``rank`` is the point rank (ties share the mean rank).

Columns (all from the same statistics as ``edufair report``):

* ``ped unbiased |r̄|`` (primary), ``rank 95% interval``, ``tied with``;
* ``ped flagged`` / ``ped certified`` / ``ped inconclusive`` – the tutor's pedagogical headline
  units by verdict (``analysis.verdicts``: flagged = FDR-controlled evidence of a difference,
  certified = |r| < ``--margin`` by an equivalence test, inconclusive = neither);
  ``ped family certified`` – every one of them certified (intersection–union);
* ``ped excess |r̄|``, ``ped |r̄|`` (the paper's, not noise-corrected), ``ped viol.`` (units whose
  CI excludes 0, the paper's rule at the unit's Bonferroni level), ``ped FDR viol.``;
* ``conv …`` – the same for the conversation metrics; ``det …`` – the judge-invariant detector
  metrics (``records.DETECTOR_METRICS``, from the transcripts), when the runs store transcripts;
* ``explicit`` / ``implicit`` / ``opposite`` – ``ped |r̄|`` per condition;
* ``ped median n`` – the median pairs per pedagogical headline unit; with ``--simultaneous``,
  ``ped sim. flagged`` / ``ped sim. certified`` – the family-wise verdicts (``analysis.simultaneous``);
* one column per pedagogical metric: the tutor's mean per-dialogue rate (pedagogy level);
* ``missing labels`` – missing judge labels / tutor turns sent to the judge; ``dialogues``.

Writes ``leaderboard.csv`` (every column above, the deciding ones first) and ``leaderboard.md``
(default ``results/leaderboard-<timestamp>/``) and prints the Markdown table: the columns that decide
(:data:`DECIDING`: rank, tutor, the primary quantity, its rank interval and ties, the pedagogical
verdict counts, testability, missing labels, dialogues), the same short table as the report's HTML
view (``edufair report`` with two tutors or more ranks by the same quantity, from the same
:func:`ranked_table`, and writes the same ``leaderboard.csv``).
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from edufair_metrics.analysis.noise import noise_headline
from edufair_metrics.analysis.audit import RANK_QUANTITY, audit
from edufair_metrics.analysis.params import StatParams
from edufair_metrics.analysis.grid import headline
from edufair_metrics.analysis.verdicts import verdict_headline
from edufair_metrics.catalogue import headline_kinds
from edufair_metrics.io import atomic_write_json, atomic_write_text
from edufair_metrics.records import PEDAGOGICAL_METRICS
from edufair_metrics.report.tables import to_markdown
from edufair_metrics.provenance import versions

PRIMARY = "ped unbiased |r̄|"
PRIMARY_QUANTITY = RANK_QUANTITY  # analysis.ranks quantity behind PRIMARY (analysis.audit ranks by it)
N_RATIO_WARNING = 1.5  # warn when the tutors' median pairs per unit differ by more than this factor
KINDS = headline_kinds()  # (kind, short name) of the metric catalogue's headline kinds


def _interval(lo, hi) -> str:
    if lo is None or (isinstance(lo, float) and math.isnan(lo)):
        return "—"
    lo, hi = float(lo), float(hi)
    fmt = lambda x: f"{x:g}"  # noqa: E731  (ranks are whole or half numbers)
    return fmt(lo) if lo == hi else f"{fmt(lo)}–{fmt(hi)}"


def leaderboard_table(df, units, ranks=None):
    """Ranked DataFrame (see module docstring) from the long score frame, the units (with the
    noise columns of ``analysis.params.analyse``) and ``ranks`` (``analysis.ranks.rank_intervals``;
    None: no rank interval, ranked by the point value only)."""
    tutors = sorted(df["tutor"].unique())
    out = pd.DataFrame(index=pd.Index(tutors, name="tutor"))
    for kind, short in KINDS:
        h = noise_headline(units, kind=kind).set_index("tutor")
        if not len(h) and kind != "pedagogical":
            continue
        v = verdict_headline(units, kind=kind).set_index("tutor")
        out[f"{short} unbiased |r̄|"] = v["unbiased_abs_r"]
        out[f"{short} flagged"] = v["flag"]
        out[f"{short} certified"] = v["certify"]
        out[f"{short} inconclusive"] = v["inconclusive"]
        if kind == "pedagogical":
            out[f"{short} family certified"] = v["family_certified"].map({True: "yes", False: "no"})
        out[f"{short} excess |r̄|"] = h["excess_abs_r"]
        out[f"{short} |r̄|"] = h["abs_r"]
        out[f"{short} viol."] = h["violations"]
        out[f"{short} FDR viol."] = h["violations_fdr"]
        if kind == "pedagogical":
            out["ped median n"] = v["n_median"]
            if "verdict_sim" in units.columns:  # --simultaneous: the family-wise verdicts beside them
                sim = units[units["headline"].astype(bool) & (units["metric_kind"] == kind)].groupby("tutor")["verdict_sim"]
                out["ped sim. flagged"] = sim.apply(lambda x: int((x == "flag").sum()))
                out["ped sim. certified"] = sim.apply(lambda x: int((x == "certify").sum()))
    per_cond = headline(units, by=("tutor", "condition"), kind="pedagogical")
    if len(per_cond):
        wide = per_cond.pivot(index="tutor", columns="condition", values="abs_r")
        for cond in ("explicit", "implicit", "opposite"):
            if cond in wide.columns:
                out[cond] = wide[cond]
    rates = df[df["metric"].isin(PEDAGOGICAL_METRICS)].groupby(["tutor", "metric"])["value"].mean().unstack("metric")
    for m in PEDAGOGICAL_METRICS:
        if m in rates.columns:
            out[m] = rates[m]
    out = out.reset_index()
    for c in out.columns:
        if c.endswith(("viol.", "flagged", "certified", "inconclusive")) and "family" not in c:
            out[c] = out[c].fillna(0).astype(int)
    if ranks is not None and len(ranks):
        r = ranks.set_index("tutor")
        out["_rank"] = out["tutor"].map(r["rank"])
        out.insert(2, "rank 95% interval", [_interval(lo, hi) for lo, hi in
                                            zip(out["tutor"].map(r["rank_low"]), out["tutor"].map(r["rank_high"]))])
        out.insert(3, "tied with", out["tutor"].map(r["tied_with"]).fillna("").replace("", "—"))
    else:
        out["_rank"] = out[PRIMARY].rank(method="average")
    out = out.sort_values(["_rank", PRIMARY, "ped flagged", "tutor"], na_position="last", kind="stable")
    rank = out.pop("_rank")
    if rank.notna().all() and (rank == rank.round()).all():
        rank = rank.astype(int)  # "1", not "1.000"; a shared point rank stays 1.5
    out.insert(0, "rank", rank)
    # the primary quantity right after the tutor
    cols = list(out.columns)
    cols.insert(2, cols.pop(cols.index(PRIMARY)))
    return out[cols].reset_index(drop=True)


LEADERBOARD_NOTE = (
    "Ranked by ped unbiased |r̄| (primary; lower = fairer): the signed root of the mean over the pedagogical headline "
    "units of (r² − V0)/(1 − V0), V0 the variance of r under random sign flips of the same paired differences: ≈ 0 "
    "without bias, ≈ the true |r| with bias, at any number of questions. rank: point rank (ties share the mean rank); "
    "rank 95% interval: from B bootstrap resamples of the questions, drawn jointly for all tutors; tied with: tutors "
    "whose rank intervals overlap (the data do not order them). flagged / certified / inconclusive: headline units by "
    "verdict (FDR-controlled evidence of a difference / |r| below the margin by an equivalence test / neither); family "
    "certified: all of them certified. excess |r̄|: |r| minus its noise floor; |r̄|: the paper's mean |r| (as printed "
    "in the paper, not noise-corrected); viol.: units whose CI excludes 0 (the paper's rule, at the unit's Bonferroni "
    "level for two name pairs); FDR viol.: also q < 0.05 (Benjamini–Hochberg unless --fdr-method holm) within the "
    "tutor × metric kind headline family. ped / conv / det: pedagogical, conversation and judge-invariant detector "
    "metrics. ped median n: median pairs per pedagogical headline unit. Metric columns: mean per-dialogue rate.")


def sample_size_warning(table) -> str:
    """A warning line when the tutors' median pairs per pedagogical headline unit differ by more
    than :data:`N_RATIO_WARNING` (their noise floors, MDEs and verdicts are then not comparable);
    "" otherwise."""
    if "ped median n" not in table.columns:
        return ""
    n = table.set_index("tutor")["ped median n"].dropna()
    n = n[n > 0]
    if len(n) < 2 or n.max() <= N_RATIO_WARNING * n.min():
        return ""
    parts = ", ".join(f"{t} {v:g}" for t, v in n.sort_values().items())
    return (f"Warning: the tutors were compared on different numbers of questions (median pairs per unit: {parts}; "
            f"{n.max() / n.min():.1f}× > {N_RATIO_WARNING}×). The ranking key is unbiased at any n, but the tutors "
            "with fewer questions have wider rank intervals, larger MDEs and more inconclusive units.")


# The columns that decide a ranking, in this order: the short table of leaderboard.md, the printed
# table and the HTML view; leaderboard.csv holds every column (these first).
DECIDING = ["rank", "tutor", PRIMARY, "rank 95% interval", "tied with", "ped flagged", "ped certified",
            "ped inconclusive", "ped family certified", "testable", "missing labels", "dialogues"]


def ranked_table(a):
    """The whole leaderboard of the audit ``a`` (``analysis.audit`` with ranks): :func:`leaderboard_table`
    with each tutor's missing-label rate, dialogues and testability; a tutor whose pedagogical metrics
    cannot be read gets no rank ("not testable", listed after the ranked ones). The one table behind
    ``edufair leaderboard`` and the report's HTML leaderboard. Columns: :data:`DECIDING` first."""
    table = leaderboard_table(a.df, a.units, a.ranks)
    miss = a.missing.groupby("tutor")[["missing_turns", "sent_turns"]].sum()
    rate = (miss["missing_turns"] / miss["sent_turns"].where(miss["sent_turns"] > 0))
    table["missing labels"] = table["tutor"].map(rate)
    table["dialogues"] = table["tutor"].map({r.label: len(r.scores) for r in a.runs})
    untestable = untestable_tutors(a)
    table["testable"] = table["tutor"].map(lambda t: "no: " + "; ".join(untestable[t].reasons) if t in untestable else "yes")
    if untestable:
        mask = table["tutor"].isin(untestable)
        table["rank"] = table["rank"].astype(object).where(~mask, "not testable")
        table = pd.concat([table[~mask], table[mask]], ignore_index=True)
    first = [c for c in DECIDING if c in table.columns]
    return table[first + [c for c in table.columns if c not in first]]


def short_table(table):
    """The columns of ``table`` that decide (:data:`DECIDING`): what a person reads first."""
    return table[[c for c in DECIDING if c in table.columns]]


def untestable_tutors(a) -> dict:
    """tutor -> its pedagogical Testability, for the tutors whose pedagogical metrics cannot be read."""
    return {tutor: t for (tutor, kind), t in a.untestable.items() if kind == "pedagogical"}


SHORT_NOTE = ("The columns that decide; every column (per metric kind, per condition, per metric: the paper's |r̄|, excess "
              "|r̄|, violations, pedagogy levels) is in leaderboard.csv. Terms: glossary.md of a report, or README.")


def write_leaderboard(runs, out_dir: Path, params: StatParams) -> str:
    """Rank the tutors of loaded runs and write leaderboard.csv (every column) / .md (the columns that
    decide) and a manifest; returns the Markdown."""
    a = audit(runs, params, ranks=True)
    table = ranked_table(a)
    untestable = untestable_tutors(a)
    out_dir = Path(out_dir)
    warning = sample_size_warning(table)
    parts = []
    if untestable:
        parts.append("**NOT TESTABLE** (no rank; its numbers are not evidence of fairness): " + "; ".join(
            f"{t}: {'; '.join(x.reasons)}" for t, x in sorted(untestable.items())))
    if warning:
        parts.append(f"**{warning}**")
    parts.append(LEADERBOARD_NOTE + f" Margin: ±{params.equivalence_margin:.2f}.")
    parts.append(SHORT_NOTE)
    md = to_markdown(short_table(table), f"EduFair leaderboard (ranked by {PRIMARY}, lower = fairer)", "\n\n".join(parts))
    atomic_write_text(out_dir / "leaderboard.csv", table.to_csv(index=False))
    atomic_write_text(out_dir / "leaderboard.md", md)
    atomic_write_json(out_dir / "leaderboard_manifest.json", {
        "kind": "edufair-leaderboard", "inputs": [r.describe() for r in runs], "parameters": params.to_dict(),
        "primary_quantity": {"column": PRIMARY, "definition": "signed root of the mean over the pedagogical headline "
                             "units of (r^2 - null_var_r) / (1 - null_var_r); lower = fairer"},
        "sample_size_warning": warning or None,
        "not_testable": {t: list(x.reasons) for t, x in sorted(untestable.items())},
        "rank_interval": {"level": 0.95, "bootstrap": "questions of each domain resampled jointly for all tutors",
                          "tied": "rank intervals overlap"},
        "short_columns": [c for c in DECIDING if c in table.columns],
        "versions": versions(), "files": ["leaderboard.csv", "leaderboard.md"],
    })
    return md
