"""A run folder rewritten from stored records (``edufair judge``, ``edufair posttest``): the
commands that rebuild each record of lm-eval samples files and write the same lines, in lm-eval's
layout, into another folder. One place plans the targets (never over an input), reads the records
and writes the rebuilt ones under today's record key."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edufair_metrics.errors import EduFairError
from edufair_metrics.io import atomic_write_jsonl, iter_jsonl
from edufair_metrics.records import LEGACY_RECORD_KEYS, RECORD_KEY, DialogueRecord, record_in_line
from edufair_metrics.runlog.layout import SAMPLES_RE, find_samples


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
    (``OUT/<model folder>/<file name>``) and its records; ``what`` names the command in errors
    (e.g. "re-judge")."""
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
        for lineno, obj in iter_jsonl(f):
            rec = record_in_line(obj)
            if not isinstance(rec, dict) or not isinstance(rec.get("transcript"), dict):
                raise EduFairError(f"{f}:{lineno}: no EduFair record with a transcript in this line (field {RECORD_KEY})")
            try:
                records.append((f"{f}:{lineno}", DialogueRecord.from_dict(rec, doc=obj.get("doc"))))
            except (TypeError, ValueError, KeyError) as exc:
                raise EduFairError(f"{f}:{lineno}: malformed transcript ({exc})") from exc
            rows.append(obj)
        lines.append((f, rows))
    return StoredRun(files, targets, lines, records)


def write_rebuilt(run: StoredRun, rebuilt: Iterable[DialogueRecord], metrics: Sequence[str]) -> list[tuple[Path, str]]:
    """Write ``rebuilt`` (one record per stored line, in order) as each file's target: the same
    lines, the record under ``RECORD_KEY`` (one copy: legacy keys dropped) and the per-metric
    values lm-eval logged beside it (``metrics`` present in the line) refreshed. Returns
    ``(input file, written path)`` per file."""
    it = iter(rebuilt)
    written = []
    for f, rows in run.lines:
        new_rows = []
        for obj in rows:
            record = next(it)
            new = {k: v for k, v in obj.items() if k not in LEGACY_RECORD_KEYS}
            new[RECORD_KEY] = record.to_dict()
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


__all__ = ["StoredRun", "read_stored_run", "results_for", "write_rebuilt"]
