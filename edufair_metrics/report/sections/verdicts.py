"""summary.md's verdict part: units by verdict per tutor and kind, one sentence per tutor, the flagged
units, the simultaneous verdicts (``--simultaneous``) and the power table."""

from __future__ import annotations

import math

import pandas

from edufair_metrics.analysis.power import power_table
from edufair_metrics.analysis.verdicts import verdict_headline
from edufair_metrics.report.tables import fmt_signed, to_markdown
from edufair_metrics.report.sections.headline import HEADLINE_KINDS


MDE_NOTE = ("Smallest |r| a contrast flags with 80% power when it is the only effect of its family (level α / (m·k): "
            "m units in the tutor × metric kind headline family, k pairs per unit; analysis/verdicts.py), min–max "
            "over the cell's headline contrasts, from each contrast's own null variance (so zeros and ties count: "
            "[z% zeros] = share of zero differences). A contrast without a flag may hide an effect below this size; "
            "an inconclusive one says how many more questions would decide it (units.csv: more_questions).")

VERDICT_NOTE = ("Units by verdict (analysis/verdicts.py): flag = FDR-controlled evidence of a difference (the unit's "
                "Bonferroni p over its pairs, Benjamini–Hochberg over the units of the tutor × metric kind headline "
                "family); unconfirmed = flagged on the per-dialogue rates, not confirmed per judged turn (dialogue "
                "length may explain it); certify = every pair's 90% interval of r inside ±margin (TOST at α = 0.05); "
                "inconclusive = neither: the run cannot tell (MDE: median smallest detectable |r|; more questions: "
                "median pairs that would decide an inconclusive unit); insufficient = fewer than the pair minimum. "
                "family certified: every headline unit certified (intersection–union: only then is the tutor fair "
                "within the margin on this headline).")

NO_VALUE = "—"  # a cell with nothing to show (glossary.md)


def _num(x, fmt: str) -> str:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return NO_VALUE
    return NO_VALUE if math.isnan(x) else fmt.format(round(x) if fmt == "{:.0f}" else x)


def verdict_table(units) -> "pandas.DataFrame":
    """One row per tutor and metric kind: units per verdict, family certification, median MDE and
    median more questions of the inconclusive units (``analysis.verdicts.verdict_headline``)."""
    parts = []
    for kind, _short in HEADLINE_KINDS:
        v = verdict_headline(units, kind=kind)
        if len(v):
            parts.append(v.assign(kind=kind))
    if not parts:
        return pandas.DataFrame()
    v = pandas.concat(parts, ignore_index=True)
    out = v[["tutor", "kind", "units", "flag", "unconfirmed", "certify", "inconclusive", "insufficient"]].copy()
    out["family certified"] = v["family_certified"].map({True: "yes", False: "no"})
    # "—" where there is nothing to show (no sufficient unit; no inconclusive unit): glossary.md
    out["unbiased |r̄|"] = [_num(x, "{:.3f}") for x in v["unbiased_abs_r"]]
    out["median n"] = [_num(x, "{:.0f}") for x in v["n_median"]]
    out["median MDE"] = [_num(x, "{:.3f}") for x in v["mde_r_median"]]
    out["more questions (median)"] = [_num(x, "{:.0f}") for x in v["more_questions_median"]]
    return out.sort_values(["tutor", "kind"], key=lambda c: c.map({k: i for i, (k, _) in enumerate(HEADLINE_KINDS)})
                           if c.name == "kind" else c).reset_index(drop=True)

def verdict_sentences(units, margin: float, untestable: dict | None = None) -> list[str]:
    """Per tutor, one sentence on its pedagogical headline: what is flagged, certified and
    inconclusive (never just "no violation"); "not testable" with the reason where
    ``untestable`` ((tutor, kind) -> Testability) says so."""
    v = verdict_headline(units, kind="pedagogical", margin=margin)
    lines = []
    for row in v.itertuples(index=False):
        t = (untestable or {}).get((row.tutor, "pedagogical"))
        if t is not None:
            lines.append(f"- {row.tutor}: pedagogical headline **not testable**: {'; '.join(t.reasons)}; its "
                         f"{row.flag} flagged / {row.certify} certified unit(s) are not evidence either way.")
            continue
        parts = [f"{row.flag} flagged"]
        if row.unconfirmed:
            parts.append(f"{row.unconfirmed} unconfirmed per turn")
        parts.append(f"{row.certify} certified within ±{margin:.2f}")
        inc = f"{row.inconclusive} inconclusive"
        if row.inconclusive and not math.isnan(row.mde_r_median):
            more = ("" if math.isnan(row.more_questions_median)
                    else f"; about {int(row.more_questions_median)} more questions per contrast would decide the median one")
            inc += f" (median detectable |r| {row.mde_r_median:.2f}{more})"
        parts.append(inc)
        if row.insufficient:
            parts.append(f"{row.insufficient} insufficient")
        fam = ("the headline is certified fair within the margin" if row.family_certified else
               "the headline is not certified (every unit would have to be")
        if not row.family_certified:
            fam += (f"; about {int(row.n_family_certify)} pairs per contrast would give that 80% power)"
                    if math.isfinite(row.n_family_certify) else
                    "; not reachable while a unit's estimate is at or above the margin)")
        if row.ms_upper == row.ms_upper:
            rms = (f"the root-mean-square |r| over the headline units is certified below {margin:.2f}"
                   if row.headline_certified else
                   f"the root-mean-square |r| over the headline units is not shown below {margin:.2f}")
            fam += f"; {rms} (upper 95% bound of the mean r² {row.ms_upper:.4f} vs {margin * margin:.4f})"
        lines.append(f"- {row.tutor}: pedagogical headline units: {', '.join(parts)}; {fam}.")
    return lines

def flagged_units_table(units, grid, labels: dict[str, str] | None = None):
    """The flagged and unconfirmed tutor-side units (not the student monitor's: its section lists
    them) with their unit-level numbers, and for pedagogical units the turn-count contrast of their
    strongest pair (mean applicable turns a vs b, per-turn difference and its within-question
    permutation p)."""
    u = units[units["verdict"].isin(["flag", "unconfirmed"])] if "verdict" in units.columns else units.iloc[0:0]
    if "metric_kind" in u.columns:  # the student's own units are listed in the student-side monitor's section
        u = u[u["metric_kind"] != "student"]
    if len(u) == 0:
        return pandas.DataFrame()
    keys = ["tutor", "domain", "condition", "contrast", "metric"]
    rows = grid[grid["flagged"].astype(bool)].sort_values("q_flag")
    best = rows.drop_duplicates(keys).set_index(keys)
    extra = [c for c in ("caveats",) if c in u.columns]
    out = u[keys + ["verdict", *extra, "abs_r", "unbiased_abs_r", "null_abs_r", "q_unit", "n_pairs_min"]].copy()
    mi = pandas.MultiIndex.from_frame(out[keys])
    b = best.reindex(mi)
    out["pair"] = b["pair"].to_numpy()
    out["r [95% CI]"] = [fmt_signed(r, lo, hi, n, True) if r == r else "—" for r, lo, hi, n in
                         zip(b["r"], b["ci_low"], b["ci_high"], b["n_pairs"])]
    turns = []
    for ta, tb, rd, tp in zip(b["turns_a"], b["turns_b"], b["turn_rd"], b["turn_p"]):
        turns.append("—" if ta != ta else f"{ta:.1f} vs {tb:.1f}; per turn {rd:+.3f} (p {tp:.3f})")
    out["turns a vs b; per-turn Δ"] = turns
    out["domain"] = out["domain"].map(lambda d: (labels or {}).get(d, d))
    out = out.rename(columns={"abs_r": "|r̄|", "unbiased_abs_r": "unbiased |r̄|", "null_abs_r": "floor",
                              "q_unit": "q", "n_pairs_min": "n"})
    return out.sort_values(["tutor", "verdict", "q"]).reset_index(drop=True)

def simultaneous_section(units, grid) -> str:
    """The family-wise (max-|T| bootstrap) verdicts per tutor and metric kind (``--simultaneous``)."""
    rows = []
    for (tutor, kind), sub in units[units["headline"].astype(bool)].groupby(["tutor", "metric_kind"], sort=True):
        c = sub["verdict_sim"].value_counts()
        rows.append({"tutor": tutor, "kind": kind, "units": len(sub), "flag": int(c.get("flag", 0)),
                     "unconfirmed": int(c.get("unconfirmed", 0)), "certify": int(c.get("certify", 0)),
                     "inconclusive": int(c.get("inconclusive", 0)), "insufficient": int(c.get("insufficient", 0)),
                     "family certified": "yes" if (sub["verdict_sim"] == "certify").all() else "no"})
    c95, c90 = grid.attrs.get("sim_c95", math.nan), grid.attrs.get("sim_c90", math.nan)
    return to_markdown(pandas.DataFrame(rows), "Simultaneous verdicts (family-wise over the whole grid)",
                       f"Max-|T| bootstrap with one shared resample of the questions over every sufficient row of the "
                       f"grid (analysis/simultaneous.py): critical values {c95:.2f} (95%, flags) and {c90:.2f} (90%, "
                       "certification). With probability ≈ 95% no row of the whole audit is flagged falsely; a unit "
                       "is flagged when one of its rows is, certified when all are. Columns sim_* and verdict_sim in "
                       "grid.csv / units.csv.")

def power_lines(grid, ses_summary: str) -> list[str]:
    """The pooled power line per tutor (``analysis.power.power_table``; kept for callers: the report
    shows :func:`mde_section`, one MDE per metric and domain, instead)."""
    table = power_table(grid, kind="pedagogical", ses_summary=ses_summary)
    if not len(table):
        return []

    def r(x: float) -> str:
        return "not reachable (even |r| → 1)" if math.isnan(x) else f"|r| = {x:.3f}"

    lines = ["Power (pedagogical headline contrasts; two-sided Wilcoxon normal approximation, analysis.power): "
             "a contrast without a violation may still hide an effect below these sizes."]
    for row in table.itertuples(index=False):
        lines.append(f"- {row.tutor}: smallest |r| detectable at 80% power for n = {row.n_median} pairs (median per "
                     f"contrast), zero share {row.zero_share:.0%}: {r(row.mde_r)} (raw violation rule, α = 0.05); "
                     f"{r(row.mde_r_fdr)} under FDR when few of its {row.rows} contrasts are biased (α/{row.rows}).")
    lines.append("")
    return lines

def mde_table(grid, kind: str = "pedagogical", labels: dict[str, str] | None = None):
    """Per tutor × domain: the median pairs per contrast and, per metric, the min–max over the
    metric's headline contrasts of ``mde_r`` (the smallest |r| flagged with 80% power when it is
    the only effect of its family, ``analysis.verdicts``; it grows with the share of zero
    differences, so sparse metrics need more)."""
    g = grid[grid["headline"] & grid["sufficient"] & (grid["metric_kind"] == kind)] if len(grid) else grid
    if len(g) == 0 or "mde_r" not in g.columns:
        return pandas.DataFrame()
    metrics = [m for m in dict.fromkeys(g["metric"])]
    rows = []
    for (tutor, domain), sub in g.groupby(["tutor", "domain"], sort=True):
        row = {"tutor": tutor, "domain": (labels or {}).get(domain, domain), "n (median)": int(sub["n_pairs"].median())}
        for m in metrics:
            v = sub.loc[sub["metric"] == m, "mde_r"]
            zs = sub.loc[sub["metric"] == m, "n_zero"].sum() / max(sub.loc[sub["metric"] == m, "n_pairs"].sum(), 1)
            if not len(v):
                row[m] = "—"
            elif v.isna().all():
                row[m] = "not reachable"
            else:
                lo, hi = v.min(), v.max()
                rng = f"{lo:.2f}" if round(lo, 2) == round(hi, 2) else f"{lo:.2f}–{hi:.2f}"
                row[m] = rng + (" (+n.r.)" if v.isna().any() else "") + f" [{zs:.0%} zeros]"
        rows.append(row)
    return pandas.DataFrame(rows)
