"""Re-judging stored transcripts from lm-eval samples files, without regenerating dialogues.

Reads every ``samples_*.jsonl`` given (or found recursively under given directories); each line's
``edufair_record["transcript"]`` is judged again (all files in one concurrent batch, through the
persistent cache), and the same lines with ``edufair_record`` replaced by the new record are written
atomically to the output folder (same file names), plus ``judge_summary.json`` (settings without any
key, counts, missing turns per condition level).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edufair_metrics.cache import CachePolicy
from edufair_metrics.errors import EduFairError
from edufair_metrics.io import atomic_write_json, atomic_write_jsonl, iter_jsonl
from edufair_metrics.judge.run import judge_records
from edufair_metrics.judge.settings import JudgeSettings
from edufair_metrics.records import Transcript


def find_samples(inputs: list[str]) -> list[Path]:
    files: list[Path] = []
    for item in inputs:
        p = Path(item)
        if p.is_dir():
            found = sorted(p.rglob("samples_*.jsonl"))
            if not found:
                raise EduFairError(f"{p}: no samples_*.jsonl files in this directory")
            files.extend(found)
        elif p.is_file():
            files.append(p)
        else:
            raise EduFairError(f"{p}: no such file or directory")
    seen: dict[str, Path] = {}
    unique = []
    for f in files:
        r = f.resolve()
        if str(r) in seen:
            continue
        seen[str(r)] = f
        unique.append(f)
    return unique


@dataclass(frozen=True)
class RejudgeResult:
    files: list[Path]
    outputs: list[str]
    dialogues: int
    summary: dict[str, Any]


def rejudge_samples(inputs: list[str], out_dir: Path, *, settings: JudgeSettings, cache: CachePolicy | None = None,
                    progress: bool = True) -> RejudgeResult:
    """Judge again the transcripts of lm-eval samples files (or folders of them) with the resolved
    judge ``settings`` and write the same lines with the new records, plus ``judge_summary.json``,
    into ``out_dir``. Inputs are never modified."""
    files = find_samples(inputs)
    out_dir = Path(out_dir)
    names: dict[str, Path] = {}
    for f in files:
        if f.name in names:
            raise EduFairError(f"two inputs named {f.name} ({names[f.name]} and {f}); re-judge them separately")
        names[f.name] = f
        if (out_dir / f.name).resolve() == f.resolve():
            raise EduFairError(f"--out {out_dir} would overwrite the input {f}; choose another folder")

    lines: list[tuple[Path, list[dict[str, Any]]]] = []
    transcripts: list[Transcript] = []
    for f in files:
        rows = []
        for lineno, obj in iter_jsonl(f):
            rec = obj.get("edufair_record") if isinstance(obj, dict) else None
            if not isinstance(rec, dict) or not isinstance(rec.get("transcript"), dict):
                raise EduFairError(f"{f}:{lineno}: no edufair_record.transcript in this line")
            try:
                transcripts.append(Transcript.from_dict(rec["transcript"]))
            except (TypeError, ValueError) as exc:
                raise EduFairError(f"{f}:{lineno}: malformed transcript ({exc})") from exc
            rows.append(obj)
        lines.append((f, rows))

    summary: dict[str, Any] = {}
    records = judge_records(transcripts, judge=settings, cache=cache, progress=progress, summary=summary)

    it = iter(records)
    written = []
    for f, rows in lines:
        new_rows = []
        for obj in rows:
            new = dict(obj)
            new["edufair_record"] = next(it)
            new_rows.append(new)
        written.append(str(atomic_write_jsonl(out_dir / f.name, new_rows)))
    judge_info = records[0]["judge"] if records else None
    atomic_write_json(
        out_dir / "judge_summary.json",
        {"inputs": [str(f) for f in files], "outputs": written, "judge": judge_info, "summary": summary},
    )
    return RejudgeResult(files=files, outputs=written, dialogues=len(transcripts), summary=summary)
