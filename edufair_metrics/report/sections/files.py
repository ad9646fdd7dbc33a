"""The report's data files, each a view of the :class:`~edufair_metrics.analysis.audit.Audit`:
``grid.csv``, ``units.csv``, ``placebo.csv``, ``exchangeability.csv``, ``variance_components.csv``
(replicates or a placebo), the paper tables (``tableN_*`` and ``tables.md``), ``missing_labels``,
``failures``, ``levels``, ``names.csv`` (many names per group), ``next_turn_independence.csv``, and
the figures. Each function writes its files atomically and returns their names."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from edufair_metrics.io import atomic_write_text
from edufair_metrics.report.failures import failures_sections
from edufair_metrics.report.placebo import placebo_note
from edufair_metrics.report.tables import LEVEL_KEYS, all_tables, label_levels, levels_markdown, plain, to_markdown

if TYPE_CHECKING:
    from edufair_metrics.analysis.audit import Audit

MISSING_LABELS_NOTE = ("sent_turns: tutor turns sent to the judge (missing ones included); labelled_turns: those labelled; "
                       "missing_rate = missing_turns / sent_turns")
LOST_PAIRS_NOTE = ("Whether the lost pairs differ between the two levels of a contrast (exact McNemar per cause: failed "
                   "dialogue, missing judge label, no value): summary.md, \"Lost pairs\"; per row grid.csv (pairs_all, "
                   "pairs_kept, lost_a_*, lost_b_*, loss_p, differential_loss).")


def write_table(out_dir: Path, stem: str, title: str, df, note: str | None = None) -> str:
    atomic_write_text(out_dir / f"{stem}.csv", plain(df).to_csv(index=False))
    md = to_markdown(df, title, note)
    atomic_write_text(out_dir / f"{stem}.md", md)
    return md


def _csv(out_dir: Path, name: str, frame) -> list[str]:
    atomic_write_text(out_dir / name, frame.to_csv(index=False))
    return [name]


def statistics_files(a: "Audit", out_dir: Path) -> list[str]:
    """grid.csv, units.csv, the placebo's two files and, where measured, the variance components."""
    written = _csv(out_dir, "grid.csv", a.grid) + _csv(out_dir, "units.csv", a.units)
    written += _csv(out_dir, "placebo.csv", a.placebo_floor) + _csv(out_dir, "exchangeability.csv", a.exchangeability)
    if len(a.variance_components):
        written += _csv(out_dir, "variance_components.csv", a.variance_components)
    return written


def paper_tables(a: "Audit", out_dir: Path) -> list[str]:
    """Every paper-style table in both views, with the empirical floor beside each, and tables.md."""
    floor_note = placebo_note(a.exchangeability)
    combined, written = ["# EduFair tables (paper App. G layout)", ""], []
    for stem, (title, table, note) in all_tables(a.grid, a.units, a.domain_labels).items():
        if floor_note:  # the empirical floor beside every table
            note = f"{note} {floor_note}" if note else floor_note
        combined.append(write_table(out_dir, stem, title, table, note))
        written += [f"{stem}.csv", f"{stem}.md"]
    atomic_write_text(out_dir / "tables.md", "\n".join(combined))
    return written + ["tables.md"]


def failure_files(a: "Audit", out_dir: Path) -> list[str]:
    """missing_labels.csv/.md and failures.csv/.md."""
    written = _csv(out_dir, "missing_labels.csv", a.missing)
    atomic_write_text(out_dir / "missing_labels.md", to_markdown(
        a.missing, "Missing judge labels per task and condition level", MISSING_LABELS_NOTE))
    written += ["missing_labels.md"] + _csv(out_dir, "failures.csv", a.failures)
    atomic_write_text(out_dir / "failures.md", "\n".join(
        ["# Failures", ""] + failures_sections(a.runs, a.failures, a.params.keep_failed_dialogues)
        + [LOST_PAIRS_NOTE, ""]))
    return written + ["failures.md"]


def level_files(a: "Audit", out_dir: Path):
    """levels.csv/.md (descriptive rates, with the pairs each level loses); returns (files, the
    labelled levels table the figures draw)."""
    labels = a.domain_labels
    levels = label_levels(a.levels, labels)
    loss = a.level_loss.assign(domain=a.level_loss["domain"].map(lambda d: labels.get(d, d)))
    levels_out = levels.merge(loss.drop(columns=["dialogues"]).rename(columns={"failed": "failed_share"}),
                              on=LEVEL_KEYS, how="left")
    written = _csv(out_dir, "levels.csv", levels_out)
    atomic_write_text(out_dir / "levels.md", levels_markdown(levels, a.params.min_pairs, loss=loss))
    return written + ["levels.md"], levels


def figure_files(a: "Audit", out_dir: Path, levels) -> list[str]:
    """The figures (matplotlib, imported only here)."""
    from edufair_metrics.report.figures import all_figures, fig_implicit_names

    written = [p.name for p in all_figures(a.units, out_dir, levels, a.domain_labels)]
    if len(a.names):
        path = fig_implicit_names(a.names, out_dir / "fig_implicit_names.png", a.domain_labels)
        written += [path.name] if path is not None else []
    return written


def name_and_turn_files(a: "Audit", out_dir: Path) -> list[str]:
    """names.csv (many names per group: every name's own r) and next_turn_independence.csv."""
    written = _csv(out_dir, "names.csv", a.names) if len(a.names) else []
    if a.next_turn is not None:
        written += _csv(out_dir, "next_turn_independence.csv", a.next_turn)
    return written
