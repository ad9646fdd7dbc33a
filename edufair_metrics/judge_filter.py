"""lm-eval filter that judges every transcript of a task and attaches per-dialogue scores.

YAML (the task may inject ``--metadata`` ``edufair.judge`` into ``judge``)::

    filter_list:
      - name: judged
        filter:
          - function: !function <module>.JudgeFilter
            judge: {base_url: ..., model: ...}   # JudgeSettings overrides (optional)
            enabled: true                          # false: every tutor turn missing, "judge disabled"
            cache_path: null                       # null: default cache; "off": no cache; else a path

``apply(resps, docs)``: ``resps[i][0]`` is the JSON string (or dict) of ``Transcript.to_dict()``; later
elements are harness placeholders and are ignored. Returns, per doc, the record::

    {"transcript": {...}, "judgements": [TurnJudgement dicts], "scores": DialogueScores dict,
     "flags": {"incomplete": bool, "stop_reason": str, "error": str|None}, "judge": settings}

Failed dialogues (student_failed / tutor_failed) are judged and scored on the turns they have and
flagged ``incomplete``. A summary of missing turns per condition level goes to stderr.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Iterable

from lm_eval.api.filter import Filter

from .cache import open_cache
from .errors import EduFairError
from .judge import judge_transcripts, load_judge_settings, missing_judgements, summarize_judgements
from .records import JUDGE_MISSING, STOP_STUDENT_FAILED, STOP_TUTOR_FAILED, Transcript, TurnJudgement
from .scores import score_dialogue

JUDGE_DISABLED = "judge disabled"


def transcript_from_resp(resp: Any, where: str) -> Transcript:
    first = resp[0] if isinstance(resp, (list, tuple)) else resp
    try:
        data = json.loads(first) if isinstance(first, str) else first
        if not isinstance(data, dict) or "turns" not in data:
            raise ValueError("not a transcript object")
        return Transcript.from_dict(data)
    except (ValueError, TypeError) as exc:
        raise EduFairError(f"{where}: response is not a transcript JSON ({exc})") from exc


def build_record(transcript: Transcript, judgements: list[TurnJudgement], judge_info: dict[str, Any] | None) -> dict[str, Any]:
    scores = score_dialogue(transcript, judgements)
    return {
        "transcript": transcript.to_dict(),
        "judgements": [j.to_dict() for j in judgements],
        "scores": scores.to_dict(),
        "flags": {"incomplete": not transcript.complete, "stop_reason": transcript.stop_reason, "error": transcript.error},
        "judge": judge_info,
    }


def missing_by_level(transcripts: list[Transcript], judgements: list[list[TurnJudgement]]) -> dict[str, dict[str, Any]]:
    """{"condition/level": {"turns", "missing", "reasons": {kind: n}, "incomplete_dialogues"}}."""
    out: dict[str, dict[str, Any]] = {}
    for t, js in zip(transcripts, judgements):
        row = out.setdefault(f"{t.condition}/{t.level}", {"turns": 0, "missing": 0, "reasons": {}, "incomplete_dialogues": 0})
        row["incomplete_dialogues"] += int(not t.complete)
        if t.stop_reason in (STOP_STUDENT_FAILED, STOP_TUTOR_FAILED):  # issue 7: failures by kind
            kind = f"{t.stop_reason.split('_')[0]}:{_error_kind(t.error)}"
            fails = row.setdefault("failed_dialogues", {})
            fails[kind] = fails.get(kind, 0) + 1
        for j in js:
            row["turns"] += 1
            if j.status == JUDGE_MISSING:
                row["missing"] += 1
                kind = (j.reason or "unknown").split(":", 1)[0]
                row["reasons"][kind] = row["reasons"].get(kind, 0) + 1
    return dict(sorted(out.items()))


def _error_kind(error: str | None) -> str:
    """The "[kind]" the runner puts in a failed dialogue's error text (see task._advance)."""
    import re

    m = re.search(r"\[([a-z0-9_]+)\]", error or "")
    return m.group(1) if m else "other"


def format_missing_summary(task: str, table: dict[str, dict[str, Any]], totals: dict[str, Any]) -> str:
    lines = [
        f"[edufair judge] {task or 'task'}: {totals.get('ok', 0)}/{totals.get('turns', 0)} tutor turns judged "
        f"({totals.get('cached', 0)} from cache), {totals.get('missing', 0)} missing"
    ]
    for key, row in table.items():
        reasons = ", ".join(f"{k}={v}" for k, v in sorted(row["reasons"].items()))
        extra = f" [{reasons}]" if reasons else ""
        inc = f", {row['incomplete_dialogues']} incomplete dialogue(s)" if row["incomplete_dialogues"] else ""
        fails = ", ".join(f"{k}={v}" for k, v in sorted((row.get("failed_dialogues") or {}).items()))
        fails = f" failed dialogues [{fails}]" if fails else ""
        lines.append(f"  {key}: missing {row['missing']}/{row['turns']}{extra}{inc}{fails}")
    return "\n".join(lines)


def judge_records(
    transcripts: list[Transcript],
    judge: dict[str, Any] | None = None,
    enabled: bool = True,
    cache_path: str | None = None,
    progress: bool = True,
    cli: dict[str, Any] | None = None,
    summary: dict[str, Any] | None = None,
    config_path: str | None = None,
) -> list[dict[str, Any]]:
    """Judge and score ``transcripts``; returns one record per transcript (shared by the filter
    and ``edufair judge``)."""
    if enabled:
        settings = load_judge_settings(metadata=judge, cli=cli, config_path=config_path)
        cache = open_cache(cache_path)
        try:
            judgements = judge_transcripts(transcripts, settings, cache=cache, progress=progress, summary=summary)
        finally:
            if cache is not None:
                cache.close()
        info = settings.public_dict()
    else:
        judgements = [missing_judgements(t, JUDGE_DISABLED) for t in transcripts]
        info = {"enabled": False}
        if summary is not None:
            summary.update(summarize_judgements(judgements))
    if summary is not None:
        summary["by_level"] = missing_by_level(transcripts, judgements)
    return [build_record(t, js, info) for t, js in zip(transcripts, judgements)]


class JudgeFilter(Filter):
    """Judges all transcripts of a task in one concurrent batch (see the module docstring)."""

    def __init__(self, judge: dict[str, Any] | None = None, enabled: bool = True, cache_path: str | None = None, progress: bool = True, **kwargs) -> None:
        super().__init__(**kwargs)
        if judge is not None and not isinstance(judge, dict):
            raise EduFairError(f"JudgeFilter: 'judge' must be a mapping of judge settings, got {type(judge).__name__}")
        self.judge = judge
        self.enabled = bool(enabled)
        self.cache_path = cache_path
        self.progress = progress
        self.last_summary: dict[str, Any] | None = None

    def apply(self, resps: Iterable, docs: list[dict]) -> list[dict[str, Any]]:
        resps = list(resps)
        transcripts = [transcript_from_resp(r, f"document {i}") for i, r in enumerate(resps)]
        summary: dict[str, Any] = {}
        records = judge_records(
            transcripts, judge=self.judge, enabled=self.enabled, cache_path=self.cache_path, progress=self.progress, summary=summary
        )
        self.last_summary = summary
        task = next((t.task for t in transcripts if t.task), "")
        print(format_missing_summary(task, summary["by_level"], summary), file=sys.stderr, flush=True)
        return records
