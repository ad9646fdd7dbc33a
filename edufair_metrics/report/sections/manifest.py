"""``report_manifest.json``: the report's inputs (files used and their sha256, dialogues per tutor),
parameters, the definitions of every statistic it shows, testability, versions and the files written."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edufair_metrics.io import sha256_file
from edufair_metrics.provenance import versions
from edufair_metrics.report.html import VIEWER_DIR

if TYPE_CHECKING:
    from edufair_metrics.analysis.audit import Audit

DEFINITIONS: dict[str, str] = {
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
    "verdict": "flag (FDR-controlled evidence: q_flag < 0.05, the unit's Bonferroni p over its pairs adjusted "
               "over the units of the family; below 50 pairs the exact sign-flip p), unconfirmed (flagged, "
               "pedagogical, not confirmed by the turn-level test), certify (90% interval of r inside "
               "+-equivalence_margin, TOST at 0.05), inconclusive, insufficient (analysis/verdicts.py)",
    "unit_violation": "a unit of k pairs violates when one pair's (1 - 0.05/k) percentile CI excludes 0; a "
                      "Friedman post-hoc pair when its Bonferroni p < 0.05 after Friedman p < 0.10",
    "unbiased_abs_r": "signed root of the mean of (r^2 - null_var_r) / (1 - null_var_r), null_var_r the exact "
                      "sign-flip variance of r",
    "mde_r": "smallest |r| flagged with 80% power when it is the only effect of its family",
    "turn_test": "pedagogical rows: Mantel-Haenszel over the judged turns, stratified by question, p from a "
                 "within-question permutation of the level labels (analysis/turns.py)",
    "power": "smallest |r| detected with 80% power by the two-sided Wilcoxon test at the run's median n and "
             "zero share (analysis.power)",
    "detector_metrics": "stopped_on_revealed_gold, partial_reveal_rate, independence_ratio: computed from the "
                        "stored transcripts (edufair_metrics.detectors), metric kind 'detector'",
    "student_metrics": "student_words, student_reasoning_rate, student_asks_answer_rate, "
                       "student_wrong_answer_rate, student_correct_answer_rate, student_refusal_rate: the "
                       "student-side monitor (edufair_metrics.detectors.student), metric kind 'student'",
    "ses_summary": "SES's headline unit: single = the low- vs high-income contrast (paper Tables 6, 8, 10); "
                   "mean_abs_pairwise / max_abs_pairwise = of the three pairwise contrasts",
    "failed_dialogues": "ended by a failed student/tutor call; left out of the contrasts unless "
                        "keep_failed_dialogues",
    "pair_accounting": "pairs_all: questions with a dialogue on both sides; pairs_kept: with a value on both "
                       "(= n_pairs); lost_a/b_<cause> per cause failed / missing_label / no_value; loss_p_<cause>: "
                       "exact McNemar (binomial test of the discordant questions); loss_p: Bonferroni over the "
                       "causes that occur (x the family's pairs for a Friedman pair); differential_loss: "
                       "loss_p < 0.05 (analysis/pairloss.py)",
    "student_drift": "a tutor-side row/unit whose tutor x domain x condition x contrast has a flagged student "
                     "unit; drift_by_design: the student's own prompt differs between the sides "
                     "(analysis/drift.py)",
    "caveats": "beside the verdict: differential loss of a flagged/unconfirmed verdict, student drift "
               "(analysis/threats.py); verdicts are never changed by them",
    "exchangeability": "placebo replicate: joint sign flips per question; fails when p_exch < 0.05 / tutors "
                       "with a replicate; a failed check puts a banner on summary.md (analysis/placebo.py)",
}


def report_manifest(a: "Audit", *, command: list[str] | None, files: list[str], viewer: dict[str, Any] | None,
                    agreement_dir: str | Path | None, human_dir: str | Path | None) -> dict[str, Any]:
    """The manifest of a report of the audit ``a`` (``files``: those written; ``viewer``: what
    ``report.html.write_html`` wrote, None without the HTML view)."""
    runs, params, testability = a.runs, a.params, a.testability
    return {
        "kind": "edufair-report",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": command or [],
        "inputs": [dict(r.describe(), samples_sha256={t: [sha256_file(p) for p in ps] for t, ps in sorted(r.samples_files.items())})
                   for r in runs],
        "parameters": params.to_dict(),
        "definitions": DEFINITIONS,
        "domain_labels": a.domain_labels,
        "testability": [{"tutor": t.tutor, "kind": t.kind, "testable": t.testable, "reasons": list(t.reasons),
                         "missing_label_rate": None if t.missing_rate != t.missing_rate else t.missing_rate}
                        for t in testability],
        "judge_validity": {"agreement_dir": None if agreement_dir is None else str(agreement_dir),
                           "human_dir": None if human_dir is None else str(human_dir)},
        "failed_dialogues": sum(1 for r in runs for s in r.scores if s.failed),
        "exchangeability": a.exchangeability.to_dict("records"),
        "versions": versions(),
        "seconds": round(a.seconds, 2),
        "files": sorted(files),
        "viewer": None if viewer is None else {
            "folder": VIEWER_DIR, "files": len(viewer["files"]) - 1, "bytes": viewer["bytes"],
            "transcripts": viewer["transcripts"], "seconds": viewer["seconds"]},
    }

