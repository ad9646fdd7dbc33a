"""``edufair judge``: re-judge stored transcripts from lm-eval samples files without regenerating.

Reads every ``samples_*.jsonl`` given (or found recursively under given directories); each line's
``edufair_record["transcript"]`` is judged again (all files in one concurrent batch, through the
persistent cache), and the same lines with ``edufair_record`` replaced by the new record are written
atomically to ``--out`` (same file names), plus ``judge_summary.json`` (settings without any key,
counts, missing turns per condition level). Inputs are never modified.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .errors import EduFairError
from .io import atomic_write_json, atomic_write_jsonl, iter_jsonl


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("inputs", nargs="+", help="lm-eval samples_*.jsonl files or output directories")
    parser.add_argument("--judge-base-url", help="OpenAI-compatible endpoint (overrides env/config)")
    parser.add_argument("--judge-model", help="served judge model name")
    parser.add_argument("--concurrency", type=int, help="dialogues judged in parallel")
    parser.add_argument("--max-retries", type=int, help="retries per turn after the first attempt")
    parser.add_argument("--structured-output", choices=("off", "json_object", "json_schema"))
    parser.add_argument("--judge-config", help="judge settings YAML (default: $EDUFAIR_JUDGE_CONFIG, else the packaged edufair_metrics/judge_defaults.yaml)")
    parser.add_argument("--cache", default=None, help="call cache path, or 'off' (default: $EDUFAIR_CACHE_DIR or results/cache)")
    parser.add_argument("--out", default="results/rejudged", help="output folder (default: results/rejudged)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


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


def main(args: argparse.Namespace) -> int:
    from .judge_filter import format_missing_summary, judge_records
    from .records import Transcript

    files = find_samples(args.inputs)
    out_dir = Path(args.out)
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

    cli = {
        "base_url": args.judge_base_url,
        "model": args.judge_model,
        "concurrency": args.concurrency,
        "max_retries": args.max_retries,
        "structured_output": args.structured_output,
    }
    summary: dict[str, Any] = {}
    records = judge_records(
        transcripts, cli=cli, cache_path=args.cache, progress=not args.no_progress, summary=summary, config_path=args.judge_config
    )

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
    print(format_missing_summary(f"{len(transcripts)} dialogue(s) in {len(files)} file(s)", summary["by_level"], summary), file=sys.stderr)
    print(f"wrote {len(written)} samples file(s) and judge_summary.json to {out_dir}")
    return 0
