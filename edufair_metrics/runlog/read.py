"""Reading dialogue records from samples files, one line at a time, any record version, completed
on the same pass: the ONE reader of record lines (:func:`iter_lines`; the reports' :func:`iter_records`
and the rewrites' ``runlog.rewrite.read_stored_run`` both read through it). A schema-v3 file holds
each run header once (the first line of each process's part) and a reference to it on the other
lines; the reader keeps the headers of the file it reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from edufair_metrics.errors import EduFairError
from edufair_metrics.io import iter_jsonl
from edufair_metrics.records import DialogueRecord, RunHeader, record_in_line
from edufair_metrics.runlog.layout import samples_task
from edufair_metrics.runlog import scorers


@dataclass(frozen=True)
class RecordLine:
    """One record and where it came from (``file:line``)."""

    where: str
    record: DialogueRecord


@dataclass(frozen=True)
class StoredLine:
    """One samples line: where it is, the line as lm-eval wrote it, and its record (None: the line
    holds no EduFair record, or one without a transcript when ``transcripts`` was asked for)."""

    where: str
    line: dict[str, Any]
    record: DialogueRecord | None


@dataclass
class ReadStats:
    """Counts of one read: samples lines, and lines without an EduFair record (skipped)."""

    lines: int = 0
    skipped: int = 0
    completed: int = 0  # records that a dialogue scorer scored again on this read (runlog.scorers.complete)
    files: list[str] = field(default_factory=list)


def complete_record(record: DialogueRecord) -> DialogueRecord:
    """``record`` brought up to date by every dialogue scorer (``runlog.scorers.complete``), as a new record."""
    return scorers.complete(record)[0]


def iter_lines(path: str | Path, *, transcripts: bool = False) -> Iterator[StoredLine]:
    """Every line of one samples file with its record parsed (any schema version; run headers
    resolved), streamed. A line whose record is malformed is an error naming the file and line.
    ``transcripts``: a record must store its transcript (else the line's record is None)."""
    path = Path(path)
    headers: dict[str, RunHeader] = {}
    for lineno, obj in iter_jsonl(path):
        where = f"{path}:{lineno}"
        rec = record_in_line(obj)
        key = "transcript" if transcripts else "scores"
        if not isinstance(rec, dict) or not isinstance(rec.get(key), dict):
            yield StoredLine(where, obj if isinstance(obj, dict) else {}, None)
            continue
        try:
            record = DialogueRecord.from_dict(rec, doc=obj.get("doc"), headers=headers)
        except (TypeError, ValueError, KeyError) as exc:
            raise EduFairError(f"{where}: malformed EduFair record ({exc})") from exc
        if record.run is not None:
            headers.setdefault(record.run.digest, record.run)
        yield StoredLine(where, obj, record)


def iter_records(path: str | Path, *, stats: ReadStats | None = None, complete: bool = True) -> Iterator[RecordLine]:
    """Every EduFair record of one samples file, in file order, streamed (one line in memory at a
    time). Lines without a record are skipped (counted in ``stats``); a malformed record is an
    error naming the file and line. ``complete``: each record brought up to date by the dialogue
    scorers (``runlog.scorers.complete``)."""
    path = Path(path)
    task_of_file = samples_task(path) or ""
    if stats is not None:
        stats.files.append(str(path))
    for stored in iter_lines(path):
        if stats is not None:
            stats.lines += 1
        record = stored.record
        if record is None:
            if stats is not None:
                stats.skipped += 1
            continue
        if not record.scores.task:
            record.scores.task = task_of_file
        if complete:
            record, ran = scorers.complete(record)
            if ran and stats is not None:
                stats.completed += 1
        yield RecordLine(stored.where, record)


def read_records(files: list[Path], *, allow_empty: bool = False, complete: bool = True) -> list[RecordLine]:
    """Every record of ``files`` that stores its transcript (in memory: for agreement and
    re-judging, not for paper-size reports). No such record is an error unless ``allow_empty``."""
    out = [line for f in files for line in iter_records(f, complete=complete) if line.record.has_transcript]
    if not out and not allow_empty:
        raise EduFairError(f"no EduFair records with transcripts in {', '.join(str(f) for f in files)}")
    return out
