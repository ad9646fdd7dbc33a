"""A run with a labelling sample and a labels file, for the tests of ``edufair label-sample``,
``judge-human --format edufair`` and the viewer's label mode: :func:`write_evidence_run`'s run
(planted answer leakage at the ``leak_levels``, the judge labelling it 1), and labels given by a
rule ``human(record, turn_index, metric, judge value) -> "yes" | "no" | "na"``."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from edufair_metrics.runlog import load_records
from edufair_metrics.runlog.labels import (LABELS_FILE, append_label, draw_sample, judge_turn_value, labels_folder,
                                           run_folder, write_sample)
from edufair_metrics.records import PEDAGOGICAL_METRICS

from tests.helpers.evidence_runs import write_evidence_run


def labelled_run(root: Path, *, n: int, n_questions: int = 40, seed: int = 0, human: Callable | None = None, **kw):
    """(run folder, sample, labels path); ``human`` None: no labels written."""
    write_evidence_run(root, n_questions=n_questions, **kw)
    folder = run_folder(root)
    tutor, records = load_records(root)
    sample = draw_sample(records, n, seed=seed, tutor=tutor)
    write_sample(sample, folder)
    path = labels_folder(folder) / LABELS_FILE
    if human is not None:
        by_key = {f"{r.key[0]}|{r.key[2]}|{r.key[3]}": r for r in records}
        for item in sample.items:
            rec = by_key[item.turn_id.rsplit("|", 1)[0]]
            labels = {m: human(rec, item.turn_index, m, judge_turn_value(rec, item.turn_index, m)) for m in PEDAGOGICAL_METRICS}
            append_label(path, sample.run_id, item.turn_id, labels)
    return folder, sample, path


def agree(record, turn_index, metric, judge):
    """A human who agrees with the judge everywhere."""
    return "na" if judge is None else "yes" if judge == 1 else "no"


def no_leak(record, turn_index, metric, judge):
    """A human who sees no answer leakage anywhere (and agrees with the judge on the rest)."""
    if metric == "answer_leakage":
        return "no"
    return agree(record, turn_index, metric, judge)
