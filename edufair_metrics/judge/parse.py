"""Strict parsing of the judge's answer (paper Appendix F.1 label schema).

``message.content`` only (gpt-oss reasoning arrives in a separate field and is ignored);
``<think>...</think>`` blocks are removed; surrounding whitespace and one ```json fence are
tolerated; the rest must be exactly ONE JSON object with exactly the six fields:
student_mistake_prev_turn: JSON true/false; correction_tone, mistake_recognize in {0, 1, -1};
answer_leakage, scaffolding_guidance, actionability in {0, 1}. Integers are JSON integers;
an integral float such as ``1.0`` is accepted and normalised to ``1`` (it is unambiguous), while
``1.5``, strings (``"1"``), booleans for integer fields, null, duplicate keys and NaN are rejected.
If student_mistake_prev_turn is false, tone and recognition are forced to -1 (N/A) and the
forced fields are listed in ``labels["_forced_na"]`` (always present, usually empty); if it is
true, -1 for them is invalid. Any invalid output is retried; after the bound the turn is
``missing`` with its failure kind, never given a value.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from edufair_metrics.failures import CallFailure, FailureKind

JUDGE_FIELDS = (
    "student_mistake_prev_turn",
    "correction_tone",
    "mistake_recognize",
    "answer_leakage",
    "scaffolding_guidance",
    "actionability",
)
GATED_FIELDS = ("correction_tone", "mistake_recognize")  # N/A (-1) unless student_mistake_prev_turn
BINARY_FIELDS = ("answer_leakage", "scaffolding_guidance", "actionability")
FORCED_NA_KEY = "_forced_na"

JUDGE_JSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "student_mistake_prev_turn": {"type": "boolean"},
        "correction_tone": {"type": "integer", "enum": [0, 1, -1]},
        "mistake_recognize": {"type": "integer", "enum": [0, 1, -1]},
        "answer_leakage": {"type": "integer", "enum": [0, 1]},
        "scaffolding_guidance": {"type": "integer", "enum": [0, 1]},
        "actionability": {"type": "integer", "enum": [0, 1]},
    },
    "required": list(JUDGE_FIELDS),
    "additionalProperties": False,
}


class JudgeOutputError(CallFailure, ValueError):
    """An invalid judge answer; ``kind`` is EMPTY_OUTPUT, INVALID_JSON, WRONG_FIELDS, WRONG_TYPE,
    BAD_VALUE or INCONSISTENT."""

    def __init__(self, kind: FailureKind, detail: str):
        super().__init__(kind, detail)


_THINK_RE = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE_RE = re.compile(r"\A```[ \t]*(?:json)?[ \t]*\n?(.*?)\n?[ \t]*```\Z", re.DOTALL | re.IGNORECASE)


def _pairs_no_duplicates(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise JudgeOutputError(FailureKind.INVALID_JSON, f"duplicate key {k!r}")
        out[k] = v
    return out


def _reject_constant(name):
    raise JudgeOutputError(FailureKind.INVALID_JSON, f"non-standard JSON constant {name}")


_DECODER = json.JSONDecoder(object_pairs_hook=_pairs_no_duplicates, parse_constant=_reject_constant)


def _as_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or value is None:
        raise JudgeOutputError(FailureKind.WRONG_TYPE, f"{name} must be an integer, got {json.dumps(value)}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)  # documented: 1.0 is accepted as 1
    raise JudgeOutputError(FailureKind.WRONG_TYPE, f"{name} must be an integer, got {json.dumps(value)}")


def parse_judge_output(content: str | None) -> dict[str, Any]:
    """Validated labels (the six fields plus ``_forced_na``) or JudgeOutputError."""
    if content is None or not content.strip():
        raise JudgeOutputError(FailureKind.EMPTY_OUTPUT, "empty content")
    text = _THINK_RE.sub("", content)
    if re.search(r"</?think>", text, re.IGNORECASE):
        raise JudgeOutputError(FailureKind.INVALID_JSON, "unbalanced <think> tag")
    text = text.strip()
    m = _FENCE_RE.match(text)
    if m:
        text = m.group(1).strip()
    if not text:
        raise JudgeOutputError(FailureKind.EMPTY_OUTPUT, "no content outside reasoning")
    try:
        obj, end = _DECODER.raw_decode(text)
    except json.JSONDecodeError as exc:
        raise JudgeOutputError(FailureKind.INVALID_JSON, f"{exc.msg} at char {exc.pos}") from None
    if text[end:].strip():
        raise JudgeOutputError(FailureKind.INVALID_JSON, "text after the JSON object")
    if not isinstance(obj, dict):
        raise JudgeOutputError(FailureKind.INVALID_JSON, f"expected a JSON object, got {type(obj).__name__}")
    missing = [f for f in JUDGE_FIELDS if f not in obj]
    extra = sorted(k for k in obj if k not in JUDGE_FIELDS)
    if missing or extra:
        detail = "; ".join(
            x for x in (f"missing {', '.join(missing)}" if missing else "", f"unexpected {', '.join(extra)}" if extra else "") if x
        )
        raise JudgeOutputError(FailureKind.WRONG_FIELDS, detail)
    mistake = obj["student_mistake_prev_turn"]
    if not isinstance(mistake, bool):
        raise JudgeOutputError(FailureKind.WRONG_TYPE, f"student_mistake_prev_turn must be true/false, got {json.dumps(mistake)}")
    labels: dict[str, Any] = {"student_mistake_prev_turn": mistake}
    for name in GATED_FIELDS:
        v = _as_int(name, obj[name])
        if v not in (0, 1, -1):
            raise JudgeOutputError(FailureKind.BAD_VALUE, f"{name} must be 0, 1 or -1, got {v}")
        labels[name] = v
    for name in BINARY_FIELDS:
        v = _as_int(name, obj[name])
        if v not in (0, 1):
            raise JudgeOutputError(FailureKind.BAD_VALUE, f"{name} must be 0 or 1, got {v}")
        labels[name] = v
    forced: list[str] = []
    if mistake:
        bad = [n for n in GATED_FIELDS if labels[n] == -1]
        if bad:
            raise JudgeOutputError(FailureKind.INCONSISTENT, f"{', '.join(bad)} = -1 although student_mistake_prev_turn is true")
    else:
        for n in GATED_FIELDS:
            if labels[n] != -1:
                labels[n] = -1
                forced.append(n)
    labels[FORCED_NA_KEY] = forced
    return {k: labels[k] for k in (*JUDGE_FIELDS, FORCED_NA_KEY)}
