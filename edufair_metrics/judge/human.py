"""Human-labelled tutor responses for judge validation (``edufair judge-human``): reading the two
input formats and judging each response with the configured judge (same settings, cache, retries
and progress bar as ``edufair judge``: :func:`edufair_metrics.judge.run.judge_transcripts`).

Formats
    ``mrbench``: the public MRBench / BEA-2025 shared-task JSON, a list of conversations, each with
        ``conversation_id``, ``conversation_history`` ("Tutor: …" / "Student: …" lines; a string or a
        list of lines; a line without a speaker prefix continues the previous utterance) and
        ``anno_llm_responses`` or ``tutor_responses``: {model: {"response", "annotation"}}. One
        item per (conversation, model); the judged turn is the response appended to the history.
        Annotation → EduFair metric: Mistake_Identification → mistake_recognize,
        Revealing_of_the_Answer → answer_leakage, Providing_Guidance → step_scaffolded,
        Actionability → actionability, Tutor_Tone → corrective_tone (Encouraging = 1, Neutral or
        Offensive = 0). "Yes", "Yes (and the answer is correct)" and "Yes (but the answer is
        incorrect)" = 1, "No" = 0, "To some extent" = the ``--partial`` policy (yes → 1, no → 0,
        drop → no value). Other annotation fields (Mistake_Location, Coherence, …) are ignored.
        The gold is not a field: :func:`mrbench_gold` derives it from ``Ground_Truth_Solution``'s
        final "#### N" / "### N" line (MathDial items; None when there is none, e.g. Bridge
        items), and :func:`mrbench_question` takes the question from the opening tutor line ("…
        The question is: …"); both are kept on the item (``gold``, ``question``) for
        ``edufair detector-human``, never shown to the judge.
    ``csv``: EduFair's calibration CSV (UTF-8, header row), one row per judged tutor turn:
        ``item_id`` (required, unique), ``response`` (required: the judged tutor turn),
        ``history`` (optional: earlier turns as "Tutor: …" / "Student: …" lines, as in MRBench),
        ``question`` (optional: the opening question, shown first as the dialogue's question turn),
        ``domain`` (optional, default mathematics; not shown to the judge), ``tutor`` (optional:
        who wrote the response), and one column per labelled EduFair metric, named
        ``mistake_recognize``, ``answer_leakage``, ``step_scaffolded``, ``actionability``,
        ``corrective_tone``, holding 1/0 (also yes/no, true/false), ``partial`` (the ``--partial``
        policy), ``na`` or -1 (not applicable: no value, like the judge's -1) or empty (not labelled).
        At least one metric column must be present.

A dimension missing from a file (or a cell left empty) gives no value: it is skipped, never
counted as 0. An unknown label value is an error naming the file and the item.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edufair_metrics.cache import CachePolicy
from edufair_metrics.errors import EduFairError
from edufair_metrics.io import read_json
from edufair_metrics.judge.run import judge_transcripts
from edufair_metrics.judge.settings import JudgeSettings
from edufair_metrics.protocol.cues import all_cues, mask_transcript
from edufair_metrics.protocol.matching import numbers_in_text, parse_number
from edufair_metrics.records import DOMAINS, JUDGE_FIELD_FOR_METRIC, JUDGE_OK, PEDAGOGICAL_METRICS, Transcript, Turn, TurnJudgement

HUMAN_FORMATS = ("mrbench", "csv")
PARTIAL_POLICIES = ("yes", "no", "drop")
MRBENCH_DIMENSIONS = {
    "Mistake_Identification": "mistake_recognize",
    "Revealing_of_the_Answer": "answer_leakage",
    "Providing_Guidance": "step_scaffolded",
    "Actionability": "actionability",
    "Tutor_Tone": "corrective_tone",
}
HUMAN_CONDITION = "human"  # the Transcript.condition of a human-labelled item (never shown to the judge)

_YES = {"yes", "yes (and the answer is correct)", "yes (but the answer is incorrect)", "1", "true"}
_NO = {"no", "0", "false"}
_PARTIAL = {"to some extent", "partial", "partially"}
_NA = {"na", "n/a", "-1"}
_TONE = {"encouraging": 1, "neutral": 0, "offensive": 0}
_SPEAKER_RE = re.compile(r"^\s*(tutor|teacher|student)\s*:\s?", re.IGNORECASE)


class OneTurnTranscript(Transcript):
    """A transcript whose last turn is the only one sent to the judge: the tutor lines of the
    history are context (already said), not responses under evaluation."""

    def tutor_turn_indices(self) -> list[int]:
        return [len(self.turns) - 1]


@dataclass(frozen=True)
class HumanItem:
    """One human-labelled tutor response."""

    item_id: str
    tutor: str
    transcript: OneTurnTranscript
    human: dict[str, int | None]  # EduFair metric -> 0/1, None = no value (not annotated, N/A, dropped)
    human_raw: dict[str, str] = field(default_factory=dict)  # metric -> the label as written
    # the conversation the response belongs to (its responses share a history): the cluster that
    # agreement bootstraps resample; defaults to the item itself
    conversation: str = ""
    gold: str | None = None  # the gold answer where the file lets one derive it (MRBench: mrbench_gold)
    question: str | None = None  # the item's question where the file gives it (MRBench: mrbench_question)

    @property
    def turn_index(self) -> int:
        return len(self.transcript.turns) - 1


@dataclass(frozen=True)
class HumanSet:
    """The items of a human-labelled file: ``read`` responses in the file, ``merged`` exact
    duplicates counted once, ``kept`` = len(items) (after ``--limit``, ``limited`` responses fewer)."""

    items: list[HumanItem]
    read: int
    merged: int = 0
    limited: int = 0

    @property
    def kept(self) -> int:
        return len(self.items)

    def counts(self) -> dict[str, int]:
        return {"read": self.read, "merged": self.merged, "limited": self.limited, "kept": self.kept}


def label_value(raw: Any, partial: str, *, tone: bool = False, where: str = "") -> int | None:
    """A human label as 0/1, or None for no value. ``tone``: the MRBench Tutor_Tone scale."""
    if partial not in PARTIAL_POLICIES:
        raise EduFairError(f"--partial must be one of {', '.join(PARTIAL_POLICIES)}, got {partial!r}")
    if raw is None:
        return None
    if isinstance(raw, bool):
        return int(raw)
    if isinstance(raw, (int, float)) and raw in (0, 1, -1):
        return None if raw == -1 else int(raw)
    s = re.sub(r"\s+", " ", str(raw)).strip().casefold()
    if s == "":
        return None
    if tone and s in _TONE:
        return _TONE[s]
    if not tone:
        if s in _YES:
            return 1
        if s in _NO:
            return 0
        if s in _PARTIAL:
            return {"yes": 1, "no": 0, "drop": None}[partial]
        if s in _NA:
            return None
    raise EduFairError(f"{where}: unknown label {raw!r}" + (" (Tutor_Tone is Encouraging, Neutral or Offensive)" if tone else ""))


def parse_history(history: Any, where: str) -> list[Turn]:
    """"Tutor: …" / "Student: …" lines (a string or a list of strings) as turns."""
    if history is None:
        return []
    if isinstance(history, list):
        if not all(isinstance(x, str) for x in history):
            raise EduFairError(f"{where}: conversation_history must be text or a list of lines")
        lines = [ln for x in history for ln in x.splitlines()]
    elif isinstance(history, str):
        lines = history.splitlines()
    else:
        raise EduFairError(f"{where}: conversation_history must be text or a list of lines")
    turns: list[Turn] = []
    for line in lines:
        m = _SPEAKER_RE.match(line)
        if m:
            role = "student" if m.group(1).lower() == "student" else "tutor"
            turns.append(Turn(role, line[m.end():].strip()))
        elif line.strip():
            if not turns:
                raise EduFairError(f"{where}: history line without a 'Tutor:' or 'Student:' prefix: {line.strip()[:60]!r}")
            turns[-1].text = (turns[-1].text + "\n" + line.strip()).strip()
    return turns


_GOLD_LINE = re.compile(r"^\s*#{3,4}\s*(?P<value>\S.*?)\s*$")
_QUESTION_IN_OPENING = re.compile(r"\bthe\s+question\s+is\s*:\s*(?P<question>.+)$", re.IGNORECASE | re.DOTALL)


def mrbench_gold(solution: Any) -> str | None:
    """The gold of an MRBench item: the number on ``Ground_Truth_Solution``'s final "#### N" /
    "### N" line (GSM8K / MathDial style; "#### 1,200" -> "1200", "### $18" -> "18", "#### 3/4"
    -> "0.75"). None when
    there is no such line or it does not hold exactly one number."""
    if not isinstance(solution, str):
        return None
    lines = [ln for ln in solution.splitlines() if ln.strip()]
    m = _GOLD_LINE.match(lines[-1]) if lines else None
    if not m:
        return None
    v = parse_number(m.group("value"))
    if v is None:
        values = numbers_in_text(m.group("value").replace("$", " "))
        if len(values) != 1:
            return None
        v = values[0]
    return str(v.numerator) if v.denominator == 1 else format(float(v), "g")


def mrbench_question(history: list[Turn]) -> str | None:
    """The question an MRBench (MathDial) conversation opens with: the text after "The question
    is:" in its first tutor line, or None."""
    first = next((t for t in history if t.role == "tutor"), None)
    m = _QUESTION_IN_OPENING.search(first.text) if first is not None else None
    return m.group("question").strip() if m else None


def _transcript(item_id: str, tutor: str, domain: str, turns: list[Turn], response: str) -> OneTurnTranscript:
    return OneTurnTranscript(
        question_id=item_id, domain=domain, condition=HUMAN_CONDITION, dimension="", level=tutor,
        tutor_system="", student_system="", turns=[*turns, Turn("tutor", response)], stop_reason="max_turns",
    )


def _content_key(history: list[Turn], response: str, annotation: dict[str, Any]) -> str:
    """A short hash of what makes a response an item: its history, its text and its labels."""
    body = json.dumps([[(t.role, t.text) for t in history], response, annotation], sort_keys=True, ensure_ascii=False,
                      default=str)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()[:10]


def load_mrbench(path: str | Path, partial: str = "yes") -> "HumanSet":
    """The items of an MRBench / BEA-2025 file. The public MRBench V1 file uses some
    ``conversation_id`` values for two different conversations (other responses under the same
    tutor names), so an item is keyed by its conversation, tutor and content: ``cid/model`` when
    that pair occurs with one content, else ``cid/model#<hash>`` per distinct content (hash of
    history, response and labels). An exact duplicate (same history, response and labels under the
    same id and tutor) is counted once (``merged``)."""
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, list):
        raise EduFairError(f"{path}: expected a JSON list of conversations (MRBench / BEA-2025 format)")
    # (cid, model) -> {content hash: (conversation position, model, history, entry)}, in file order
    found: dict[tuple[str, str], dict[str, tuple[int, list[Turn], dict[str, Any]]]] = {}
    golds: dict[int, str | None] = {}
    read = 0
    for k, conv in enumerate(data):
        where = f"{path}: conversation {k}"
        if not isinstance(conv, dict) or "conversation_id" not in conv:
            raise EduFairError(f"{where}: not an object with a conversation_id")
        cid = str(conv["conversation_id"])
        where = f"{path}: conversation {cid}"
        responses = conv.get("anno_llm_responses", conv.get("tutor_responses"))
        if not isinstance(responses, dict):
            raise EduFairError(f"{where}: no anno_llm_responses / tutor_responses mapping")
        history = parse_history(conv.get("conversation_history"), where)
        golds[k] = mrbench_gold(conv.get("Ground_Truth_Solution"))
        for model, entry in responses.items():
            w = f"{where}, {model}"
            if not isinstance(entry, dict) or not isinstance(entry.get("response"), str):
                raise EduFairError(f"{w}: no response text")
            ann = entry.get("annotation") or {}
            if not isinstance(ann, dict):
                raise EduFairError(f"{w}: annotation is not an object")
            read += 1
            key = _content_key(history, entry["response"], ann)
            found.setdefault((cid, str(model)), {}).setdefault(key, (k, history, entry))
    items: list[HumanItem] = []
    for (cid, model), contents in found.items():
        for key, (k, history, entry) in contents.items():
            item_id = f"{cid}/{model}" if len(contents) == 1 else f"{cid}/{model}#{key}"
            at = f" (position {k})" if len(contents) > 1 else ""
            w = f"{path}: conversation {cid}{at}, {model}"
            ann = entry.get("annotation") or {}
            human: dict[str, int | None] = {}
            raw: dict[str, str] = {}
            for dim, metric in MRBENCH_DIMENSIONS.items():
                if dim in ann:  # a dimension missing from the file stays absent: skipped, not 0
                    human[metric] = label_value(ann[dim], partial, tone=(dim == "Tutor_Tone"), where=f"{w}: {dim}")
                    raw[metric] = "" if ann[dim] is None else str(ann[dim])
            items.append(HumanItem(item_id, model, _transcript(item_id, model, "mathematics", history, entry["response"]),
                                   human, raw, conversation=f"{cid}@{k}", gold=golds[k],
                                   question=mrbench_question(history)))
    items.sort(key=lambda it: (int(it.conversation.rsplit("@", 1)[1]), it.item_id))  # file order
    return HumanSet(items, read=read, merged=read - len(items))


def load_human_csv(path: str | Path, partial: str = "yes") -> HumanSet:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise EduFairError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    cols = reader.fieldnames or []
    for required in ("item_id", "response"):
        if required not in cols:
            raise EduFairError(f"{path}: missing column '{required}' (see edufair judge-human --help)")
    metrics = [m for m in PEDAGOGICAL_METRICS if m in cols]
    if not metrics:
        raise EduFairError(f"{path}: no label column (one or more of {', '.join(PEDAGOGICAL_METRICS)})")
    items: list[HumanItem] = []
    seen: set[str] = set()
    for lineno, row in enumerate(reader, start=2):
        where = f"{path}:{lineno}"
        if None in row:
            raise EduFairError(f"{where}: more cells than header columns")
        item_id = (row.get("item_id") or "").strip()
        if not item_id:
            raise EduFairError(f"{where}: empty item_id")
        if item_id in seen:
            raise EduFairError(f"{where}: duplicate item_id {item_id!r}")
        seen.add(item_id)
        response = row.get("response") or ""
        if not response.strip():
            raise EduFairError(f"{where}: empty response")
        domain = (row.get("domain") or "").strip() or "mathematics"
        if domain not in DOMAINS:
            raise EduFairError(f"{where}: unknown domain {domain!r} (one of {', '.join(DOMAINS)})")
        turns = [Turn("question", row["question"].strip())] if (row.get("question") or "").strip() else []
        turns += parse_history(row.get("history") or "", where)
        tutor = (row.get("tutor") or "").strip()
        human = {m: label_value(row.get(m), partial, where=f"{where}: {m}") for m in metrics}
        raw = {m: (row.get(m) or "").strip() for m in metrics}
        items.append(HumanItem(item_id, tutor, _transcript(item_id, tutor, domain, turns, response), human, raw,
                               conversation=(row.get("conversation_id") or "").strip() or item_id))
    return HumanSet(items, read=len(items))


def load_human_set(path: str | Path, fmt: str, *, partial: str = "yes", limit: int | None = None) -> HumanSet:
    """The human-labelled items of ``path`` in ``fmt`` (mrbench | csv), the first ``limit`` only."""
    if fmt not in HUMAN_FORMATS:
        raise EduFairError(f"--format must be one of {', '.join(HUMAN_FORMATS)}, got {fmt!r}")
    if partial not in PARTIAL_POLICIES:
        raise EduFairError(f"--partial must be one of {', '.join(PARTIAL_POLICIES)}, got {partial!r}")
    if limit is not None and limit < 1:
        raise EduFairError(f"--limit must be >= 1, got {limit}")
    if not Path(path).is_file():
        raise EduFairError(f"no such file: {path}")
    found = load_mrbench(path, partial) if fmt == "mrbench" else load_human_csv(path, partial)
    if not found.items:
        raise EduFairError(f"{path}: no labelled responses")
    if limit and limit < found.kept:
        return HumanSet(found.items[:limit], read=found.read, merged=found.merged, limited=found.kept - limit)
    return found


def judge_metric_value(judgement: TurnJudgement, metric: str) -> int | None:
    """The judge's 0/1 for an EduFair metric; None when the label is missing or N/A (-1)."""
    if judgement.status != JUDGE_OK or judgement.labels is None:
        return None
    v = judgement.labels.get(JUDGE_FIELD_FOR_METRIC[metric])
    return None if v is None or v == -1 or isinstance(v, bool) else int(v)


def judge_human_items(
    items: list[HumanItem],
    *,
    settings: JudgeSettings,
    cache: CachePolicy | None = None,
    progress: bool = True,
    summary: dict[str, Any] | None = None,
) -> tuple[list[TurnJudgement], dict[str, Any]]:
    """One judgement per item (its response turn) and the judge's public settings, exactly as
    ``edufair judge`` would obtain them (the resolved ``settings``, call cache, retries, progress
    bar). With ``mask_cues`` the judge sees the texts with every protocol cue masked; ``summary``
    then gets "masked_cues" (the number of replacements)."""
    settings = JudgeSettings.from_resolved(settings)
    transcripts = [it.transcript for it in items]
    masked = 0
    if settings.mask_cues:  # condition-blind judging: a human set's condition is unknown, so every condition's cues
        cues = all_cues()
        done = [mask_transcript(t, cues) for t in transcripts]
        transcripts, masked = [m.transcript for m in done], sum(m.masked for m in done)
    store = (cache or CachePolicy().resolved()).open()
    try:
        results = judge_transcripts(transcripts, settings, cache=store, progress=progress, summary=summary)
    finally:
        if store is not None:
            store.close()
    if summary is not None and settings.mask_cues:
        summary["masked_cues"] = masked
    return [r[0] for r in results], settings.public_dict()


__all__ = [
    "HUMAN_FORMATS", "MRBENCH_DIMENSIONS", "PARTIAL_POLICIES", "HumanItem", "HumanSet", "OneTurnTranscript", "judge_human_items",
    "judge_metric_value", "label_value", "load_human_csv", "load_human_set", "load_mrbench", "mrbench_gold",
    "mrbench_question", "parse_history",
]
