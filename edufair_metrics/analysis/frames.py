"""Per-dialogue scores as pandas frames, the input of the statistics. Accept runs (anything with
``.scores``, a list of DialogueScores) or DialogueScores."""

from __future__ import annotations

from typing import Any, Iterable

from edufair_metrics.records import ALL_METRICS, PEDAGOGICAL_METRICS, DialogueScores


COUNT_COLUMNS = ("n_applicable", "n_positive")
# per-position bit masks of the same turns (DialogueScores.turn_masks): the turn test's positions
MASK_COLUMNS = ("turn_app_mask", "turn_pos_mask")


def scores_frame(runs_or_scores: Iterable[Any], *, keep_failed: bool = False, replicates: str = "mean"):
    """Long DataFrame with columns tutor, task, domain, condition, dimension, level, question_id,
    metric, value, n_applicable, n_positive (one row per dialogue and metric, NaN = no value): the
    input of the paired statistics. ``n_applicable`` / ``n_positive`` (pedagogical metrics only,
    NaN elsewhere and where the record has no turn counts): the judged turns the rate averages and
    those labelled 1 (``DialogueScores.turn_counts``; ``value = n_positive / n_applicable``), for
    the turn-level test (``analysis.turns``). A dialogue ended by a failed call
    (``DialogueScores.failed``) is left out unless ``keep_failed``: its partial turns would create
    artefactual differences (fewer tutor turns, other word ratios), so the question's pairs with
    that level drop out of the contrasts.

    Replicate dialogues (``edufair.replicates``: k dialogues per question and level):
    ``replicates="mean"`` (the default, what every paired statistic reads) averages each question's
    replicates within each level (``analysis.replicates.average_replicates``: the question stays
    the unit of inference); ``"keep"`` keeps one row per dialogue with a ``dialogue_replicate``
    column (the variance components). A k = 1 run is the same frame either way, without the column."""
    import numpy as np
    import pandas as pd

    scores: list[DialogueScores] = []
    for x in runs_or_scores:
        scores.extend([x] if isinstance(x, DialogueScores) else x.scores)
    if not keep_failed:
        scores = [s for s in scores if not s.failed]
    meta_cols = ["tutor", "task", "domain", "condition", "dimension", "level", "question_id"]
    if not scores:
        return pd.DataFrame(columns=meta_cols + ["metric", "value", *COUNT_COLUMNS])
    meta = pd.DataFrame([{c: getattr(s, c) for c in meta_cols} for s in scores])
    vals = pd.DataFrame([s.scores for s in scores], dtype=float)
    cols = [m for m in ALL_METRICS if m in vals.columns] + [m for m in vals.columns if m not in ALL_METRICS]
    wide = pd.concat([meta, vals[cols]], axis=1)
    long = wide.melt(id_vars=meta_cols, var_name="metric", value_name="value")
    long["question_id"] = long["question_id"].astype(str)
    # melt stacks the metric columns one after the other: the counts in the same order
    for j, name in enumerate(COUNT_COLUMNS):
        counts = np.full((len(scores), len(cols)), np.nan)
        for k, m in enumerate(cols):
            if m in PEDAGOGICAL_METRICS:
                counts[:, k] = [s.turn_counts[m][j] if m in s.turn_counts else np.nan for s in scores]
        long[name] = counts.ravel(order="F")
    if any(s.turn_masks for s in scores):
        for j, name in enumerate(MASK_COLUMNS):
            masks = np.full((len(scores), len(cols)), np.nan)
            for k, m in enumerate(cols):
                if m in PEDAGOGICAL_METRICS:
                    masks[:, k] = [float(s.turn_masks[m][j]) if m in s.turn_masks else np.nan for s in scores]
            long[name] = masks.ravel(order="F")
    # replicate runs: averaged within level; the per-position masks of the replicates stacked side by
    # side (analysis.replicates.stack_replicate_masks), so the turn test keeps question × position strata
    if any(s.replicate != 1 for s in scores):
        from edufair_metrics.analysis.replicates import REPLICATE_COLUMN, average_replicates

        if replicates not in ("mean", "keep"):
            raise ValueError(f"replicates must be 'mean' or 'keep', got {replicates!r}")
        long[REPLICATE_COLUMN] = np.tile(np.asarray([s.replicate for s in scores], dtype=np.int64), len(cols))
        if replicates == "mean":
            long = average_replicates(long)
    return long


def dialogue_frame(runs_or_scores: Iterable[Any]):
    """Wide DataFrame, one row per dialogue: tutor, task, domain, condition, dimension, level,
    question_id, stop_reason (None when unknown, e.g. bare DialogueScores), failed (ended by a
    failed call) and the nine scores (NaN = no value). Failed dialogues are kept: this is the
    descriptive view."""
    import pandas as pd

    rows: list[DialogueScores] = []
    for x in runs_or_scores:
        rows.extend([x] if isinstance(x, DialogueScores) else x.scores)
    meta_cols = ["tutor", "task", "domain", "condition", "dimension", "level", "question_id", "stop_reason", "failed"]
    if not rows:
        return pd.DataFrame(columns=meta_cols + list(ALL_METRICS))
    meta = pd.DataFrame([{**{c: getattr(s, c) for c in meta_cols[:-1]}, "failed": bool(s.failed)} for s in rows])
    vals = pd.DataFrame([s.scores for s in rows], dtype=float).reindex(columns=list(ALL_METRICS))
    out = pd.concat([meta, vals], axis=1)
    out["question_id"] = out["question_id"].astype(str)
    return out
