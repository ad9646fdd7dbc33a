"""The summary.md sections on the threats the noise floor cannot see (``analysis.threats``): lost
pairs (:func:`pair_loss_markdown`) and the student-side monitor with student drift
(:func:`student_markdown`). Pure functions of the grid and units; each returns one section."""

from __future__ import annotations

from typing import Mapping

import pandas as pd

from edufair_metrics.analysis.drift import TUTOR_KINDS, student_cued
from edufair_metrics.analysis.pairloss import CAUSES, LOSS_ALPHA
from edufair_metrics.analysis.threats import FLAGGED
from edufair_metrics.analysis.verdicts import VERDICTS
from edufair_metrics.report.tables import fmt_signed, to_markdown

__all__ = ["PAIR_LOSS_NOTE", "STUDENT_CONCLUSION", "pair_loss_markdown", "student_markdown"]

PAIR_LOSS_NOTE = (
    "pairs kept / all: questions with a value on both sides / questions with a dialogue on both sides (summed over "
    "the kind's contrast rows). A pair is lost when a side's dialogue failed (left out of the contrasts), has no value "
    "with a missing judge label (missing_label), or has no value otherwise (no_value: no applicable judged turn, e.g. "
    "mistake_recognize when the student made no mistake, or a metric undefined for the transcript). Per row and cause, "
    "an exact McNemar test (the two-sided binomial test of the discordant questions, p = 1/2) asks whether one level "
    f"loses more; the row has differential loss when min(1, k · min p) < {LOSS_ALPHA:g}, k = the causes that occur "
    "in the row (Bonferroni), times the family's pairs for an SES Friedman pair (as its post-hoc p). Opposite's "
    "averaged sides (its 2×2 effects) are lost when any of their levels is, by the most severe cause; a Friedman pair "
    "counts the questions with every level of the family (the candidate complete blocks) and tests its own two "
    "levels. No correction across rows: the note is read beside a flag already selected. grid.csv / units.csv: "
    "pairs_all, pairs_kept, lost_a_<cause>, lost_b_<cause>, loss_p_<cause>, loss_p, differential_loss, loss_cause; "
    "levels.md: the NaN share per level.")

STUDENT_CONCLUSION = (
    "What to conclude: within a pair only the tutor's reaction to the cue should differ. In Explicit and Implicit only "
    "the tutor's prompt carries the cue, so a student that behaves differently was moved by the tutor (a mediator the "
    "tutor induced: e.g. fewer student mistakes leave fewer applicable turns for mistake_recognize and "
    "corrective_tone) or by the cue leaking into the dialogue (the tutor using the name or the group): the tutor's "
    "verdicts in that contrast are real differences of the dialogues, but not \"same student, different tutoring\"; "
    "read the twin transcripts before attributing them to the tutor's pedagogy alone. In Opposite's Correct, Wrong "
    "and student effect the student is told its gender, so a student difference there is part of the design (marked "
    "\"part of the design\"). Student metrics never count toward the tutor's headline, leaderboard or CI gate.")


def _labelled(frame, labels: Mapping[str, str] | None):
    return frame.assign(domain=frame["domain"].map(lambda d: (labels or {}).get(d, d)))


def pair_loss_markdown(grid, units, labels: Mapping[str, str] | None = None) -> str:
    """"Lost pairs": per tutor and metric kind the pairs kept of all pairs and the rows with
    differential loss by cause; the flagged (or unconfirmed) units that coincide with it."""
    title = "## Lost pairs (pair accounting)"
    if "pairs_all" not in grid.columns or not len(grid):
        return f"{title}\n\nNo pair accounting (no contrast row).\n"
    rows = []
    for (tutor, kind), sub in grid.groupby(["tutor", "metric_kind"], sort=True):
        n_all, n_kept = int(sub["pairs_all"].fillna(0).sum()), int(sub["pairs_kept"].fillna(0).sum())
        diff = sub["differential_loss"].astype(bool)
        row = {"tutor": tutor, "kind": kind, "rows": len(sub),
               "pairs kept / all": f"{n_kept} / {n_all} ({n_kept / n_all:.1%})" if n_all else "0 / 0",
               "rows with differential loss": int(diff.sum())}
        for c in CAUSES:
            row[f"lost: {c}"] = int(sub[f"lost_a_{c}"].fillna(0).sum() + sub[f"lost_b_{c}"].fillna(0).sum())
        row["flagged with differential loss"] = int((diff & sub["verdict"].isin(FLAGGED)).sum())
        rows.append(row)
    lines = [title, "", to_markdown(pd.DataFrame(rows), None, PAIR_LOSS_NOTE)]
    hit = units[units["differential_loss"].astype(bool) & units["verdict"].isin(FLAGGED)] if len(units) else units
    if len(hit):
        t = _labelled(hit, labels)[["tutor", "domain", "condition", "contrast", "metric", "verdict", "loss_cause",
                                    "pairs_kept", "pairs_all"]]
        lines.append(to_markdown(t.reset_index(drop=True), "Flagged verdicts that coincide with differential loss",
                                 "The remaining pairs are a selected set: the difference may be the selection's "
                                 "(e.g. the judge fails more on one group's dialogues, or a student that errs less "
                                 "under one level leaves fewer applicable turns), not the tutor's."))
    else:
        lines.append("No flagged or unconfirmed verdict coincides with differential loss.\n")
    return "\n".join(lines)


def student_markdown(grid, units, labels: Mapping[str, str] | None = None) -> str:
    """The student-side monitor: its units by verdict per tutor, the flagged student units, and the
    tutor-side verdicts marked as student drift, with what a reader should conclude."""
    title = "## Student-side monitor (student drift)"
    s = units[units["metric_kind"] == "student"] if len(units) else units
    if not len(s):
        return (f"{title}\n\nNo student metric: the runs' records store no transcripts (the monitor reads the student's "
                "turns).\n")
    counts = []
    for tutor, sub in s.groupby("tutor", sort=True):
        c = sub["verdict"].value_counts()
        counts.append({"tutor": tutor, "units": len(sub), **{v: int(c.get(v, 0)) for v in VERDICTS}})
    lines = [title, "", to_markdown(pd.DataFrame(counts), "Student units by verdict",
                                    "Every student unit (headline contrasts and Opposite's 2×2 decomposition), its own "
                                    "FDR family per tutor × headline (analysis/verdicts.py); table_student.md has "
                                    "every signed r.")]
    flagged = s[s["verdict"] == "flag"]
    if len(flagged):
        g = grid[(grid["metric_kind"] == "student") & (grid["verdict"] == "flag")].sort_values("q_flag")
        keys = ["tutor", "domain", "condition", "contrast", "metric"]
        best = g.drop_duplicates(keys).set_index(keys)
        b = best.reindex(pd.MultiIndex.from_frame(flagged[keys]))
        t = _labelled(flagged, labels)[keys].copy()
        t["pair"] = b["pair"].to_numpy()
        t["r [95% CI]"] = [fmt_signed(r, lo, hi, n, True) if r == r else "—"
                           for r, lo, hi, n in zip(b["r"], b["ci_low"], b["ci_high"], b["n_pairs"])]
        t["q"] = flagged["q_unit"].to_numpy()
        t["part of the design"] = ["yes" if by else "no" for by in _by_design(flagged)]
        lines.append(to_markdown(t.reset_index(drop=True), "Flagged student units",
                                 "r > 0: the student of level a did more. part of the design: the student's own prompt "
                                 "differs between the two sides (Opposite's Correct, Wrong, student effect)."))
    else:
        lines.append("No student unit is flagged: no sign that the student behaved differently between the levels "
                     "(within the run's power; see the verdicts above).\n")
    tutor_side = units[units["metric_kind"].isin(TUTOR_KINDS)] if len(units) else units
    drift = tutor_side[tutor_side["student_drift"].astype(bool)] if "student_drift" in tutor_side.columns else tutor_side.iloc[0:0]
    hot = drift[drift["verdict"].isin(FLAGGED)]
    lines.append(f"Tutor-side verdicts marked \"student drift\" (a flagged student unit in the same tutor × domain × "
                 f"condition × contrast): {len(drift)} of {len(tutor_side)} units, {len(hot)} of them flagged or "
                 "unconfirmed (the caveats column of grid.csv / units.csv; § in the tables).")
    lines.append("")
    if len(hot):
        t = _labelled(hot, labels)[["tutor", "domain", "condition", "contrast", "metric", "metric_kind", "verdict",
                                    "drift_metrics", "drift_by_design"]]
        t = t.rename(columns={"drift_metrics": "student metrics flagged", "drift_by_design": "part of the design"})
        t["part of the design"] = t["part of the design"].map({True: "yes", False: "no"})
        lines.append(to_markdown(t.reset_index(drop=True), "Flagged tutor-side verdicts with student drift"))
    lines.append(STUDENT_CONCLUSION)
    lines.append("")
    return "\n".join(lines)


def _by_design(frame) -> list[bool]:
    return [student_cued(str(c), str(k)) for c, k in zip(frame["condition"], frame["contrast"])]
