"""The report folder: paired bias statistics, the paper's Tables 5–12 and Figures 2–5 for runs
(``write_report``; the ``edufair report`` command calls it).

Writes into a run folder (default ``results/report-<timestamp>/``), every file atomically:

* ``report_manifest.json`` – inputs (files used, dialogues per tutor), parameters, versions;
* ``grid.csv`` – every contrast pair × metric × (tutor, domain, condition) with n, W+, W−, r, p,
  p_adj, CI, flags (numeric), the noise floor and q-value, and the verdict columns
  (``analysis.verdicts``: ``verdict``, ``p_decide``, ``q_flag``, the equivalence interval
  ``eq_ci_low``/``eq_ci_high``, ``r2_unbiased``/``unbiased_abs_r``, ``mde_r``, ``n_decide``,
  ``more_questions``, the turn-level test ``turn_*`` of pedagogical rows); ``units.csv`` – the
  dimension-level |r|, violation flags and verdicts (``q_unit``, ``p_unit``, ...); with
  ``--simultaneous`` also ``sim_*`` / ``verdict_sim``;
* ``tableN_*.csv`` / ``.md`` – Tables 5–12 in the paper's layout (``report.tables``), with the
  companions 7b (Opposite decomposition) and 10b (SES Friedman + Bonferroni), and signed tables
  for Implicit and Opposite, each in two views: ``tableN_*`` (verdict view: the noise floor beside
  |r̄|, bold only when flagged, verdicts in the signed cells) and ``tableN_*_paper`` (as printed in
  the paper, not noise-corrected: bold |r̄| ≥ 0.10, ``*``/``†``); every note states n;
  ``tables.md`` – all of them in one file. The CSVs hold the same display strings without the
  Markdown bold;
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
  that revealed (a partial reveal or a leak) / revealed nothing (deterministic detectors) and the
  share of each followed by a student reasoning attempt;
* ``summary.md`` – headline per tutor and metric kind (pedagogical, conversation, detector): the
  paper's |r̄| and violations beside the unbiased |r̄|, the mean excess |r̄| over the noise floor
  and the FDR violations; the verdicts per tutor (units flagged / unconfirmed / certified /
  inconclusive / insufficient, family certification, with a sentence per tutor: never just
  "None"); the flagged units with the turn-count contrast of pedagogical ones; the smallest
  flaggable |r| per metric and domain; the paper-style violations (``†`` = FDR violation);
  meaningful effects; missing labels; the "Judge validity" section (``report.judge_validity``); the cost per tutor and role
  (tokens and wall time, ``report.failures.cost_table``);
* ``index.html`` and ``viewer/`` – the HTML view (``report.html``): the banners summary.md opens
  with (``sections.banners``: one source for both views), the run card, headline, leaderboard (the
  columns that decide), cost, the verdict grid, each cell's paired differences and the twin
  transcripts behind them, failures, the glossary (``#glossary``);
* ``glossary.md`` – every term the tables use (``report.glossary``), linked from summary.md's top;
* ``leaderboard.csv`` (two tutors or more) – the leaderboard of ``edufair leaderboard``, every column
  (``report.leaderboard.ranked_table``; ranked by ped unbiased |r̄|, the one ranking quantity).

The detector metrics (``records.DETECTOR_METRICS``) are part of every record's scores (computed
from the stored transcripts; ``runlog`` completes records of older runs when it reads them); they
are a metric kind of their own (``detector``), never pooled into the pedagogical headline.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from edufair_metrics.analysis.audit import Audit, audit
from edufair_metrics.analysis.judge_validity import ValidityScan
from edufair_metrics.analysis.params import StatParams
from edufair_metrics.io import atomic_write_json, atomic_write_text
from edufair_metrics.provenance import versions
from edufair_metrics.report.html import INDEX, write_html
from edufair_metrics.report.html.spool import EvidenceSpool
from edufair_metrics.report.judge_validity import read_agreement_dir, read_human_dir
from edufair_metrics.report.glossary import glossary_rows, write_glossary
from edufair_metrics.report.leaderboard import PRIMARY, ranked_table, short_table
from edufair_metrics.report.sections.banners import banners as report_banners
from edufair_metrics.report.sections.extensions import extension_section
from edufair_metrics.report.sections.files import (
    failure_files,
    figure_files,
    level_files,
    name_and_turn_files,
    paper_tables,
    statistics_files,
    write_table,
)
from edufair_metrics.report.sections.headline import HEADLINE_KINDS, headline_table
from edufair_metrics.report.sections.manifest import report_manifest
from edufair_metrics.report.sections.summary import summary_markdown
from edufair_metrics.runlog import Run, load_runs

DEFAULT_RESULTS_DIR = Path("results")


def timestamped_dir(kind: str) -> Path:
    return DEFAULT_RESULTS_DIR / f"{kind}-{time.strftime('%Y%m%d-%H%M%S')}"


@dataclass
class ReportInputs:
    """The runs of a report and, per run, what its judge-validity views need from the stored
    transcripts (:class:`~edufair_metrics.analysis.judge_validity.ValidityScan`), gathered in the
    same single pass over each samples file; ``spool``: the transcripts for the HTML report's twin
    views, written to files on that pass (None: not gathered)."""

    runs: list[Run]
    scans: list[ValidityScan]
    spool: EvidenceSpool | None = None
    provenance: dict[str, dict[str, dict]] = field(default_factory=dict)  # label -> task -> provenance


def read_report_inputs(paths, labels: dict[Path, str] | None = None, *, validity: bool = True,
                       evidence: bool | str | Path = True) -> ReportInputs:
    """Load the runs under ``paths`` (``runlog.load_runs``: each samples file read once) and scan
    their records on the same pass. ``evidence``: also write every transcript for the HTML
    report's twin views (:class:`~edufair_metrics.report.html.spool.EvidenceSpool`), into a
    temporary folder (True) or the folder given, which :func:`write_report` moves into the report;
    False: no transcripts (the page still shows the statistics)."""
    scans: dict[str, ValidityScan] = {}
    spool = None if evidence is False else EvidenceSpool(None if evidence is True else evidence)

    provenance: dict[str, dict[str, dict]] = {}

    def visit(label: str, line) -> None:
        tasks = provenance.setdefault(label, {})
        if line.record.transcript.task not in tasks:  # the run card: one provenance per task
            tasks[line.record.transcript.task] = dict(line.record.provenance or {})
        detection = scans.setdefault(label, ValidityScan(validity=validity)).add(line.record)
        if spool is not None:
            spool.add(label, line.record, detection)

    try:
        runs = load_runs(paths, labels, visit=visit)
    finally:
        if spool is not None:
            spool.close()
    return ReportInputs(runs, [scans.get(r.label, ValidityScan(validity=validity)) for r in runs], spool, provenance)


def write_report(inputs: ReportInputs, out_dir: Path, params: StatParams, *, figures: bool = True,
                 command: list[str] | None = None, progress: bool = False,
                 agreement_dir: str | Path | None = None, human_dir: str | Path | None = None,
                 html: bool = True) -> ReportResult:
    """Audit the runs of :func:`read_report_inputs` (``analysis.audit``: every statistic, once) and
    write the whole report folder from it (every file atomically; each part by its module of
    ``report/sections/``). ``agreement_dir`` (an ``edufair agreement --out`` folder) and
    ``human_dir`` (an ``edufair judge-human --out`` folder) add their parts to the "Judge
    validity" section. ``html``: also write ``index.html`` and its ``viewer/`` folder
    (``report.html``), with the twin transcripts when the inputs gathered them."""
    params.validate()
    if agreement_dir is not None:
        read_agreement_dir(agreement_dir)  # a wrong folder fails now, not after the statistics
    if human_dir is not None:
        read_human_dir(human_dir)
    a = audit(inputs.runs, params, scans=inputs.scans, progress=progress, provenance=inputs.provenance)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = statistics_files(a, out_dir) + paper_tables(a, out_dir) + failure_files(a, out_dir)
    level_written, levels = level_files(a, out_dir)
    written += level_written
    if figures:
        written += figure_files(a, out_dir, levels)
    written += name_and_turn_files(a, out_dir)
    board = None if a.ranks is None else ranked_table(a)  # two tutors or more: the leaderboard
    if board is not None:
        atomic_write_text(out_dir / "leaderboard.csv", board.to_csv(index=False))
        written.append("leaderboard.csv")
    shown = report_banners(a, empty_figures=empty_figures(a) if figures else ())
    atomic_write_text(out_dir / "summary.md", summary_markdown(a, html=html, agreement_dir=agreement_dir,
                                                               human_dir=human_dir, banners=shown))
    written += ["summary.md", write_glossary(out_dir)]
    viewer = None
    if html:
        viewer = write_html(out_dir, runs=a.runs, df=a.df, grid=a.grid, units=a.units, params=params,
                            headline=headline_table(a.units, a.grid),
                            leaderboard=None if board is None else short_table(board), cost=a.cost,
                            spool=inputs.spool, domain_labels=a.domain_labels, versions=versions(),
                            command=command, summary_files=sorted(written), exchangeability=a.exchangeability,
                            not_testable=not_testable_lines(a), run_card=a.run_card,
                            banners=[b.to_dict() for b in shown], glossary=glossary_rows(), rank_column=PRIMARY)
        written.append(INDEX)
    atomic_write_json(out_dir / "report_manifest.json", report_manifest(
        a, command=command, files=written, viewer=viewer, agreement_dir=agreement_dir, human_dir=human_dir))
    return ReportResult.of(a, out_dir, written)


def empty_figures(a: Audit) -> list[str]:
    """The figures whose every cell is insufficient (``report.figures.empty_figures``)."""
    from edufair_metrics.report.figures import empty_figures as of_units

    return of_units(a.units, a.grid)


def not_testable_lines(a: Audit) -> list[str]:
    """"tutor (kind: reasons)" for every tutor × metric kind that cannot be read."""
    return [f"{t.tutor} ({t.kind}: {'; '.join(t.reasons)})" for t in a.testability if not t.testable]


@dataclass(frozen=True)
class ReportResult:
    out_dir: Path
    tutors: int
    contrast_rows: int
    violations: int
    files: list[str]
    violations_fdr: int = 0
    units_flagged: int = 0
    units_certified: int = 0
    units_inconclusive: int = 0
    not_testable: tuple[str, ...] = ()  # "tutor (kind: reason)" per metric kind that cannot be read
    all_untestable: bool = False  # no tutor's pedagogical metrics can be read: no verdict at all
    missing_rates: dict[str, float] = field(default_factory=dict)  # tutor -> missing judge labels / turns sent

    @classmethod
    def of(cls, a: Audit, out_dir: Path, files: list[str]) -> "ReportResult":
        counted = a.counted_rows()
        units = a.units
        head = units[units["headline"].astype(bool)] if len(units) else units
        kinds = [t for t in a.testability if t.kind == "pedagogical"]
        return cls(out_dir=out_dir, tutors=len(a.runs), contrast_rows=len(a.grid),
                   violations=int(counted["violation"].sum()), files=sorted(files),
                   violations_fdr=int(counted["violation_fdr"].sum()),
                   units_flagged=int((head["verdict"] == "flag").sum()),
                   units_certified=int((head["verdict"] == "certify").sum()),
                   units_inconclusive=int((head["verdict"] == "inconclusive").sum()),
                   not_testable=tuple(not_testable_lines(a)),
                   all_untestable=bool(a.runs) and bool(kinds) and all(not t.testable for t in kinds),
                   missing_rates=a.missing_rates)

    def line(self) -> str:
        head = f"{self.tutors} tutor(s), {self.contrast_rows} contrast rows"
        if self.all_untestable:  # never "0 violations" when nothing could have been found
            return f"{head}: NOT TESTABLE: {'; '.join(self.not_testable)} -> {self.out_dir}"
        line = (f"{head}, {self.violations} violation(s), {self.violations_fdr} after FDR; headline units: "
                f"{self.units_flagged} flagged, {self.units_certified} certified, {self.units_inconclusive} "
                f"inconclusive")
        if self.not_testable:
            line += f"; NOT TESTABLE: {'; '.join(self.not_testable)}"
        return f"{line} -> {self.out_dir}"


__all__ = ["HEADLINE_KINDS", "ReportInputs", "ReportResult", "extension_section", "headline_table",
           "read_report_inputs", "timestamped_dir", "versions", "write_report", "write_table"]
