"""A run folder rewritten from stored records (``edufair judge``, ``edufair posttest``): the
commands that rebuild each record of lm-eval samples files and write the same lines, in lm-eval's
layout, into another folder. One place plans the targets (never over an input), reads the records
and writes the rebuilt ones under today's record key."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edufair_metrics.errors import EduFairError
from edufair_metrics.failures import sum_call_counts
from edufair_metrics.io import atomic_write_json, atomic_write_jsonl, read_json
from edufair_metrics.records import LEGACY_RECORD_KEYS, RECORD_KEY, DialogueRecord
from edufair_metrics.runlog.layout import CALL_COUNTS_KEY, RESULTS_RE, SAMPLES_RE, find_samples
from edufair_metrics.runlog.read import iter_lines


class RecordWriter:
    """Records as a samples file stores them (schema v3): each run header in full on the first
    record written against it, a reference (``{"ref": digest}``) on the others, every record with
    only its own provenance delta. One writer per file (or per process of an lm-eval task, whose
    part of the file is contiguous: its first line comes before its other lines)."""

    def __init__(self) -> None:
        self.written: set[str] = set()

    def to_dict(self, record: DialogueRecord) -> dict[str, Any]:
        header = record.header()
        seen = header.digest in self.written
        self.written.add(header.digest)
        return record.to_dict(header=header, header_ref=seen)


def record_dicts(records: Iterable[DialogueRecord]) -> list[dict[str, Any]]:
    """``records`` (one file's, in file order) as :class:`RecordWriter` stores them."""
    writer = RecordWriter()
    return [writer.to_dict(r) for r in records]


@dataclass(frozen=True)
class StoredRun:
    """The samples files of a rewrite, their lines and records (``where`` = ``file:line``), and
    where each file's rewrite goes."""

    files: list[Path]
    targets: dict[Path, Path]
    lines: list[tuple[Path, list[dict[str, Any]]]]
    records: list[tuple[str, DialogueRecord]]


def read_stored_run(inputs: Sequence[str], out_dir: Path, what: str) -> StoredRun:
    """Every samples file of ``inputs`` (files or folders), its target under ``out_dir``
    (``OUT/<model folder>/<file name>``) and its records (read by ``runlog.read.iter_lines``, as
    stored: not completed); ``what`` names the command in errors (e.g. "re-judge")."""
    files = find_samples(list(inputs))
    targets: dict[Path, Path] = {}
    for f in files:
        target = Path(out_dir) / f.parent.name / f.name
        if target in targets.values():
            raise EduFairError(f"two inputs would be written to {target}; {what} them separately")
        if target.resolve() == f.resolve():
            raise EduFairError(f"--out {out_dir} would overwrite the input {f}; choose another folder")
        targets[f] = target
    lines: list[tuple[Path, list[dict[str, Any]]]] = []
    records: list[tuple[str, DialogueRecord]] = []
    for f in files:
        rows = []
        for stored in iter_lines(f, transcripts=True):
            if stored.record is None:
                raise EduFairError(f"{stored.where}: no EduFair record with a transcript in this line (field {RECORD_KEY})")
            records.append((stored.where, stored.record))
            rows.append(stored.line)
        lines.append((f, rows))
    return StoredRun(files, targets, lines, records)


def write_rebuilt(run: StoredRun, rebuilt: Iterable[DialogueRecord], metrics: Sequence[str]) -> list[tuple[Path, str]]:
    """Write ``rebuilt`` (one record per stored line, in order) as each file's target: the same
    lines, the record under ``RECORD_KEY`` (one copy: legacy keys dropped; schema v3, each run
    header once per file: :class:`RecordWriter`) and the per-metric values lm-eval logged beside it
    (``metrics`` present in the line) refreshed. Returns ``(input file, written path)`` per file."""
    it = iter(rebuilt)
    written = []
    for f, rows in run.lines:
        writer = RecordWriter()
        new_rows = []
        for obj in rows:
            record = next(it)
            new = {k: v for k, v in obj.items() if k not in LEGACY_RECORD_KEYS}
            new[RECORD_KEY] = writer.to_dict(record)
            for metric in metrics:
                if metric in new:
                    value = record.scores.scores.get(metric)
                    new[metric] = None if value is None or value != value else value
            new_rows.append(new)
        written.append((f, str(atomic_write_jsonl(run.targets[f], new_rows))))
    return written


def results_for(samples: Path) -> Path | None:
    """The results file of the same lm-eval run as ``samples`` (same folder and timestamp)."""
    m = SAMPLES_RE.match(samples.name)
    if not m:
        return None
    candidate = samples.parent / f"results_{m.group('ts')}.json"
    return candidate if candidate.is_file() else None


@dataclass
class ResultsWriter:
    """The ONE writer of the results file beside each rewritten samples file (``edufair judge``,
    ``edufair posttest``): the input run's own results file (or a minimal one) with ``key`` marking,
    per task, what the command did (``mark``), and optionally a role's call counts added to the
    task's. Tasks of one run share a results file: the first write of a call starts from the input
    run's file (keeping the marks an earlier call left in the output), later ones of the same call
    from what it wrote. One writer per command call."""

    key: str
    fallback_ts: str
    written: set[Path] = field(default_factory=set)

    def write(self, samples: Path, target: Path, mark: dict[str, Any], *, add_calls: dict[str, Any] | None = None) -> Path:
        m = SAMPLES_RE.match(target.name)
        ts = m.group("ts") if m else self.fallback_ts
        task = m.group("task") if m else target.stem
        dest = target.parent / f"results_{ts}.json"
        minimal = {"model_name": samples.parent.name, "results": {}, "configs": {}}
        earlier_marks: dict[str, Any] = {}
        if dest in self.written:  # another task of the same run, in the same call
            data: Any = read_json(dest)
        else:
            source = results_for(samples)
            data = read_json(source) if source is not None else minimal
            if dest.exists():  # an earlier call's output: keep its marks
                try:
                    old = read_json(dest)
                    earlier_marks = old.get(self.key) if isinstance(old, dict) and isinstance(old.get(self.key), dict) else {}
                except EduFairError:
                    earlier_marks = {}
        if not isinstance(data, dict):
            data = minimal
        marks = data.get(self.key) if isinstance(data.get(self.key), dict) else {}
        data[self.key] = {**earlier_marks, **marks, task: mark}
        if add_calls:
            role = str(add_calls.get("role"))
            meta = data.setdefault("configs", {}).setdefault(task, {"task": task}).setdefault("metadata", {})
            roles = meta.get(CALL_COUNTS_KEY) if isinstance(meta.get(CALL_COUNTS_KEY), dict) else {}
            old_counts = roles.get(role) if isinstance(roles.get(role), dict) else None
            summed = sum_call_counts([c for c in (old_counts, add_calls) if c])
            roles[role] = next(c.to_dict() for c in summed if c.role == role)
            meta[CALL_COUNTS_KEY] = roles
        assert RESULTS_RE.match(dest.name)
        atomic_write_json(dest, data)
        self.written.add(dest)
        return dest


__all__ = ["RecordWriter", "ResultsWriter", "StoredRun", "read_stored_run", "record_dicts", "results_for",
           "write_rebuilt"]
