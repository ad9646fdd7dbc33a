"""The ``edufair detector-human`` output folder: the reveal detectors against human reveal labels
(computed by :mod:`edufair_metrics.analysis.detector_human`). Every file is written atomically:

* ``detector_agreement.csv`` – per detector (leak, stop_matcher, partial, reveal) and subset (all;
  the gold had not / had appeared earlier in the conversation): n, TP / FP / FN / TN, precision and
  recall with 95% bootstrap CIs over conversations;
* ``detector_labels.csv`` – per scored response: the human label (as written and as 0/1), whether
  the gold had appeared, each detector's 0/1 and the partial reveal's rule and value;
* ``detector_summary.json`` – source file, policies, counts (read, skipped by reason), bootstrap;
* ``detector_agreement.md`` – the agreement table as Markdown.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from edufair_metrics.analysis.detector_human import DETECTOR_HUMAN_COLUMNS, DetectorHumanResult
from edufair_metrics.io import atomic_write_json, atomic_write_text
from edufair_metrics.report.tables import estimate_column, to_markdown


def detector_agreement_markdown(summary: list[dict[str, Any]], counts: dict[str, int]) -> str:
    t = pd.DataFrame(summary, columns=DETECTOR_HUMAN_COLUMNS)
    table = pd.DataFrame({
        "detector": t["detector"], "subset": t["subset"], "n": t["n"], "conv.": t["conversations"],
        "human +": t["human_positive"], "detector +": t["predicted"], "TP": t["tp"], "FP": t["fp"], "FN": t["fn"],
        "precision": estimate_column(t, "precision"),
        "recall": estimate_column(t, "recall"),
    })
    note = (f"{counts.get('scored', 0)} of {counts.get('responses', 0)} responses scored ({counts.get('no_gold', 0)} without "
            f"a derivable gold, {counts.get('no_label', 0)} without a Revealing_of_the_Answer label, "
            f"{counts.get('dropped', 0)} dropped by the label policies). leak = leaks_answer with the conversation as "
            "history (a gold the student stated is a confirmation); stop_matcher = the stop rule's matcher without "
            "history; partial = partially_reveals; reveal = leak or partial. 95% bootstrap CIs resample conversations.")
    return to_markdown(table, "Reveal detectors vs human reveal labels", note)


def write_detector_human(out_dir: str | Path, result: DetectorHumanResult, *, source: dict[str, Any],
                         n_boot: int, seed: int) -> list[str]:
    """The folder's files (see the module docstring); returns their names."""
    out_dir = Path(out_dir)
    atomic_write_text(out_dir / "detector_agreement.csv",
                      pd.DataFrame(result.summary, columns=DETECTOR_HUMAN_COLUMNS).to_csv(index=False))
    atomic_write_text(out_dir / "detector_labels.csv", pd.DataFrame(result.rows).to_csv(index=False))
    atomic_write_text(out_dir / "detector_agreement.md", detector_agreement_markdown(result.summary, result.counts))
    atomic_write_json(out_dir / "detector_summary.json", {
        "source": source, "counts": result.counts,
        "bootstrap": {"n_boot": n_boot, "seed": seed, "ci": "95% percentile over conversations"},
    })
    return ["detector_agreement.csv", "detector_labels.csv", "detector_agreement.md", "detector_summary.json"]
