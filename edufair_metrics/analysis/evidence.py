"""The evidence behind a contrast, per dialogue: what the HTML report's twin view shows of one
stored record (pure functions; the report writes them to files, ``report/html``).

:func:`dialogue_evidence` turns a :class:`~edufair_metrics.records.DialogueRecord` into a compact,
JSON-ready dict: the turns (the text the other party saw; the raw generation only where it
differs), per tutor turn the judge's labels (``JUDGE_FIELDS`` order), parse status, failure kind
and raw output, the deterministic detectors' turn-level hits (``detectors.detect_turns``: tutor
turns that state the gold, student turns that attempt reasoning; None without gold forms), the stop
rule's evidence, the failure, and the nine scores plus the detector metrics (``EVIDENCE_METRICS``
order). :func:`first_split` finds the first turn where two dialogues differ (the twin view applies
it to the twins' turns with the condition's cues masked, :func:`mask_spec` / :func:`masked_turn_hashes`;
:func:`placebo_split_positions` to the placebo pairs, two runs of the same level).
:func:`cue_spans` finds the sentences of a system prompt that carry the demographic cue
(``protocol.cue_sentences``), falling back to the condition's cue words (``protocol.cues``).

Key names are short on purpose: a paper-size report holds about 160,000 of these.
"""

from __future__ import annotations

import functools
import math
import re
import zlib
from typing import Any

from edufair_metrics.detectors import TurnDetection, record_detection
from edufair_metrics.errors import EduFairError
from edufair_metrics.judge.parse import FORCED_NA_KEY, JUDGE_FIELDS
from edufair_metrics.protocol.placebo import split_replicate_level
from edufair_metrics.protocol import condition_levels
from edufair_metrics.protocol.cues import condition_cues, mask_transcript
from edufair_metrics.protocol.prompts import cue_sentences, protocol_for
from edufair_metrics.records import ALL_METRICS, DETECTOR_METRICS, JUDGE_OK, OUTCOME_METRICS, STUDENT_METRICS, DialogueRecord

EVIDENCE_METRICS = ALL_METRICS + DETECTOR_METRICS + STUDENT_METRICS + OUTCOME_METRICS
ROLE_CODES = {"question": "q", "student": "s", "tutor": "t"}
_UNSET = object()


def _num(x: Any) -> float | None:
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else round(x, 4)


def _labels(labels: dict[str, Any] | None) -> list[Any] | None:
    if labels is None:
        return None
    return [int(labels[f]) if isinstance(labels.get(f), bool) else labels.get(f) for f in JUDGE_FIELDS]


def dialogue_evidence(record: DialogueRecord, detection: TurnDetection | None | object = _UNSET) -> dict[str, Any]:
    """One dialogue for the twin view (keys: ``q`` question id, ``lv`` level, ``task``, ``turns``
    [[role code, text, raw or None]], ``j`` [[turn index, ok, labels, kind, reason, raw, attempts,
    cached]], ``leak`` / ``att`` / ``pr`` (partial reveals) turn indices of detector hits (None: not detectable), ``ev`` stop
    evidence, ``stop`` reason, ``err`` [kind, detail] or None, ``failed``, ``sc`` scores,
    ``gold``, ``tutor_system`` / ``student_system``). ``detection``: the record's
    :func:`detect_turns` when the caller has it already (None: no gold forms)."""
    t = record.transcript
    if detection is _UNSET:
        detection = record_detection(record)
    turns = [[ROLE_CODES.get(x.role, x.role), x.text, x.raw if x.raw is not None and x.raw != x.text else None]
             for x in t.turns]
    judged = []
    for j in record.judgements:
        labels = dict(j.labels) if j.labels else None
        forced = labels.pop(FORCED_NA_KEY, None) if labels else None
        judged.append([j.turn_index, int(j.status == JUDGE_OK), _labels(labels), j.kind, j.reason, j.raw, j.attempts,
                       int(bool(j.cached)), forced or None])
    scores = record.scores.scores
    out = {
        "q": str(t.question_id), "lv": t.level, "task": t.task or record.scores.task,
        "turns": turns, "j": judged,
        "leak": None if detection is None else sorted(i for i, hit in detection.leaks.items() if hit),
        "att": None if detection is None else sorted(i for i, hit in detection.attempts.items() if hit),
        "pr": None if detection is None else sorted(i for i, hit in (detection.partial or {}).items() if hit),
        "ev": t.stop_evidence, "stop": t.stop_reason or None,
        "err": [t.error_kind, (t.error or "")[:400]] if (t.error or t.error_kind) else None,
        "failed": int(bool(record.scores.failed)),
        "sc": [_num(scores.get(m)) for m in EVIDENCE_METRICS],
        "gold": record.document.answer,
        # the post-test (edufair.posttest): [answer, verdict, pre-test verdict, revealed, failure kind] or None
        "pt": None if record.posttest is None else [record.posttest.answer, record.posttest.verdict,
                                                   record.posttest.pretest, record.posttest.revealed,
                                                   record.posttest.error_kind],
        "tutor_system": t.tutor_system, "student_system": t.student_system,
    }
    return out


def masked_turn_hashes(record: DialogueRecord) -> list[str]:
    """Per turn, crc32 (24 bits, hex) of its role and text with the condition's demographic cues masked
    (``protocol.cues.mask_transcript``, as a condition-blind judge reads it): two twins whose
    turns hash alike said the same thing up to the cue."""
    masked = mask_transcript(record.transcript).transcript
    # 24 bits: a chance collision between two different turns is 1 in 16.8 million
    return [format(zlib.crc32(f"{t.role}\n{' '.join(t.text.split())}".encode("utf-8")) & 0xFFFFFF, "06x")
            for t in masked.turns]


def mask_spec(condition: str) -> dict[str, Any] | None:
    """The condition's cue mask for the page (``protocol.cues``, what a condition-blind judge
    sees): the regular expression's source and phrase -> placeholder; None without cues."""
    try:
        cues = condition_cues(condition)
    except EduFairError:
        return None
    if cues.pattern is None:
        return None
    return {"pattern": cues.pattern.pattern, "lookup": {re.sub(r"[\s\-]+", " ", p.casefold()): ph
                                                         for p, ph in cues.replacements}}


def turn_keys(turns: list[list[Any]]) -> list[str]:
    """A stored dialogue's turns ([[role code, text, raw]]) as comparable keys: role and text,
    whitespace normalised (placebo pairs share the level, so their cues are the same)."""
    return [f"{t[0]}\n{' '.join(str(t[1]).split())}" for t in turns]


def first_split(a: list[str] | None, b: list[str] | None) -> int | None:
    """The first turn index at which two dialogues' masked turns differ (one ending earlier counts
    as a difference at its length); None when they are identical beyond the cue."""
    if a is None or b is None:
        return None
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def placebo_split_positions(hashes: dict[tuple[Any, str, str, str], list[str]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Where the placebo pairs part: for every (tutor index, task, question, level) stored with a
    replicate r ≥ 2 (``protocol.placebo``), the first split of replicate r against replicate 1 of the
    same level (``hashes``: per dialogue its turns as comparable keys, :func:`turn_keys`). Returns {tutor index: {task: {"n": pairs, "never": identical pairs, "at": {turn
    index: pairs}}}}; empty without placebo replicates."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for (ti, task, q, level), mh in hashes.items():
        base, rep = split_replicate_level(level)
        if rep <= 1:
            continue
        first = hashes.get((ti, task, q, base))
        if first is None:
            continue
        split = first_split(first, mh)
        entry = out.setdefault(str(ti), {}).setdefault(task, {"n": 0, "never": 0, "at": {}})
        entry["n"] += 1
        if split is None:
            entry["never"] += 1
        else:
            entry["at"][str(split)] = entry["at"].get(str(split), 0) + 1
    return out


@functools.lru_cache(maxsize=512)
def _cue_text(condition: str, level: str, domain: str, role: str) -> str:
    base, _ = split_replicate_level(level)
    try:
        lv = next((x for x in condition_levels(condition) if x.level == base), None)
    except EduFairError:
        return ""
    if lv is None:
        return ""
    return getattr(cue_sentences(lv, domain), role)


def cue_spans(text: str, condition: str, level: str, domain: str, role: str) -> list[list[int]]:
    """[[start, end], ...] of the cue-bearing sentences of ``level``'s ``role`` (tutor | student)
    system prompt in ``text``; where the protocol's sentence is not found verbatim (a prompt from
    another protocol version, a level the protocol does not know) the condition's cue words."""
    if not text:
        return []
    spans = []
    sentences = [s for s in _cue_text(condition, level, domain, role).split("\n") if s]
    for sentence in sentences:
        at = text.find(sentence)
        if at >= 0:
            spans.append([at, at + len(sentence)])
    if spans or sentences == []:
        return sorted(spans) if spans else []
    try:
        pattern = condition_cues(condition).pattern
    except EduFairError:
        return []
    return [[m.start(), m.end()] for m in pattern.finditer(text)] if pattern is not None else []


def level_cue_words(condition: str) -> dict[str, list[str]]:
    """{level: the words its prompts fill in (a name, a group word, a gender), longest first}: what
    the twin view marks where a turn repeats them."""
    spec = (protocol_for(condition).get("conditions") or {}).get(condition) or {}
    out = {}
    for lv in spec.get("levels") or []:
        words = {str(v) for v in (lv.get("values") or {}).values() if str(v).strip()}
        out[str(lv["level"])] = sorted(words, key=lambda w: (-len(w), w))
    return out


__all__ = ["EVIDENCE_METRICS", "ROLE_CODES", "cue_spans", "dialogue_evidence", "first_split", "level_cue_words",
           "mask_spec", "masked_turn_hashes", "placebo_split_positions", "turn_keys"]
