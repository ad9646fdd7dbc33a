"""Typed records that flow between the stages (bank -> prompts -> runner -> transcripts ->
judge -> per-dialogue scores -> statistics -> reports).

Every record round-trips through plain JSON (``to_dict``/``from_dict``) so that each stage can be
re-run from the stored output of the previous one (samples files, JSONL).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import math
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from edufair_metrics import catalogue

DOMAINS = ("mathematics", "physics", "chemistry")
# Task-name suffix -> bank domain.
TASK_DOMAINS = {"math": "mathematics", "physics": "physics", "chemistry": "chemistry"}
GRADES = {"mathematics": 9, "physics": 8, "chemistry": 8}


def _protocol_conditions(name: str) -> tuple[str, ...]:
    """The condition names of one of the packaged protocol data files, in its order (read here,
    not through ``protocol/``, which imports this module)."""
    import yaml

    path = Path(__file__).resolve().parent / "protocol" / "data" / name
    return tuple((yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("conditions") or ())


# The paper's three (protocol/data/protocol.yaml) and those EduFair adds beside them
# (protocol/data/protocol-extensions.yaml, their own protocol version: never part of the paper's
# headline, each its own FDR family, analysis.noise.family_labels), read from the protocol data: a
# condition added there is known everywhere without a line of code here.
CONDITIONS = _protocol_conditions("protocol.yaml")
EXTENSION_CONDITIONS = _protocol_conditions("protocol-extensions.yaml")
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


@functools.lru_cache(maxsize=None)
def _field_names(cls) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls))


def _from_dict(cls, data: dict[str, Any]):
    names = _field_names(cls)
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
    # which outcome definition scored the verdicts: the record's ``scorers["outcome"]`` (schema v3;
    # schema v2 stored it here as ``scored_version``, read by DialogueRecord.from_dict)

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

# 1: every record written before the schema was versioned (no ``schema_version`` field); 2: one
# untyped provenance dict per record and three version counters (``detector_version``,
# ``turn_counts_version``, ``posttest.scored_version``); 3: this one (a typed run header once per
# task, the record's own provenance delta, one stamp per dialogue scorer, per-turn scorer output).
RECORD_SCHEMA_VERSION = 3
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


# The run header's fields, in the order a provenance dict lists them (schema v2's order).
_HEADER_ORDER = ("package_version", "protocol_version", "protocol_sha256", "bank", "judge_prompts_sha256", "models",
                 "decoding", "max_tutor_turns", "seeds", "execution")
_HEADER_TAIL = ("replicates", "posttest")


@dataclass(frozen=True)
class RunHeader:
    """The facts of one task run, the same for every dialogue of it (what pooling checks compare):
    versions, the protocol and judge-prompt hashes, the bank, each role's identity and decoding,
    seeds, T_max, how the task was split, replicates and the post-test. One object per task
    (``run.run_task``), stored once per samples file and process (``runlog.rewrite.RecordWriter``);
    a record stores only what differs from it (``DialogueRecord.to_dict``). ``extra``: the
    protocol fields of an extension task (``protocol_extensions_sha256``, ``names_draw``) and any
    key another EduFair version wrote, kept as they are."""

    package_version: str | None = None
    protocol_version: str | None = None
    protocol_sha256: str | None = None
    bank: dict[str, Any] | None = None
    judge_prompts_sha256: str | None = None
    models: dict[str, Any] = field(default_factory=dict)
    decoding: dict[str, Any] = field(default_factory=dict)
    max_tutor_turns: Any = None
    seeds: dict[str, Any] = field(default_factory=dict)
    execution: dict[str, Any] | None = None
    replicates: int | None = None  # dialogues per question and level (None: 1)
    posttest: dict[str, Any] | None = None  # the post-test's protocol fields (None: no post-test)
    extra: dict[str, Any] = field(default_factory=dict)
    # which keys the provenance it came from held (a header read from an older record may lack some)
    present: frozenset[str] = frozenset()

    @classmethod
    def from_provenance(cls, prov: dict[str, Any]) -> "RunHeader":
        prov = copy.deepcopy(prov or {})
        named = {f.name for f in fields(cls)} - {"extra", "present"}
        kwargs = {k: prov[k] for k in named if k in prov}
        for k in ("models", "decoding", "seeds"):
            if kwargs.get(k) is None:
                kwargs.pop(k, None)
        return cls(**kwargs, extra={k: v for k, v in prov.items() if k not in named}, present=frozenset(prov))

    def to_provenance(self) -> dict[str, Any]:
        """The header as a provenance dict (schema v2's shape: the keys it was made from), a fresh copy."""
        text = self._provenance_json
        return json.loads(text) if text is not None else self._provenance()

    @functools.cached_property
    def _provenance_json(self) -> str | None:
        # a JSON copy is several times faster than deepcopy (one per record read); None when the
        # provenance does not survive JSON as it is (tuples, non-string keys)
        prov = self._provenance()
        try:
            text = json.dumps(prov, ensure_ascii=False)
        except (TypeError, ValueError):
            return None
        return text if json.loads(text) == prov else None

    def _provenance(self) -> dict[str, Any]:
        present = self.present or frozenset(k for k in _HEADER_ORDER + _HEADER_TAIL if getattr(self, k) not in (None, {}))
        out: dict[str, Any] = {}
        for k in _HEADER_ORDER:
            if k in present:
                out[k] = copy.deepcopy(getattr(self, k))
        out.update(copy.deepcopy(self.extra))
        for k in _HEADER_TAIL:
            if k in present:
                out[k] = copy.deepcopy(getattr(self, k))
        return out

    def to_dict(self) -> dict[str, Any]:
        return self.to_provenance()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RunHeader":
        return cls.from_provenance(data)

    @functools.cached_property
    def digest(self) -> str:
        """A short hash of the header: what a record's ``{"ref": ...}`` names."""
        text = json.dumps(self._provenance(), sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


_UNSET = "_unset"  # a provenance delta's list of header keys the record does not have


def provenance_delta(full: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    """What ``full`` adds to or changes in ``base`` (nested dicts compared key by key), and under
    ``"_unset"`` the keys of ``base`` that ``full`` lacks; ``merge_provenance(base, delta) == full``."""
    out: dict[str, Any] = {}
    for k, v in full.items():
        if k not in base:
            out[k] = copy.deepcopy(v)
        elif isinstance(v, dict) and isinstance(base[k], dict) and v != base[k]:
            out[k] = provenance_delta(v, base[k])
        elif v != base[k] or type(v) is not type(base[k]):
            out[k] = copy.deepcopy(v)
    unset = [k for k in base if k not in full]
    if unset:
        out[_UNSET] = unset
    return out


def merge_provenance(base: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``delta`` (:func:`provenance_delta`) applied; key order: the base's, then added keys."""
    return _apply_delta(copy.deepcopy(base), delta)


def _apply_delta(out: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    """:func:`merge_provenance` into ``out`` itself (a fresh copy of the base)."""
    if not delta:
        return out
    for k in delta.get(_UNSET) or []:
        out.pop(k, None)
    for k, v in delta.items():
        if k == _UNSET:
            continue
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _apply_delta(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


@dataclass(frozen=True)
class ScorerStamp:
    """Which version of a dialogue scorer (``runlog.scorers``) computed a record's values, and
    whether it had the gold answer forms (None: the scorer reads no gold)."""

    version: int
    gold: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version} if self.gold is None else {"version": self.version, "gold": self.gold}

    @classmethod
    def from_dict(cls, data: Any) -> "ScorerStamp":
        if isinstance(data, int) and not isinstance(data, bool):
            return cls(data)
        if not isinstance(data, dict) or not isinstance(data.get("version"), int):
            raise ValueError(f"a scorer stamp is {{'version': int, 'gold': bool}}, not {data!r}")
        gold = data.get("gold")
        return cls(int(data["version"]), None if gold is None else bool(gold))


@dataclass
class DialogueRecord:
    """One judged (or not yet judged) dialogue: the unit every stage after the judge reads and
    writes. Plain data; ``to_dict``/``from_dict`` round-trip through JSON (the samples file's
    ``complete_dialogues``). ``from_dict`` is the ONE place that understands the field shapes older
    EduFair versions wrote (``schema_version`` 1: no version field, ``judged_turns``, no
    ``error_kind`` / judgement ``kind`` / ``stop_evidence``, the gold only in the logged document;
    2: the whole provenance in every record, three version counters).

    ``scores`` holds the values of the dialogue scorers (``runlog.scorers``: the judge's five
    rates, the conversation metrics, the detector and student metrics and, with a post-test, the
    outcome metrics); ``scorers`` which version of each computed them; ``per_turn`` each scorer's
    turn-level output (the detectors' hits per tutor turn, the student monitor's labels per
    student turn). ``run``: the task's run header (shared by its records); ``provenance``: the
    record's full provenance, the header with the record's own delta applied (what every reader
    uses); ``posttest`` the post-test itself (None: none was run)."""

    transcript: Transcript
    judgements: list[TurnJudgement]
    scores: DialogueScores
    flags: RecordFlags
    judge: dict[str, Any] | None = None
    provenance: dict[str, Any] = field(default_factory=dict)
    document: DocumentFacts = field(default_factory=DocumentFacts)
    scorers: dict[str, ScorerStamp] = field(default_factory=dict)
    schema_version: int = RECORD_SCHEMA_VERSION
    posttest: PostTest | None = None  # the post-test (edufair.posttest), None when none was run
    run: RunHeader | None = None
    per_turn: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def has_transcript(self) -> bool:
        """False for a record that stored only scores (its transcript has no turn)."""
        return bool(self.transcript.turns)

    @property
    def detector_version(self) -> int | None:
        """Schema v2's name: the version of the detectors that computed the detector metrics."""
        stamp = self.scorers.get("detectors")
        return stamp.version if stamp is not None else None

    @property
    def turn_counts_version(self) -> int | None:
        """Schema v2's name: the version of the judge scorer's turn counts (None: none)."""
        stamp = self.scorers.get("judge")
        return stamp.version if stamp is not None and self.scores.turn_counts else None

    @property
    def key(self) -> tuple[str, ...]:
        """(task, condition, level, question_id): one dialogue of one run; replicate r >= 2 of a
        question and level (``edufair.replicates``) adds ``"replicate<r>"``."""
        t = self.transcript
        key = (t.task or self.scores.task, t.condition, t.level, str(t.question_id))
        return key if t.replicate == 1 else key + (f"replicate{t.replicate}",)

    def header(self) -> RunHeader:
        """The run header this record is stored against: ``run``, or one made from its provenance."""
        return self.run if self.run is not None else RunHeader.from_provenance(self.provenance)

    def to_dict(self, *, header: RunHeader | None = None, header_ref: bool = False) -> dict[str, Any]:
        """The record's JSON (schema v3). ``header``: the run header it is stored against (default
        :meth:`header`); the record keeps only its provenance delta from it. ``header_ref``: write
        the header as ``{"ref": digest}`` (an earlier line of the same file holds it in full;
        ``runlog.rewrite.RecordWriter``), else in full."""
        head = header if header is not None else self.header()
        return {
            "schema_version": RECORD_SCHEMA_VERSION,
            "transcript": self.transcript.to_dict(),
            "judgements": [j.to_dict() for j in self.judgements],
            "scores": self.scores.to_dict(),
            "flags": self.flags.to_dict(),
            "judge": self.judge,
            "run": {"ref": head.digest} if header_ref else head.to_dict(),
            "provenance": provenance_delta(self.provenance, head.to_provenance()),
            "document": self.document.to_dict(),
            "scorers": {name: stamp.to_dict() for name, stamp in self.scorers.items()},
            **({"per_turn": copy.deepcopy(self.per_turn)} if self.per_turn else {}),
            # only records with a post-test carry the key (records without one are as before)
            **({"posttest": self.posttest.to_dict()} if self.posttest is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, doc: dict[str, Any] | None = None,
                  headers: dict[str, RunHeader] | None = None) -> "DialogueRecord":
        """A record from its JSON form, any version. ``doc``: the samples line's logged document,
        which gives the gold forms and source of records that did not store them. ``headers``: the
        run headers an earlier line of the same file held (digest -> header), for a record whose
        ``run`` is a reference. Raises ValueError / TypeError / KeyError on a malformed record (the
        reader names the line)."""
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
        post = data.get("posttest")
        posttest = PostTest.from_dict(post) if isinstance(post, dict) else None
        delta = data.get("provenance") if isinstance(data.get("provenance"), dict) else {}
        per_turn: dict[str, dict[str, Any]] = {}
        if version >= 3:
            run = _header_of(data.get("run"), headers)
            provenance = _apply_delta(run.to_provenance(), delta) if run is not None else dict(delta)
            raw_stamps = data.get("scorers") if isinstance(data.get("scorers"), dict) else {}
            stamps = {str(k): ScorerStamp.from_dict(v) for k, v in raw_stamps.items()}
            raw_turns = data.get("per_turn")
            if isinstance(raw_turns, dict):
                per_turn = {str(k): v for k, v in raw_turns.items() if isinstance(v, dict)}
        else:  # schema 1 and 2: the whole provenance in the record (its header made when needed: header())
            provenance = delta
            run = None
            stamps = _legacy_stamps(data, transcript, scores, posttest)
        return cls(transcript, judgements, scores, flags, judge, provenance, document, stamps, RECORD_SCHEMA_VERSION,
                   posttest, run, per_turn)


def _header_of(raw: Any, headers: dict[str, RunHeader] | None) -> RunHeader | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise TypeError("run is not an object")
    if set(raw) == {"ref"}:
        found = (headers or {}).get(str(raw["ref"]))
        if found is None:
            raise ValueError(f"the record refers to run header {raw['ref']}, which no earlier line of its file holds")
        return found
    head = RunHeader.from_dict(raw)
    return (headers or {}).get(head.digest, head)


def _legacy_stamps(data: dict[str, Any], transcript: Transcript, scores: DialogueScores,
                   posttest: PostTest | None) -> dict[str, ScorerStamp]:
    """Schema 1/2's version counters as scorer stamps, so that completing a record does exactly what
    those versions' readers did: the detector and student metrics again when ``detector_version``
    is another, or when the record lacks ``student_correct_answer_rate`` although it has a student
    turn (its metrics were computed without the gold; ``gold`` False); the turn counts when
    ``turn_counts_version`` is missing; the post-test's verdicts by ``posttest.scored_version``.
    The conversation metrics and the judge's rates were never recomputed (version 1)."""
    stamps: dict[str, ScorerStamp] = {"conversation": ScorerStamp(1)}
    det = data.get("detector_version")
    if det is not None:
        lacks_gold = (any(t.role == "student" for t in transcript.turns)
                      and "student_correct_answer_rate" not in scores.scores)
        stamps["detectors"] = ScorerStamp(int(det), not lacks_gold)
        stamps["student"] = ScorerStamp(int(det), not lacks_gold)
    tc = data.get("turn_counts_version")
    if tc is not None and scores.turn_counts:
        stamps["judge"] = ScorerStamp(int(tc))
    raw_post = data.get("posttest")
    if posttest is not None and isinstance(raw_post, dict) and raw_post.get("scored_version") is not None:
        stamps["outcome"] = ScorerStamp(int(raw_post["scored_version"]), posttest.verdict is not None)
    return stamps


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
