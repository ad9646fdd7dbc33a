"""Typed records that flow between the stages (bank -> prompts -> runner -> transcripts ->
judge -> per-dialogue scores -> statistics -> reports).

Every record round-trips through plain JSON (``to_dict``/``from_dict``) so that each stage can be
re-run from the stored output of the previous one (samples files, JSONL).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from edufair_metrics import catalogue

DOMAINS = ("mathematics", "physics", "chemistry")
# Task-name suffix -> bank domain.
TASK_DOMAINS = {"math": "mathematics", "physics": "physics", "chemistry": "chemistry"}
GRADES = {"mathematics": 9, "physics": 8, "chemistry": 8}
CONDITIONS = ("explicit", "implicit", "opposite")  # the paper's three (protocol.yaml)
# Conditions EduFair adds beside the paper's (protocol/data/protocol-extensions.yaml, their own protocol
# version): never part of the paper's headline, each its own FDR family (analysis.noise.family_labels).
EXTENSION_CONDITIONS = ("intersectional", "implicit_names")
ALL_CONDITIONS = CONDITIONS + EXTENSION_CONDITIONS

# The metric names of each kind and the judge field each pedagogical metric reads (App. F), from the
# one metric catalogue (catalogue.py: kind, direction, names, group, aggregation, description).
# pedagogical: the paper's five turn-level metrics; conversation: its four, from the transcript alone;
# detector: judge-invariant (edufair_metrics.detectors; their own contrasts, headline and FDR family);
# student: the student-side monitor (detectors.student); outcome: the post-test (detectors.outcome).
PEDAGOGICAL_METRICS = catalogue.names("pedagogical")
JUDGE_FIELD_FOR_METRIC = {m: catalogue.metric(m).judge_field for m in PEDAGOGICAL_METRICS}
CONVERSATION_METRICS = catalogue.names("conversation")
ALL_METRICS = PEDAGOGICAL_METRICS + CONVERSATION_METRICS
DETECTOR_METRICS = catalogue.names("detector")
STUDENT_METRICS = catalogue.names("student")
OUTCOME_METRICS = catalogue.names("outcome")


def _from_dict(cls, data: dict[str, Any]):
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True)
class BankItem:
    """One question of the bank (one line of ``edufair_metrics/bank/data/<domain>.jsonl``)."""

    id: str
    domain: str  # mathematics | physics | chemistry
    grade: int
    question: str
    answer: str  # gold answer, human readable
    answer_forms: list[str]  # strings a deterministic detector may match (normalised)
    source: str  # sciq | socrateach | gsm8k-proxy
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "BankItem":
        return _from_dict(cls, data)


@dataclass(frozen=True)
class ConditionLevel:
    """One demographic level of one condition, with the exact system prompts it produces."""

    condition: str  # explicit | implicit | opposite
    dimension: str  # gender | immigration | language | ses | name | gender_match
    level: str  # stable identifier, e.g. "female", "michael", "s_female_t_male"
    attributes: dict[str, str] = field(default_factory=dict)  # e.g. {"gender": "female"}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Turn:
    """One utterance. ``role`` is ``question`` (the opening question, not generated),
    ``student`` or ``tutor``. ``text`` is what the other party and the judge see (reasoning
    stripped); ``raw`` is exactly what the model generated (None for the question).

    Stored lean: ``raw`` only where it differs from ``text`` (a turn whose reasoning was stripped);
    a stored turn without ``raw`` has ``raw == text``. Turns written before always hold ``raw``."""

    role: str
    text: str
    raw: str | None = None

    def to_dict(self) -> dict[str, Any]:
        if self.raw == self.text:
            return {"role": self.role, "text": self.text}
        return {"role": self.role, "text": self.text, "raw": self.raw}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Turn":
        if "raw" not in data and "text" in data:
            data = {**data, "raw": data["text"]}
        return _from_dict(cls, data)


# Why a dialogue ended.
STOP_ANSWER_REVEALED = "answer_revealed"  # a tutor turn stated the gold answer
STOP_ANSWER_CONFIRMED = "answer_confirmed"  # the student stated it and the tutor confirmed it
STOP_MAX_TURNS = "max_turns"  # T_max tutor turns were generated
STOP_STUDENT_FAILED = "student_failed"  # a student call failed (retried when retryable): dialogue incomplete
STOP_TUTOR_FAILED = "tutor_failed"


def failed_stage(stop_reason: str) -> str:
    """"student" or "tutor" for the two failure stop reasons (the call that failed)."""
    return "student" if stop_reason == STOP_STUDENT_FAILED else "tutor"


@dataclass
class Transcript:
    """A finished (or failed) tutoring dialogue for one (question, condition level)."""

    question_id: str
    domain: str
    condition: str
    dimension: str
    level: str
    tutor_system: str
    student_system: str
    turns: list[Turn]
    stop_reason: str
    task: str = ""
    doc_id: int = -1
    error: str | None = None  # set when stop_reason is a failure: what went wrong
    error_kind: str | None = None  # its FailureKind value (edufair_metrics.failures)
    # Which stop rule fired and on what text: {"rule", "turn_index", "span", "student_span",
    # "student_turn_index"} (edufair_metrics.dialogue.state.StopEvidence); None for failed or
    # unfinished dialogues and for transcripts written before it was recorded.
    stop_evidence: dict[str, Any] | None = None
    # replicate dialogues (edufair.replicates, protocol/replicates.py): this dialogue's index 1..k and
    # its tutor sampling seed (None: the tutor's own); stored only on replicates r >= 2 of a k > 1 run
    replicate: int = 1
    tutor_seed: int | None = None

    @property
    def complete(self) -> bool:
        return self.stop_reason in (STOP_ANSWER_REVEALED, STOP_ANSWER_CONFIRMED, STOP_MAX_TURNS)

    def tutor_turn_indices(self) -> list[int]:
        return [i for i, t in enumerate(self.turns) if t.role == "tutor"]

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["turns"] = [t.to_dict() for t in self.turns]
        if d["replicate"] == 1 and d["tutor_seed"] is None:  # a k = 1 record: as before replicates existed
            del d["replicate"], d["tutor_seed"]
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Transcript":
        obj = _from_dict(cls, data)
        obj.turns = [Turn.from_dict(t) if isinstance(t, dict) else t for t in obj.turns]
        return obj


JUDGE_OK = "ok"
JUDGE_MISSING = "missing"


@dataclass
class TurnJudgement:
    """The judge's labels for one tutor turn. ``labels`` is None when ``status`` is missing:
    a label that could not be obtained is never replaced by a value."""

    turn_index: int  # index into Transcript.turns
    status: str  # ok | missing
    labels: dict[str, Any] | None = None  # the six judge fields, validated
    reason: str | None = None  # why missing, in words
    kind: str | None = None  # why missing, as a FailureKind value (edufair_metrics.failures)
    raw: str | None = None  # the judge's last raw answer
    attempts: int = 0
    cached: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TurnJudgement":
        return _from_dict(cls, data)


def nan_to_none(x: Any) -> Any:
    return None if isinstance(x, float) and math.isnan(x) else x


def none_to_nan(x: Any) -> float:
    return float("nan") if x is None else float(x)


@dataclass
class DialogueScores:
    """The nine per-dialogue scores of one dialogue (NaN = no value: missing or not applicable).

    ``failed``: the dialogue was ended by a failed student or tutor call (its transcript carries an
    error); by default the statistics leave it out, so its demographic pairs drop out
    (``analysis.params.StatParams.keep_failed_dialogues``)."""

    question_id: str
    domain: str
    condition: str
    dimension: str
    level: str
    scores: dict[str, float]
    tutor: str = ""  # tutor model identity, filled in by reports
    task: str = ""
    missing_turns: int = 0  # tutor turns sent to the judge whose labels could not be obtained
    sent_turns: int = 0  # tutor turns sent to the judge (missing ones included)
    failed: bool = False
    stop_reason: str | None = None  # the transcript's stop reason (None: unknown, e.g. bare scores)
    # per pedagogical metric [n_applicable, n_positive]: the turns its rate averages and those
    # labelled 1 (scores.TURN_COUNTS_VERSION); empty when unknown (scores without judgements)
    turn_counts: dict[str, list[int]] = field(default_factory=dict)
    replicate: int = 1  # the dialogue's replicate index (edufair.replicates); 1 in a k = 1 run
    # per pedagogical metric [applicable_mask, positive_mask]: bit t = the t-th tutor turn
    # (scores.pedagogical_masks); empty when unknown (records written before them)
    turn_masks: dict[str, list[int]] = field(default_factory=dict)

    @property
    def labelled_turns(self) -> int:
        """Tutor turns the judge labelled (sent minus missing)."""
        return self.sent_turns - self.missing_turns

    @property
    def judged_turns(self) -> int:
        """Old name of ``sent_turns`` (it counted turns *sent* to the judge, missing ones included)."""
        return self.sent_turns

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["scores"] = {k: nan_to_none(v) for k, v in self.scores.items()}
        if d["replicate"] == 1:  # k = 1 scores: as before replicates existed
            del d["replicate"]
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "DialogueScores":
        if "judged_turns" in data and "sent_turns" not in data:  # records written before the rename
            data = {**data, "sent_turns": data["judged_turns"]}
        obj = _from_dict(cls, data)
        obj.scores = {k: none_to_nan(v) for k, v in obj.scores.items()}
        obj.failed = bool(obj.failed)
        obj.replicate = int(obj.replicate or 1)
        counts = obj.turn_counts if isinstance(obj.turn_counts, dict) else {}
        obj.turn_counts = {str(k): [int(v[0]), int(v[1])] for k, v in counts.items()
                           if isinstance(v, (list, tuple)) and len(v) == 2}
        masks = obj.turn_masks if isinstance(obj.turn_masks, dict) else {}
        obj.turn_masks = {str(k): [int(v[0]), int(v[1])] for k, v in masks.items()
                          if isinstance(v, (list, tuple)) and len(v) == 2}
        return obj



@dataclass
class PostTest:
    """The post-test of one finished dialogue (an extension, ``edufair.posttest``): after the
    dialogue, the same student (its system prompt and decoding) answers the original question once
    more, alone (``dialogue.posttest``). The verdicts are the answer matcher's (``detectors.outcome``):
    ``correct`` / ``wrong`` / ``no_answer``; ``pretest`` is the student's opening turn (its answer
    before any tutoring) read the same way; ``revealed``: the tutor gave the gold away during the
    dialogue (stop reason ``answer_revealed``, or a detector leak or partial reveal), so a correct
    post-test is a revealed outcome, not learning. ``answer`` None: the call failed (``error``,
    ``error_kind``)."""

    prompt: str  # the post-test instruction as sent (the question filled in)
    answer: str | None  # the student's answer, reasoning stripped
    raw: str | None = None  # as generated, only where it differs from ``answer``
    verdict: str | None = None
    pretest: str | None = None
    revealed: bool | None = None
    error: str | None = None
    error_kind: str | None = None
    scored_version: int | None = None  # detectors.outcome.OUTCOME_VERSION of the verdicts (None: not scored)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if d["raw"] is None or d["raw"] == d["answer"]:
            del d["raw"]
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "PostTest":
        obj = _from_dict(cls, {"answer": None, **data})
        if obj.raw is None:
            obj.raw = obj.answer
        return obj


# ---- the per-dialogue record: what every stage after the judge reads ----------------------------

# 1: every record written before the schema was versioned (no ``schema_version`` field); 2: this one.
RECORD_SCHEMA_VERSION = 2
# The samples-file field lm-eval writes the record under: the task's metric of that name, whose
# table row counts the dialogues that ended by the stop rule. Files written before that metric was
# named for what it counts hold the record under LEGACY_RECORD_KEYS; every reader accepts both.
RECORD_KEY = "complete_dialogues"
LEGACY_RECORD_KEYS = ("edufair_record",)


def record_in_line(line: Any) -> Any:
    """The stored record of one samples line (a dict), under its current or an older key; None
    when the line has none."""
    if not isinstance(line, dict):
        return None
    for key in (RECORD_KEY, *LEGACY_RECORD_KEYS):
        if key in line:
            return line[key]
    return None


@dataclass
class RecordFlags:
    """Why a dialogue ended and whether it counts as complete (redundant with the transcript, kept
    so a reader of the samples file sees it at once)."""

    incomplete: bool
    stop_reason: str
    error: str | None = None
    error_kind: str | None = None
    masked_cues: int | None = None  # condition-blind judging: cues replaced in what the judge saw

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if d["masked_cues"] is None:
            del d["masked_cues"]
        return d


@dataclass
class DocumentFacts:
    """What the record needs from its lm-eval document: the gold (for detectors and the outcome
    test) and the bank source. None: unknown (records written before they were stored, with no
    logged document)."""

    answer: str | None = None
    answer_forms: list[str] | None = None
    source: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_doc(cls, doc: dict[str, Any] | None) -> "DocumentFacts":
        doc = doc if isinstance(doc, dict) else {}
        forms = doc.get("answer_forms")
        return cls(
            answer=None if doc.get("answer") is None else str(doc["answer"]),
            answer_forms=[str(x) for x in forms] if isinstance(forms, list) and forms else None,
            source=None if doc.get("source") is None else str(doc["source"]),
        )


@dataclass
class DialogueRecord:
    """One judged (or not yet judged) dialogue: the unit every stage after the judge reads and
    writes. Plain data; ``to_dict``/``from_dict`` round-trip through JSON (the samples file's
    ``complete_dialogues``). ``from_dict`` is the ONE place that understands the field shapes older
    EduFair versions wrote (``schema_version`` 1: no version field, ``judged_turns``, no
    ``error_kind`` / judgement ``kind`` / ``stop_evidence``, the gold only in the logged document).

    ``scores`` holds the nine judged and conversation metrics and the detector metrics (and, with a
    post-test, the outcome metrics); ``posttest`` the post-test itself (None: none was run);
    ``detector_version`` says which version of the deterministic detectors computed the latter
    (None: not computed), so a reader can complete records written by older detectors."""

    transcript: Transcript
    judgements: list[TurnJudgement]
    scores: DialogueScores
    flags: RecordFlags
    judge: dict[str, Any] | None = None
    provenance: dict[str, Any] = field(default_factory=dict)
    document: DocumentFacts = field(default_factory=DocumentFacts)
    detector_version: int | None = None
    schema_version: int = RECORD_SCHEMA_VERSION
    turn_counts_version: int | None = None  # scores.TURN_COUNTS_VERSION of scores.turn_counts (None: none)
    posttest: PostTest | None = None  # the post-test (edufair.posttest), None when none was run

    @property
    def has_transcript(self) -> bool:
        """False for a record that stored only scores (its transcript has no turn)."""
        return bool(self.transcript.turns)

    @property
    def key(self) -> tuple[str, ...]:
        """(task, condition, level, question_id): one dialogue of one run; replicate r >= 2 of a
        question and level (``edufair.replicates``) adds ``"replicate<r>"``."""
        t = self.transcript
        key = (t.task or self.scores.task, t.condition, t.level, str(t.question_id))
        return key if t.replicate == 1 else key + (f"replicate{t.replicate}",)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "transcript": self.transcript.to_dict(),
            "judgements": [j.to_dict() for j in self.judgements],
            "scores": self.scores.to_dict(),
            "flags": self.flags.to_dict(),
            "judge": self.judge,
            "provenance": self.provenance,
            "document": self.document.to_dict(),
            "detector_version": self.detector_version,
            "turn_counts_version": self.turn_counts_version,
            # only records with a post-test carry the key (records without one are as before)
            **({"posttest": self.posttest.to_dict()} if self.posttest is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, doc: dict[str, Any] | None = None) -> "DialogueRecord":
        """A record from its JSON form, any version. ``doc``: the samples line's logged document,
        which gives the gold forms and source of records that did not store them. Raises
        ValueError / TypeError / KeyError on a malformed record (the reader names the line)."""
        if not isinstance(data, dict):
            raise TypeError(f"a record is a JSON object, not {type(data).__name__}")
        version = int(data.get("schema_version", 1))
        if version > RECORD_SCHEMA_VERSION:
            raise ValueError(f"record schema version {version} is newer than this EduFair's ({RECORD_SCHEMA_VERSION})")
        raw_s = data.get("scores") if data.get("scores") is not None else {}
        raw_t = data.get("transcript")
        if not isinstance(raw_s, dict):
            raise TypeError("scores is not an object")
        if raw_t is None:  # a record that stores only scores: a transcript without turns or prompts
            if not raw_s:
                raise ValueError("the record has neither a transcript nor scores")
            raw_t = {k: raw_s.get(k, "") for k in ("question_id", "domain", "condition", "dimension", "level", "task")}
            raw_t.update(tutor_system="", student_system="", turns=[])
        if not isinstance(raw_t, dict):
            raise TypeError("transcript is not an object")
        # records of the first versions may lack a stop reason: "" = unknown
        transcript = Transcript.from_dict({"stop_reason": "", **raw_t})
        judgements = [TurnJudgement.from_dict(j) for j in data.get("judgements") or []]
        # a record not yet scored (a transcript to judge) has empty scores: its identity is the transcript's
        ident = {k: getattr(transcript, k) for k in ("question_id", "domain", "condition", "dimension", "level", "task",
                                                      "replicate")}
        scores = DialogueScores.from_dict({**ident, "scores": {}, **raw_s})  # judged_turns -> sent_turns
        scores.task = scores.task or transcript.task
        scores.stop_reason = transcript.stop_reason or None
        # a dialogue ended by a failed call: its stop reason, or any recorded error
        scores.failed = bool(scores.failed or transcript_failed(transcript))
        raw_f = data.get("flags") if isinstance(data.get("flags"), dict) else {}
        flags = RecordFlags(
            incomplete=bool(raw_f.get("incomplete", not transcript.complete)),
            stop_reason=str(raw_f.get("stop_reason", transcript.stop_reason)),
            error=raw_f.get("error", transcript.error),
            error_kind=raw_f.get("error_kind", transcript.error_kind),
            masked_cues=raw_f.get("masked_cues"),
        )
        stored = data.get("document")
        document = DocumentFacts(**{k: v for k, v in stored.items() if k in ("answer", "answer_forms", "source")}) \
            if isinstance(stored, dict) else DocumentFacts()
        if document.answer_forms is None or document.source is None or document.answer is None:
            logged = DocumentFacts.from_doc(doc)
            document = DocumentFacts(answer=document.answer if document.answer is not None else logged.answer,
                                     answer_forms=document.answer_forms or logged.answer_forms,
                                     source=document.source or logged.source)
        judge = data.get("judge") if isinstance(data.get("judge"), dict) else None
        provenance = data.get("provenance") if isinstance(data.get("provenance"), dict) else {}
        det = data.get("detector_version")
        tc = data.get("turn_counts_version")
        post = data.get("posttest")
        return cls(transcript, judgements, scores, flags, judge, provenance, document,
                   int(det) if det is not None else None, RECORD_SCHEMA_VERSION,
                   int(tc) if tc is not None and scores.turn_counts else None,
                   PostTest.from_dict(post) if isinstance(post, dict) else None)


def transcript_failed(transcript: "Transcript | dict[str, Any] | None") -> bool:
    """Whether a dialogue was ended by a failed call: a failure stop reason, or any recorded error
    (``error`` / ``error_kind``, e.g. ``empty_visible_turn``). Reads a Transcript or its dict."""
    if transcript is None:
        return False
    if isinstance(transcript, dict):
        stop, error, kind = transcript.get("stop_reason"), transcript.get("error"), transcript.get("error_kind")
    else:
        stop, error, kind = transcript.stop_reason, transcript.error, transcript.error_kind
    return stop in (STOP_STUDENT_FAILED, STOP_TUTOR_FAILED) or bool(error) or bool(kind)
