"""Reading dialogue records from samples files, one line at a time, any record version, completed
on the same pass: the ONE reader of the record's JSON."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from edufair_metrics.detectors import DETECTOR_VERSION, RETIRED_DETECTOR_METRICS, STORED_METRICS, all_scores
from edufair_metrics.errors import EduFairError
from edufair_metrics.io import iter_jsonl
from edufair_metrics.records import DialogueRecord, record_in_line
from edufair_metrics.runlog.layout import samples_task
from edufair_metrics.scores import TURN_COUNTS_VERSION, pedagogical_counts


@dataclass(frozen=True)
class RecordLine:
    """One record and where it came from (``file:line``)."""

    where: str
    record: DialogueRecord


@dataclass
class ReadStats:
    """Counts of one read: samples lines, and lines without an EduFair record (skipped)."""

    lines: int = 0
    skipped: int = 0
    completed: int = 0  # records whose detector metrics or turn counts were (re)computed on this read
    files: list[str] = field(default_factory=list)


def complete_record(record: DialogueRecord) -> bool:
    """Fill in what an older EduFair did not store, in place: the detector and student metrics
    (computed from the transcript and the gold, no model call) when the record has none or those
    of an older detector version (whose retired metrics, e.g. ``leak_rate_det``, are dropped). A
    NaN value (no tutor turn, no gold forms) is not stored, so a run whose records hold no turns
    gets no detector contrasts. Also when the gold became known only now (from the samples line's
    logged document) and a gold-based metric that the transcript allows is missing. Returns True
    when the metrics were recomputed."""
    if record.detector_version == DETECTOR_VERSION and not (record.document.answer_forms and _lacks_gold_metrics(record)):
        return False
    for m in STORED_METRICS + RETIRED_DETECTOR_METRICS:
        record.scores.scores.pop(m, None)  # replaced, never mixed with a recomputed one
    det = all_scores(record.transcript, record.document.answer_forms)
    record.scores.scores.update({m: det[m] for m in STORED_METRICS if not math.isnan(det[m])})
    record.detector_version = DETECTOR_VERSION
    return True


def _lacks_gold_metrics(record: DialogueRecord) -> bool:
    """A record with a student turn but no ``student_correct_answer_rate``: its metrics were computed
    without the gold (every transcript with a student turn has that one when the gold is known)."""
    return (any(t.role == "student" for t in record.transcript.turns)
            and "student_correct_answer_rate" not in record.scores.scores)


def complete_turn_counts(record: DialogueRecord) -> bool:
    """Fill in the per-metric turn counts (``DialogueScores.turn_counts``: applicable and positive
    judged turns) of a record written before they were stored, or by an older definition, from its
    stored judgements (no model call), in place. A record without judgements keeps none (its
    dialogues then have no turn-level test). Returns True when the counts were recomputed."""
    if record.turn_counts_version == TURN_COUNTS_VERSION and record.scores.turn_counts:
        return False
    if not record.judgements:
        return False
    record.scores.turn_counts = pedagogical_counts(record.judgements)
    record.turn_counts_version = TURN_COUNTS_VERSION
    return True


def iter_records(path: str | Path, *, stats: ReadStats | None = None, complete: bool = True) -> Iterator[RecordLine]:
    """Every EduFair record of one samples file, in file order, streamed (one line in memory at a
    time). Lines without a record are skipped (counted in ``stats``); a malformed record is an
    error naming the file and line. ``complete``: :func:`complete_record` each record."""
    path = Path(path)
    task_of_file = samples_task(path) or ""
    if stats is not None:
        stats.files.append(str(path))
    for lineno, obj in iter_jsonl(path):
        if stats is not None:
            stats.lines += 1
        rec = record_in_line(obj)
        if not isinstance(rec, dict) or not isinstance(rec.get("scores"), dict):
            if stats is not None:
                stats.skipped += 1
            continue
        where = f"{path}:{lineno}"
        try:
            record = DialogueRecord.from_dict(rec, doc=obj.get("doc"))
        except (TypeError, ValueError, KeyError) as exc:
            raise EduFairError(f"{where}: malformed EduFair record ({exc})") from exc
        if not record.scores.task:
            record.scores.task = task_of_file
        if complete:
            done = complete_record(record)
            done = complete_turn_counts(record) or done
            if done and stats is not None:
                stats.completed += 1
        yield RecordLine(where, record)


def read_records(files: list[Path], *, allow_empty: bool = False, complete: bool = True) -> list[RecordLine]:
    """Every record of ``files`` that stores its transcript (in memory: for agreement and
    re-judging, not for paper-size reports). No such record is an error unless ``allow_empty``."""
    out = [line for f in files for line in iter_records(f, complete=complete) if line.record.has_transcript]
    if not out and not allow_empty:
        raise EduFairError(f"no EduFair records with transcripts in {', '.join(str(f) for f in files)}")
    return out
