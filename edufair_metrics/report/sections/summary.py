"""summary.md, assembled from its parts in order: the opening (title, banners, parameters), the
verdicts, the paper's violations, the extensions and the post-test, then the sections of the other
modules (lost pairs, student monitor, next-turn independence, placebo, replicates, judge validity,
cost). Each part is a function of the :class:`~edufair_metrics.analysis.audit.Audit`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from edufair_metrics.analysis.ses import reported_rows
from edufair_metrics.analysis.verdicts import DEFAULT_MARGIN
from edufair_metrics.records import PEDAGOGICAL_METRICS
from edufair_metrics.report.judge_validity import judge_validity_section
from edufair_metrics.report.failures import cost_markdown
from edufair_metrics.report.placebo import placebo_markdown
from edufair_metrics.report.replicates import replicates_markdown
from edufair_metrics.report.glossary import GLOSSARY_LINE
from edufair_metrics.report.sections.banners import Banner, banner_lines
from edufair_metrics.report.sections.banners import banners as all_banners
from edufair_metrics.report.sections.extensions import extension_section
from edufair_metrics.report.sections.headline import HEADLINE_NOTE, OUTCOME_HEADLINE_NOTE, headline_table
from edufair_metrics.report.sections.outcome import outcome_section
from edufair_metrics.report.sections.run_card import run_card_lines
from edufair_metrics.report.sections.verdicts import (
    MDE_NOTE,
    VERDICT_NOTE,
    flagged_units_table,
    mde_table,
    power_lines,
    simultaneous_section,
    verdict_sentences,
    verdict_table,
)
from edufair_metrics.report.tables import FDR_MARK, LEVEL_KEYS, fmt_signed, label_levels, to_markdown
from edufair_metrics.report.threats import pair_loss_markdown, student_markdown

if TYPE_CHECKING:
    from edufair_metrics.analysis.audit import Audit

FDR_NAMES = {"bh": "Benjamini–Hochberg", "holm": "Holm (family-wise)"}
PARTS = ("opening", "verdict_part", "violations_part", "closing")
NEXT_TURN_NOTE = ("Tutor turns that partially reveal the gold (or leak it) or reveal nothing, and the share of each whose "
                  "next student turn attempts reasoning; per condition level: next_turn_independence.csv.")
EVIDENCE_LINE = ("\nEvidence: open index.html (self-contained, works from file://; or `edufair view` on this "
                 "folder): the verdict grid, each cell's paired differences and the two dialogues behind them.\n")


def opening(a: "Audit", banners: Sequence[Banner] = ()) -> list[str]:
    """Title, the banners (``sections.banners``: the same ones index.html shows), the run card,
    parameters, the glossary's pointer and the descriptive rates (with a table when every contrast
    is insufficient)."""
    params = a.params.to_dict()
    ses = params.get("ses_summary", "single")
    keep = bool(params.get("keep_failed_dialogues", False))
    grid, levels = a.grid, label_levels(a.levels, a.domain_labels)
    lines = ["# EduFair bias report", ""]
    lines += banner_lines(banners)
    lines += run_card_lines(a)
    ses_text = ("the paper's one low- vs high-income contrast" if ses == "single"
                else f"{ses} of the three pairwise contrasts")
    lines.append(f"Parameters: B = {params['n_boot']}, seed = {params['seed']}, min pairs = {params['min_pairs']}, "
                 f"SES summary = {ses} ({ses_text}), failed dialogues "
                 f"{'kept' if keep else 'left out of the contrasts'}, multiplicity correction "
                 f"{FDR_NAMES.get(params.get('fdr_method', 'bh'), params.get('fdr_method'))} (q_value, FDR violations, "
                 f"flags), equivalence margin ±{float(params.get('equivalence_margin', DEFAULT_MARGIN)):.2f} "
                 f"(certify){', simultaneous bounds on' if params.get('simultaneous') else ''}. "
                 "Signed r > 0: group a received more of the behaviour.")
    lines.append("")
    lines.append(GLOSSARY_LINE)
    lines.append("")
    all_insufficient = len(grid) > 0 and not grid["sufficient"].any()
    if levels is not None and len(levels):
        lines.append(f"Descriptive rates per condition level (no pairing, not a bias test): levels.md, fig_levels.png "
                     f"({len(levels)} levels, {int(levels['dialogues'].sum())} dialogues).")
        lines.append("")
        if all_insufficient:
            ped = [m for m in PEDAGOGICAL_METRICS if m in levels.columns]
            lines.append(to_markdown(levels[LEVEL_KEYS + ["dialogues", "questions"] + ped],
                                     "Pedagogical rates per condition level (descriptive)",
                                     "Mean per-dialogue rate over the dialogues that have a value; differences are not tested."))
    return lines


def verdict_part(a: "Audit") -> list[str]:
    """The headline per tutor, the verdicts per tutor with a sentence each, the flagged units, the simultaneous verdicts and the power table."""
    labels = a.domain_labels
    params = a.params.to_dict()
    ses = params.get("ses_summary", "single")
    untestable = a.untestable
    grid, units = a.grid, a.units
    lines: list[str] = []
    head = headline_table(units, grid)
    note = HEADLINE_NOTE + (OUTCOME_HEADLINE_NOTE if "out |r̄|" in head.columns else "")
    lines.append(to_markdown(head, "Headline per tutor", note))
    margin = float(params.get("equivalence_margin", DEFAULT_MARGIN))
    if "verdict" in units.columns and len(units):
        lines.append(to_markdown(verdict_table(units), f"Verdicts per tutor (margin ±{margin:.2f})", VERDICT_NOTE))
        lines.extend(verdict_sentences(units, margin, untestable))
        lines.append("")
        flagged = flagged_units_table(units, grid, labels)
        if len(flagged):
            lines.append(to_markdown(flagged, "Flagged units",
                                     "q: the unit's FDR-adjusted p; floor: its noise floor; pair: its strongest pair "
                                     "(smallest q); turns a vs b: mean applicable judged turns per dialogue of the "
                                     "two levels, per-turn Δ: the Mantel–Haenszel difference of positive turns per "
                                     "turn (p: within-question permutation). unconfirmed: the per-dialogue rates "
                                     "differ but the per-turn behaviour does not, with the turn counts beside it. "
                                     "caveats: differential pair loss in the same contrast (the remaining pairs are a "
                                     "selected set) and student drift (a student unit of the contrast is flagged); "
                                     "see \"Lost pairs\" and \"Student-side monitor\" below (which lists the flagged "
                                     "student units)."))
        else:
            n_inc = int((units["verdict"] == "inconclusive").sum())
            n_cert = int((units["verdict"] == "certify").sum())
            why = (" Not testable: " + "; ".join(f"{t.tutor} ({t.kind}: {'; '.join(t.reasons)})"
                                                 for t in untestable.values()) + "." if untestable else "")
            lines.append(f"### Flagged units\n\nNo unit is flagged for any tutor. That is not a certificate of "
                         f"fairness: {n_cert} unit(s) are certified within ±{margin:.2f} and {n_inc} are inconclusive "
                         f"(the run is too small to tell; see the verdicts and the power table).{why}\n")
        if "verdict_sim" in units.columns:
            lines.append(simultaneous_section(units, grid))
        mde = mde_table(grid, "pedagogical", labels)
        if len(mde):
            lines.append(to_markdown(mde, "Power: smallest flaggable |r| per metric and domain (pedagogical)", MDE_NOTE))
    else:
        lines.extend(power_lines(grid, ses))
    return lines


def violations_part(a: "Audit") -> list[str]:
    """The contrast counts, the paper's violations, meaningful effects without a violation and missing labels per task."""
    labels = a.domain_labels
    params = a.params.to_dict()
    ses = params.get("ses_summary", "single")
    untestable = a.untestable
    grid, missing = a.grid, a.missing
    lines: list[str] = []
    n_ins = int((~grid["sufficient"]).sum())
    counted = reported_rows(grid, ses)  # one SES family, so its effects are not counted twice
    n_fdr = int(counted["violation_fdr"].sum()) if "violation_fdr" in counted.columns else 0
    lines.append(f"Contrast pairs computed: {len(grid)}; insufficient (< {params['min_pairs']} pairs): {n_ins}; "
                 f"meaningful (|r| ≥ 0.10): {int(counted['meaningful'].sum())}; "
                 f"violations: {int(counted['violation'].sum())}, of which FDR violations: {n_fdr} "
                 f"(SES counted once, by its {ses} unit; all rows in grid.csv).")
    lines.append("")
    viol = counted[counted["violation"]].copy()
    viol["domain"] = viol["domain"].map(lambda d: labels.get(d, d))
    paper_title = "Fairness violations (95% CI excludes 0) — as printed in the paper (not noise-corrected)"
    if len(viol):
        fdr = viol["violation_fdr"].astype(bool) if "violation_fdr" in viol.columns else [False] * len(viol)
        viol["r [95% CI]"] = [fmt_signed(r, lo, hi, n, True, True, f) for r, lo, hi, n, f in
                              zip(viol["r"], viol["ci_low"], viol["ci_high"], viol["n_pairs"], fdr)]
        viol = viol.sort_values("abs_r", ascending=False)
        cols = ["tutor", "domain", "condition", "contrast", "pair", "metric", "n_pairs", "r [95% CI]", "p", "p_adj"]
        cols += [c for c in ("excess_abs_r", "q_value") if c in viol.columns]
        lines.append(to_markdown(viol[cols], paper_title,
                                 f"{FDR_MARK}: also an FDR violation (q_value < 0.05 after the multiplicity correction "
                                 "within the tutor × metric kind headline family); without it the violation may be one of the chance flags "
                                 "expected among many contrasts. excess_abs_r: |r| minus its sign-flip noise floor."))
    else:
        head = ("No contrast violates by the paper's rule, but the run is not testable (see the top): that is no "
                "evidence of fairness." if untestable else "No contrast violates by the paper's rule.")
        lines.append(f"### {paper_title}\n\n{head} Read it with the verdicts "
                     "above: without a flag, a contrast is certified only when its interval lies inside the margin; "
                     "otherwise the run cannot tell.\n")
    mean_eff = counted[counted["meaningful"] & ~counted["violation"]]
    if len(mean_eff):
        cnt = mean_eff.groupby(["tutor", "condition"]).size().reset_index(name="meaningful, CI includes 0")
        lines.append(to_markdown(cnt, "Meaningful effects (|r| ≥ 0.10) without a violation"))
    if len(missing):
        agg = missing.groupby(["tutor", "task"]).agg(sent_turns=("sent_turns", "sum"),
                                                      missing_turns=("missing_turns", "sum")).reset_index()
        agg["missing_rate"] = agg["missing_turns"] / agg["sent_turns"].where(agg["sent_turns"] > 0)
        lines.append(to_markdown(agg, "Missing judge labels per task", "Per condition level: missing_labels.md."))
    return lines


def closing(a: "Audit") -> list[str]:
    """The extension conditions, the post-test and the failure counts."""
    labels = a.domain_labels
    params = a.params.to_dict()
    keep = bool(params.get("keep_failed_dialogues", False))
    runs, grid, units = a.runs, a.grid, a.units
    lines: list[str] = []
    lines.extend(extension_section(units, labels, grid))
    lines.extend(outcome_section(a.outcome))
    failed = sum(1 for r in runs for f in r.failures if f.stage != "judge")
    n_missing = sum(1 for r in runs for f in r.failures if f.stage == "judge")
    lines.append(f"Failures: {failed} dialogue(s) ended by a failed model call, {n_missing} missing judge label(s); "
                 "by kind and condition level: failures.md.\n")
    n_failed = sum(1 for r in runs for s in r.scores if s.failed)
    if n_failed:
        lines.append(f"Failed dialogues {'kept in' if keep else 'left out of'} the contrasts: {n_failed}"
                     f"{' (scored on their partial turns)' if keep else ' (their pairs drop out)'}.\n")
    return lines


def summary_markdown(a: "Audit", *, html: bool = True, agreement_dir: str | Path | None = None,
                     human_dir: str | Path | None = None, banners: Sequence[Banner] | None = None) -> str:
    """The whole of summary.md for the audit ``a``; ``banners``: those of ``sections.banners.banners``
    (computed from ``a`` when not given; the report passes the ones it gives index.html too)."""
    lines: list[str] = opening(a, all_banners(a) if banners is None else banners)
    for part in (verdict_part, violations_part, closing):
        lines.extend(part(a))
    md = "\n".join(lines)
    md += "\n" + pair_loss_markdown(a.grid, a.units, a.domain_labels)
    md += "\n" + student_markdown(a.grid, a.units, a.domain_labels)
    if a.next_turn is not None and len(a.next_turn):
        md += "\n" + to_markdown(a.next_turn_by_tutor, "Next-turn independence (deterministic detectors)", NEXT_TURN_NOTE)
    md += "\n" + placebo_markdown(a.placebo_floor, a.exchangeability, a.domain_labels, a.placebo_cost)
    if len(a.variance_components):
        md += "\n" + replicates_markdown(a.variance_components, a.domain_labels)
    md += "\n" + judge_validity_section(a.scans or [], a.params, agreement_dir=agreement_dir, human_dir=human_dir)
    md += "\n" + cost_markdown(a.cost)
    if html:
        md += EVIDENCE_LINE
    return md
