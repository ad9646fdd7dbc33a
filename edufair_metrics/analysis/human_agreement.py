"""Judge–human agreement on human-labelled tutor responses (``edufair judge-human``): one row per
EduFair metric (``agreement.csv``) and one row per response (``labels.csv``).

Per metric, a response counts only when both sides have a value: the human label exists (the
dimension is in the file, the cell is not empty / N/A / a dropped partial) and the judge label is
``ok`` and not -1 (N/A: mistake_recognize and corrective_tone when the judge finds no student
mistake). The rows say how many were left out for each reason (``human_missing``, ``judge_na``,
``judge_missing``), so a low ``n`` is never silent. A metric that no response labels is left out
of the table (a dimension missing from a file is skipped, not counted as zero).

CIs resample conversations (``HumanItem.conversation``, the responses that share one history;
``analysis.agreement``), not responses: the responses of one conversation are rated on the same
history and their judge errors are correlated.
"""

from __future__ import annotations

from typing import Any

from edufair_metrics.analysis.agreement import AGREEMENT_COLUMNS, DEFAULT_AGREEMENT_N_BOOT, agreement
from edufair_metrics.judge.human import HumanItem, judge_metric_value
from edufair_metrics.records import JUDGE_OK, PEDAGOGICAL_METRICS, TurnJudgement

HUMAN_AGREEMENT_COLUMNS = AGREEMENT_COLUMNS + ["human_missing", "judge_na", "judge_missing"]


def human_agreement_rows(items: list[HumanItem], judgements: list[TurnJudgement], *,
                         n_boot: int = DEFAULT_AGREEMENT_N_BOOT, seed: int = 0) -> list[dict[str, Any]]:
    """One dict per labelled metric with the ``HUMAN_AGREEMENT_COLUMNS``."""
    if len(items) != len(judgements):
        raise ValueError(f"{len(items)} items but {len(judgements)} judgements")
    rows = []
    for metric in PEDAGOGICAL_METRICS:
        labelled = [(it, j) for it, j in zip(items, judgements) if metric in it.human]
        if not labelled:
            continue
        human = [it.human[metric] for it, _ in labelled]
        judge = [judge_metric_value(j, metric) for _, j in labelled]
        clusters = [it.conversation or it.item_id for it, _ in labelled]
        ag = agreement(judge, human, n_boot=n_boot, seed=seed, clusters=clusters)
        row = ag.as_row(metric, "judge", "human")
        row["human_missing"] = sum(1 for h in human if h is None)
        row["judge_missing"] = sum(1 for _, j in labelled if j.status != JUDGE_OK)
        row["judge_na"] = sum(1 for (_, j), v in zip(labelled, judge) if j.status == JUDGE_OK and v is None)
        rows.append({c: row[c] for c in HUMAN_AGREEMENT_COLUMNS})
    return rows


def label_rows(items: list[HumanItem], judgements: list[TurnJudgement]) -> list[dict[str, Any]]:
    """One dict per response: item_id, tutor, judge_status, judge_kind, and for each metric that
    any item labels ``<metric>_human`` (0/1/empty), ``<metric>_human_raw`` (as written) and
    ``<metric>_judge`` (0/1/empty; empty = missing or N/A)."""
    metrics = [m for m in PEDAGOGICAL_METRICS if any(m in it.human for it in items)]
    out = []
    for it, j in zip(items, judgements):
        row: dict[str, Any] = {"item_id": it.item_id, "tutor": it.tutor, "judge_status": j.status, "judge_kind": j.kind or ""}
        for m in metrics:
            row[f"{m}_human"] = it.human.get(m)
            row[f"{m}_human_raw"] = it.human_raw.get(m, "")
            row[f"{m}_judge"] = judge_metric_value(j, m)
        out.append(row)
    return out


__all__ = ["HUMAN_AGREEMENT_COLUMNS", "human_agreement_rows", "label_rows"]
