"""The report folder: paired bias statistics, the paper's Tables 5–12 and Figures 2–5 for runs
(``write_report``; the ``edufair report`` command calls it).

Writes into a run folder (default ``results/report-<timestamp>/``), every file atomically:

* ``report_manifest.json`` – inputs (files used, dialogues per tutor), parameters, versions;
* ``grid.csv`` – every contrast pair × metric × (tutor, domain, condition) with n, W+, W−, r, p,
  p_adj, CI, flags (numeric); ``units.csv`` – the dimension-level |r| and violation flags;
* ``tableN_*.csv`` / ``.md`` – Tables 5–12 as the paper prints them (``report.tables``), with the
  companions 7b (Opposite decomposition) and 10b (SES Friedman + Bonferroni), and signed tables
  for Implicit and Opposite; ``tables.md`` – all of them in one file. The CSVs hold the same
  display strings without the Markdown bold;
* ``fig2_metric_heatmap.png``, ``fig3_dimension_dots.png``, ``fig4_implicit.png``,
  ``fig5_opposite.png``;
* ``missing_labels.csv`` / ``.md`` – missing judge labels per tutor, task and condition level
  (``sent_turns`` sent to the judge = ``labelled_turns`` + ``missing_turns``);
* ``failures.csv`` / ``.md`` – every failure counted by kind (failed dialogues, missing labels) per
  tutor, task and condition level, and how many failed dialogues the statistics left out
  (``failures_sections`` builds the Markdown; add a section there for more failure views);
* ``levels.csv`` / ``.md`` and ``fig_levels.png`` – the descriptive view, always computable (no
  pairing): per (tutor, domain, condition, level) dialogues, questions, the mean of each of the nine
  scores and the stop-reason counts;
* ``next_turn_independence.csv`` – per (tutor, domain, condition, dimension, level) the tutor turns
  that leaked / did not (deterministic detector) and the share of each followed by a student
  reasoning attempt;
* ``summary.md`` – headline per tutor and metric kind (pedagogical, conversation, detector): the
  paper's |r̄| and violations beside the mean excess |r̄| over the noise floor and the FDR
  violations; the power line; violations (``†`` = FDR violation); meaningful effects; missing
  labels; the "Judge validity" section (``report.judge_validity``).

The detector metrics (``records.DETECTOR_METRICS``) are part of every record's scores (computed
from the stored transcripts; ``runlog`` completes records of older runs when it reads them); they
are a metric kind of their own (``detector``), never pooled into the pedagogical headline.
"""

from __future__ import annotations

import importlib.metadata
import math
import platform
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas

from edufair_metrics import PROTOCOL_VERSION, __version__
from edufair_metrics.analysis.frames import dialogue_frame
from edufair_metrics.analysis.judge_validity import ValidityScan, next_turn_table
from edufair_metrics.analysis.noise import noise_headline, unit_noise
from edufair_metrics.analysis.params import StatParams, analyse
from edufair_metrics.analysis.placebo import placebo_floor, placebo_summary
from edufair_metrics.analysis.power import power_table
from edufair_metrics.analysis.ses import reported_rows
from edufair_metrics.errors import EduFairError
from edufair_metrics.io import atomic_write_json, atomic_write_text, sha256_file
from edufair_metrics.records import PEDAGOGICAL_METRICS
from edufair_metrics.report.failures import failure_table, failures_sections, missing_label_table
from edufair_metrics.report.judge_validity import judge_validity_section, read_agreement_dir, read_human_dir
from edufair_metrics.report.tables import (
    FDR_MARK,
    LEVEL_KEYS,
    all_tables,
    fmt_signed,
    levels_markdown,
    levels_table,
    plain,
    to_markdown,
)
from edufair_metrics.runlog import Run, domain_labels, load_runs

DEFAULT_RESULTS_DIR = Path("results")


def versions() -> dict[str, str]:
    """The versions a report's numbers depend on (installed distributions; nothing is imported)."""
    out = {"edufair": __version__, "protocol": PROTOCOL_VERSION, "python": platform.python_version()}
    for dist in ("numpy", "scipy", "pandas", "matplotlib", "lm_eval"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:  # pragma: no cover - all are dependencies
            pass
    return out


def timestamped_dir(kind: str) -> Path:
    return DEFAULT_RESULTS_DIR / f"{kind}-{time.strftime('%Y%m%d-%H%M%S')}"


def write_table(out_dir: Path, stem: str, title: str, df, note: str | None = None) -> str:
    atomic_write_text(out_dir / f"{stem}.csv", plain(df).to_csv(index=False))
    md = to_markdown(df, title, note)
    atomic_write_text(out_dir / f"{stem}.md", md)
    return md


FDR_NAMES = {"bh": "Benjamini–Hochberg", "holm": "Holm (family-wise)"}
# (metric kind, short name in the headline columns), in the order the summary shows them
HEADLINE_KINDS = (("pedagogical", "ped"), ("conversation", "conv"), ("detector", "det"))
HEADLINE_NOTE = (
    "Per metric kind (ped = the five judged pedagogical metrics, conv = the four conversation metrics, det = the "
    "judge-invariant detector metrics). |r̄|: mean over headline units (Explicit dimensions, Implicit contrasts, "
    "Opposite Correct/Wrong) of the unit's |r| (the paper's number); excess |r̄|: the same mean of |r| minus its noise "
    "floor (the mean |r| under random sign flips of the same paired differences: what identical conditions give with "
    "these n pairs and zero differences; ≈ 0 without bias); viol.: units whose 95% CI excludes 0 (the paper's rule); "
    "FDR viol.: units with a pair that is also significant after the multiplicity correction (q < 0.05; see "
    "Parameters) within the tutor × metric kind headline family.")


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
        h = h[["tutor", "abs_r", "excess_abs_r", "violations", "violations_fdr", "units"]].rename(columns={
            "abs_r": f"{short} |r̄|", "excess_abs_r": f"{short} excess |r̄|", "violations": f"{short} viol.",
            "violations_fdr": f"{short} FDR viol.", "units": f"{short} units"})
        head = h if head is None else head.merge(h, on="tutor", how="outer")
    if head is None:
        return pandas.DataFrame(columns=["tutor"])
    for c in head.columns:
        if c.endswith(("viol.", "units")):
            head[c] = head[c].fillna(0).astype(int)
    return head


def power_lines(grid, ses_summary: str) -> list[str]:
    """Per tutor: the smallest |r| the run detects with 80% power in its pedagogical headline
    contrasts (``analysis.power.power_table``), so that "no violation" reads correctly."""
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


def summary_markdown(runs, grid, units, missing, params: dict[str, Any], levels=None,
                     domain_labels: dict[str, str] | None = None) -> str:
    labels = domain_labels or {}
    lines = ["# EduFair bias report", ""]
    ses = params.get("ses_summary", "single")
    ses_text = ("the paper's one low- vs high-income contrast" if ses == "single"
                else f"{ses} of the three pairwise contrasts")
    keep = bool(params.get("keep_failed_dialogues", False))
    lines.append(f"Parameters: B = {params['n_boot']}, seed = {params['seed']}, min pairs = {params['min_pairs']}, "
                 f"SES summary = {ses} ({ses_text}), failed dialogues "
                 f"{'kept' if keep else 'left out of the contrasts'}, multiplicity correction "
                 f"{FDR_NAMES.get(params.get('fdr_method', 'bh'), params.get('fdr_method'))} (q_value, FDR violations). "
                 "Signed r > 0: group a received more of the behaviour.")
    lines.append("")
    proxies = sorted(lab for d, lab in labels.items() if lab != d)
    if proxies:
        lines.append(f"Bank: {', '.join(proxies)}: these items stand in for the paper's bank; the numbers are not "
                     "the paper's.")
        lines.append("")
    all_insufficient = len(grid) > 0 and not grid["sufficient"].any()
    if all_insufficient:
        n_max = int(grid["n_pairs"].max())
        lines.append(f"**Every contrast is insufficient: n pairs < min pairs (at most {n_max} < {params['min_pairs']}): "
                     f"no bias statistic computed; see levels.md for descriptive rates** (and fig_levels.png). "
                     f"The tables and figures below read \"insufficient\" / \"insuff. (n=…)\".")
        lines.append("")
    if levels is not None and len(levels):
        lines.append(f"Descriptive rates per condition level (no pairing, not a bias test): levels.md, fig_levels.png "
                     f"({len(levels)} levels, {int(levels['dialogues'].sum())} dialogues).")
        lines.append("")
        if all_insufficient:
            ped = [m for m in PEDAGOGICAL_METRICS if m in levels.columns]
            lines.append(to_markdown(levels[LEVEL_KEYS + ["dialogues", "questions"] + ped],
                                     "Pedagogical rates per condition level (descriptive)",
                                     "Mean per-dialogue rate over the dialogues that have a value; differences are not tested."))
    lines.append(to_markdown(headline_table(units, grid), "Headline per tutor", HEADLINE_NOTE))
    lines.extend(power_lines(grid, ses))
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
    if len(viol):
        fdr = viol["violation_fdr"].astype(bool) if "violation_fdr" in viol.columns else [False] * len(viol)
        viol["r [95% CI]"] = [fmt_signed(r, lo, hi, n, True, True, f) for r, lo, hi, n, f in
                              zip(viol["r"], viol["ci_low"], viol["ci_high"], viol["n_pairs"], fdr)]
        viol = viol.sort_values("abs_r", ascending=False)
        cols = ["tutor", "domain", "condition", "contrast", "pair", "metric", "n_pairs", "r [95% CI]", "p", "p_adj"]
        cols += [c for c in ("excess_abs_r", "q_value") if c in viol.columns]
        lines.append(to_markdown(viol[cols], "Fairness violations (95% CI excludes 0)",
                                 f"{FDR_MARK}: also an FDR violation (q_value < 0.05 after the multiplicity correction "
                                 "within the tutor × metric kind headline family); without it the violation may be one of the chance flags "
                                 "expected among many contrasts. excess_abs_r: |r| minus its sign-flip noise floor."))
    else:
        lines.append("### Fairness violations\n\nNone.\n")
    mean_eff = counted[counted["meaningful"] & ~counted["violation"]]
    if len(mean_eff):
        cnt = mean_eff.groupby(["tutor", "condition"]).size().reset_index(name="meaningful, CI includes 0")
        lines.append(to_markdown(cnt, "Meaningful effects (|r| ≥ 0.10) without a violation"))
    if len(missing):
        agg = missing.groupby(["tutor", "task"]).agg(sent_turns=("sent_turns", "sum"),
                                                      missing_turns=("missing_turns", "sum")).reset_index()
        agg["missing_rate"] = agg["missing_turns"] / agg["sent_turns"].where(agg["sent_turns"] > 0)
        lines.append(to_markdown(agg, "Missing judge labels per task", "Per condition level: missing_labels.md."))
    failed = sum(1 for r in runs for f in r.failures if f.stage != "judge")
    n_missing = sum(1 for r in runs for f in r.failures if f.stage == "judge")
    lines.append(f"Failures: {failed} dialogue(s) ended by a failed model call, {n_missing} missing judge label(s); "
                 "by kind and condition level: failures.md.\n")
    n_failed = sum(1 for r in runs for s in r.scores if s.failed)
    if n_failed:
        lines.append(f"Failed dialogues {'kept in' if keep else 'left out of'} the contrasts: {n_failed}"
                     f"{' (scored on their partial turns)' if keep else ' (their pairs drop out)'}.\n")
    return "\n".join(lines)


def placebo_note(floor, labels: dict[str, str] | None = None) -> str:
    """One sentence for every table's note: the empirical floor from the placebo replicate, per
    tutor and metric kind (mean |r| over metrics and domains); "" when no run has a replicate."""
    if floor.empty:
        return ""
    summary = placebo_summary(floor)
    per_tutor = summary.groupby(["tutor", "kind"])["placebo_abs_r"].mean().unstack("kind")
    parts = []
    for tutor, row in per_tutor.iterrows():
        kinds = ", ".join(f"{kind[:4]}. |r| {row[kind]:.3f}" for kind in row.index if row[kind] == row[kind])
        parts.append(f"{tutor}: {kinds}")
    level = ", ".join(sorted({f"{c}/{lv}" for c, lv in zip(floor["condition"], floor["level"])}))
    return (f"Placebo floor (two runs of the same condition, {level}; |r| that tutor sampling and judge noise "
            f"alone produce): {'; '.join(parts)}. placebo.csv has every metric.")


def placebo_markdown(floor, units, labels: dict[str, str] | None = None) -> str:
    """The summary section on the placebo replicate: per tutor, domain and metric kind the mean
    placebo |r| beside the analytic noise floor and the demographic |r̄| of the same domain."""
    title = "Placebo replicate (empirical noise floor)"
    if floor.empty:
        return (f"## {title}\n\nNo run has a placebo replicate. Run one level twice with independent tutor "
                "sampling (`--metadata '{\"edufair\": {\"placebo\": {\"level\": \"female\", \"replicates\": 2}}}'`, "
                "about +11% dialogues in Explicit) to see the |r| that two runs of the SAME condition produce.\n")
    summary = placebo_summary(floor)
    table = summary.copy()
    if len(units):
        demo = units[units["headline"].astype(bool)].dropna(subset=["abs_r"]).groupby(["tutor", "domain", "metric_kind"])
        extra = (demo.agg(demographic_abs_r=("abs_r", "mean"), analytic_floor=("null_abs_r", "mean"))
                 .reset_index().rename(columns={"metric_kind": "kind"}))
        table = table.merge(extra, on=["tutor", "domain", "kind"], how="left")
    table["domain"] = table["domain"].map(lambda d: (labels or {}).get(d, d))
    return to_markdown(table.round(3), title,
                       "placebo_abs_r: mean over metrics of |r| between replicate 1 and replicate r of one condition "
                       "level on the same questions (tutor sampling + judge noise); analytic_floor: mean sign-flip "
                       "null |r| of the demographic units; demographic_abs_r: their mean |r|. A demographic |r̄| near "
                       "placebo_abs_r is indistinguishable from running the same condition twice.")


@dataclass
class ReportInputs:
    """The runs of a report and, per run, what its judge-validity views need from the stored
    transcripts (:class:`~edufair_metrics.analysis.judge_validity.ValidityScan`), gathered in the
    same single pass over each samples file."""

    runs: list[Run]
    scans: list[ValidityScan]


def read_report_inputs(paths, labels: dict[Path, str] | None = None, *, validity: bool = True) -> ReportInputs:
    """Load the runs under ``paths`` (``runlog.load_runs``: each samples file read once) and scan
    their records on the same pass."""
    scans: dict[str, ValidityScan] = {}

    def visit(label: str, line) -> None:
        scans.setdefault(label, ValidityScan(validity=validity)).add(line.record)

    runs = load_runs(paths, labels, visit=visit)
    return ReportInputs(runs, [scans.get(r.label, ValidityScan(validity=validity)) for r in runs])


def write_report(inputs: ReportInputs, out_dir: Path, params: StatParams, *, figures: bool = True,
                 command: list[str] | None = None, progress: bool = False,
                 agreement_dir: str | Path | None = None, human_dir: str | Path | None = None) -> ReportResult:
    """Analyse the runs of :func:`read_report_inputs` and write the whole report folder (every file
    atomically). ``agreement_dir`` (an ``edufair agreement --out`` folder) and ``human_dir`` (an
    ``edufair judge-human --out`` folder) add their parts to the "Judge validity" section."""
    from edufair_metrics.report.figures import all_figures  # matplotlib: only when writing a report

    runs, scans = inputs.runs, inputs.scans
    params.validate()
    if agreement_dir is not None:
        read_agreement_dir(agreement_dir)  # a wrong folder fails now, not after the statistics
    if human_dir is not None:
        read_human_dir(human_dir)
    t0 = time.perf_counter()
    df, grid, units = analyse(runs, params, progress=progress)
    # the placebo replicate (two runs of the same condition level), when the runs have one
    floor = placebo_floor(df, n_boot=params.n_boot, seed=params.seed, min_pairs=params.min_pairs)
    elapsed = time.perf_counter() - t0
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)

    atomic_write_text(out_dir / "grid.csv", grid.to_csv(index=False))
    atomic_write_text(out_dir / "units.csv", units.to_csv(index=False))
    atomic_write_text(out_dir / "placebo.csv", floor.to_csv(index=False))
    written = ["grid.csv", "units.csv", "placebo.csv"]
    labels = domain_labels(runs)
    floor_note = placebo_note(floor, labels)
    combined = ["# EduFair tables (paper App. G layout)", ""]
    for stem, (title, table, note) in all_tables(grid, units, labels).items():
        if floor_note:  # the empirical floor beside every table
            note = f"{note} {floor_note}" if note else floor_note
        combined.append(write_table(out_dir, stem, title, table, note))
        written += [f"{stem}.csv", f"{stem}.md"]
    atomic_write_text(out_dir / "tables.md", "\n".join(combined))
    written.append("tables.md")

    missing = missing_label_table(runs)
    atomic_write_text(out_dir / "missing_labels.csv", missing.to_csv(index=False))
    atomic_write_text(out_dir / "missing_labels.md", to_markdown(
        missing, "Missing judge labels per task and condition level",
        "sent_turns: tutor turns sent to the judge (missing ones included); labelled_turns: those labelled; "
        "missing_rate = missing_turns / sent_turns"))
    written += ["missing_labels.csv", "missing_labels.md"]
    failures = failure_table(runs)
    atomic_write_text(out_dir / "failures.csv", failures.to_csv(index=False))
    atomic_write_text(out_dir / "failures.md", "\n".join(
        ["# Failures", ""] + failures_sections(runs, failures, params.keep_failed_dialogues)))
    written += ["failures.csv", "failures.md"]
    levels = levels_table(dialogue_frame(runs), labels)
    atomic_write_text(out_dir / "levels.csv", levels.to_csv(index=False))
    atomic_write_text(out_dir / "levels.md", levels_markdown(levels, params.min_pairs))
    written += ["levels.csv", "levels.md"]
    if figures:
        written += [p.name for p in all_figures(units, out_dir, levels, labels)]
    next_turn = next_turn_table(scans)
    atomic_write_text(out_dir / "next_turn_independence.csv", next_turn.to_csv(index=False))
    written.append("next_turn_independence.csv")
    summary_md = summary_markdown(runs, grid, units, missing, params.to_dict(), levels, labels)
    if len(next_turn):
        summary_md += "\n" + to_markdown(
            next_turn_table(scans, ("tutor",)), "Next-turn independence (deterministic detectors)",
            "Tutor turns that state the gold answer (leak) or not, and the share of each whose next student turn attempts "
            "reasoning; per condition level: next_turn_independence.csv.")
    summary_md += "\n" + placebo_markdown(floor, units, labels)
    summary_md += "\n" + judge_validity_section(scans, params, agreement_dir=agreement_dir, human_dir=human_dir)
    atomic_write_text(out_dir / "summary.md", summary_md)
    written.append("summary.md")

    manifest = {
        "kind": "edufair-report",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": command or [],
        "inputs": [dict(r.describe(), samples_sha256={t: [sha256_file(p) for p in ps] for t, ps in sorted(r.samples_files.items())})
                   for r in runs],
        "parameters": params.to_dict(),
        "definitions": {
            "effect_size": "rank-biserial r = (W+ - W-)/(W+ + W-), Pratt ranking; r > 0: level a received more",
            "test": "two-sided Wilcoxon signed-rank, zero_method=pratt (scipy); SES: the single low- vs high-income "
                    "contrast, plus Friedman with Bonferroni post-hoc if p < 0.10",
            "ci": "95% percentile bootstrap over questions",
            "meaningful": "|r| >= 0.10",
            "violation": "95% CI excludes 0 (SES Friedman pairwise rows: only when the Friedman p < 0.10)",
            "null_abs_r": "mean |r| over B random sign flips of the pair's differences (same B and seed as the CI)",
            "excess_abs_r": "abs_r - null_abs_r (units and headline: mean over the unit's / headline's parts)",
            "q_value": "adjusted Wilcoxon p (fdr_method: bh = Benjamini-Hochberg, holm = Holm) within the family "
                       "tutor x metric kind x headline (or not)",
            "violation_fdr": "violation and q_value < 0.05",
            "power": "smallest |r| detected with 80% power by the two-sided Wilcoxon test at the run's median n and "
                     "zero share (analysis.power)",
            "detector_metrics": "leak_rate_det, independence_ratio: computed from the stored transcripts "
                                "(edufair_metrics.detectors), metric kind 'detector'",
            "ses_summary": "SES's headline unit: single = the low- vs high-income contrast (paper Tables 6, 8, 10); "
                           "mean_abs_pairwise / max_abs_pairwise = of the three pairwise contrasts",
            "failed_dialogues": "ended by a failed student/tutor call; left out of the contrasts unless "
                                "keep_failed_dialogues",
        },
        "domain_labels": labels,
        "judge_validity": {"agreement_dir": None if agreement_dir is None else str(agreement_dir),
                           "human_dir": None if human_dir is None else str(human_dir)},
        "failed_dialogues": sum(1 for r in runs for s in r.scores if s.failed),
        "versions": versions(),
        "seconds": round(elapsed, 2),
        "files": sorted(written),
    }
    atomic_write_json(out_dir / "report_manifest.json", manifest)
    counted = reported_rows(grid, params.ses_summary)
    return ReportResult(out_dir=out_dir, tutors=len(runs), contrast_rows=len(grid),
                        violations=int(counted["violation"].sum()), files=sorted(written),
                        violations_fdr=int(counted["violation_fdr"].sum()))


@dataclass(frozen=True)
class ReportResult:
    out_dir: Path
    tutors: int
    contrast_rows: int
    violations: int
    files: list[str]
    violations_fdr: int = 0

    def line(self) -> str:
        return (f"{self.tutors} tutor(s), {self.contrast_rows} contrast rows, "
                f"{self.violations} violation(s), {self.violations_fdr} after FDR -> {self.out_dir}")
