"""Faithful mathematics split from SocraTeach (SocraticLM) ``SocraTeach_multi.json``.

Schema (reconstructed from SocraTeach's README and loaders, not verified on the real file): a
dict keyed by problem id; each value has ``question``, ``analysis``, ``answer``, ``steps`` and
``dialogues`` (dict ``dialogue id -> list of turns``). Roles are swapped with respect to chat
convention: in a turn ``{"system": ..., "user": ..., "user_type": ...}`` ``system`` is the
TEACHER and ``user`` the STUDENT's reply to it; ``user_type`` describes that reply.

A dialogue passes when (paper §3.1.2):

(i)   it has >= 4 student-tutor exchanges: turns with a non-empty teacher utterance AND a
      non-empty student reply;
(ii)  >= 2 student errors: replies whose ``user_type`` classifies as an error;
(iii) >= 1 correct or partially correct reply after the last error;
(iv)  no explicit ground-truth disclosure: no teacher utterance states the gold answer
      (``matching.mentions_answer``, after removing a verbatim copy of the problem text)
      before the student has stated it in an earlier reply (a reply "states" it when the matcher
      finds the gold value in it, even as an operand). Confirming a student's correct answer is
      therefore not disclosure; revealing it first is.

A problem is kept when at least one of its dialogues passes. ``user_type`` values are not
documented; :func:`classify_user_type` maps them by keywords (checked in this order):
"partial"/"incomplete" -> partial; "incorrect"/"wrong"/"error"/"mistake"/"misconception" ->
error; "correct"/"right" -> correct; anything else -> other. Check this mapping against the
real file before relying on the counts (the paper reports 907 of 35,151 dialogues' problems).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edufair_metrics.protocol.matching import mentions_answer
from edufair_metrics.errors import EduFairError
from edufair_metrics.io import read_json, sha256_file
from edufair_metrics.records import GRADES, BankItem
from edufair_metrics.bank.common import canonical_number, clean_text, item_id, numeric_answer_forms, seeded_sample

SOURCE = "socrateach"
DOMAIN = "mathematics"
HUB_REPO = "ulises-c/SocraTeach_Multi"  # an unverified mirror; needs network
HUB_FILE = "SocraTeach_multi.json"
MIN_EXCHANGES = 4
MIN_ERRORS = 2
MIN_CORRECT_AFTER_LAST_ERROR = 1

FUNNEL_STEPS = (
    "problems", "problems_unparsable_answer", "dialogues", "dialogues_min_exchanges", "dialogues_min_errors",
    "dialogues_correct_after_last_error", "dialogues_no_disclosure", "problems_kept", "sampled",
)
ERROR, PARTIAL, CORRECT, OTHER = "error", "partial", "correct", "other"
_PARTIAL_RE = re.compile(r"partial|incomplete")
_ERROR_RE = re.compile(r"incorrect|wrong|error|mistake|misconception")
_CORRECT_RE = re.compile(r"correct|right")


@dataclass
class DialogueCheck:
    exchanges: int
    errors: int
    correct_after_last_error: int
    disclosure: bool

    @property
    def passes(self) -> bool:
        return (
            self.exchanges >= MIN_EXCHANGES
            and self.errors >= MIN_ERRORS
            and self.correct_after_last_error >= MIN_CORRECT_AFTER_LAST_ERROR
            and not self.disclosure
        )


@dataclass
class SocraTeachResult:
    items: list[BankItem]
    stats: dict[str, Any] = field(default_factory=dict)
    source_file: str = ""
    source_sha256: str | None = None


# ---------------------------------------------------------------- loading


def load_socrateach(path: str | Path) -> tuple[dict[str, Any], str, str | None]:
    """(problems, description, sha256) from a local ``SocraTeach_multi.json`` (or a folder
    holding it), or from the hub when ``path == "hub"``."""
    if str(path) == "hub":
        return _load_hub()
    path = Path(path)
    if path.is_dir():
        path = path / HUB_FILE
    if not path.is_file():
        raise EduFairError(f"SocraTeach file not found: {path}")
    return _parse_file(path), str(path), sha256_file(path)


def _load_hub() -> tuple[dict[str, Any], str, str | None]:
    try:
        from huggingface_hub import hf_hub_download

        local = Path(hf_hub_download(repo_id=HUB_REPO, filename=HUB_FILE, repo_type="dataset"))
    except Exception as exc:  # offline, renamed file, gated repo: all mean "not available"
        raise EduFairError(
            f"cannot fetch {HUB_FILE} from hf://datasets/{HUB_REPO} ({type(exc).__name__}); "
            "download SocraTeach_multi.json from github.com/Ljyustc/SocraticLM and pass its path"
        ) from None
    return _parse_file(local), f"hf://datasets/{HUB_REPO}/{HUB_FILE}", sha256_file(local)


def _parse_file(path: Path) -> dict[str, Any]:
    data = read_json(path)
    if not isinstance(data, dict):
        raise EduFairError(f"{path}: expected a JSON object keyed by problem id (SocraTeach_multi.json)")
    for pid, problem in data.items():
        where = f"{path}: problem {pid!r}"
        if not isinstance(problem, dict):
            raise EduFairError(f"{where} is not an object")
        for key in ("question", "answer"):
            if not isinstance(problem.get(key), (str, int, float)) or isinstance(problem.get(key), bool):
                raise EduFairError(f"{where} has no {key!r}")
        dialogues = problem.get("dialogues")
        if not isinstance(dialogues, (dict, list)):
            raise EduFairError(f"{where} has no 'dialogues' object")
        for did, turns in _dialogue_items(problem):
            if not isinstance(turns, list) or not all(isinstance(t, dict) for t in turns):
                raise EduFairError(f"{where} dialogue {did!r} is not a list of turn objects")
    return data


def _dialogue_items(problem: dict[str, Any]) -> list[tuple[str, Any]]:
    dialogues = problem["dialogues"]
    if isinstance(dialogues, list):
        return [(str(i), d) for i, d in enumerate(dialogues)]
    return list(dialogues.items())


# ---------------------------------------------------------------- filters


def classify_user_type(user_type: Any) -> str:
    s = str(user_type or "").casefold()
    if _PARTIAL_RE.search(s):
        return PARTIAL
    if _ERROR_RE.search(s):
        return ERROR
    if _CORRECT_RE.search(s):
        return CORRECT
    return OTHER


def _text(turn: dict[str, Any], key: str) -> str:
    value = turn.get(key)
    return value.strip() if isinstance(value, str) else ""


def count_exchanges(turns: list[dict[str, Any]]) -> int:
    return sum(1 for t in turns if _text(t, "system") and _text(t, "user"))


def student_labels(turns: list[dict[str, Any]]) -> list[str]:
    """Class of each student reply, in order (turns without a reply are skipped)."""
    return [classify_user_type(t.get("user_type")) for t in turns if _text(t, "user")]


def count_errors(turns: list[dict[str, Any]]) -> int:
    return student_labels(turns).count(ERROR)


def correct_after_last_error(turns: list[dict[str, Any]]) -> int:
    labels = student_labels(turns)
    if ERROR not in labels:
        return 0
    last = len(labels) - 1 - labels[::-1].index(ERROR)
    return sum(1 for lab in labels[last + 1 :] if lab in (CORRECT, PARTIAL))


def tutor_discloses(turns: list[dict[str, Any]], question: str, answer_forms: list[str]) -> bool:
    """True when a teacher utterance states the gold before any earlier student reply did."""
    student_said_it = False
    for turn in turns:
        teacher = _text(turn, "system")
        if question.strip():
            teacher = teacher.replace(question.strip(), " ")  # restating the problem is not disclosure
        if not student_said_it and mentions_answer(teacher, answer_forms, DOMAIN):
            return True
        if mentions_answer(_text(turn, "user"), answer_forms, DOMAIN):
            student_said_it = True
    return False


def check_dialogue(turns: list[dict[str, Any]], question: str, answer_forms: list[str]) -> DialogueCheck:
    return DialogueCheck(
        exchanges=count_exchanges(turns),
        errors=count_errors(turns),
        correct_after_last_error=correct_after_last_error(turns),
        disclosure=tutor_discloses(turns, question, answer_forms),
    )


def parse_answer(answer: Any, where: str = "") -> str:
    """Canonical numeric gold: the whole field, else its last number ("The answer is 18")."""
    text = str(answer)
    try:
        return canonical_number(text, where)
    except EduFairError:
        numbers = re.findall(r"-?\d[\d,]*(?:\.\d+)?", text)
        if not numbers:
            raise
        return canonical_number(numbers[-1], where)


# ---------------------------------------------------------------- build


def build_socrateach(
    problems: dict[str, Any], cap: int | None, seed: int, source_file: str = "", source_sha256: str | None = None
) -> SocraTeachResult:
    stats: dict[str, Any] = {
        "problems": len(problems),
        "problems_unparsable_answer": 0,
        "dialogues": 0,
        "dialogues_min_exchanges": 0,
        "dialogues_min_errors": 0,
        "dialogues_correct_after_last_error": 0,
        "dialogues_no_disclosure": 0,
    }
    candidates = []
    for pid, problem in problems.items():
        question = clean_text(str(problem["question"]))
        try:
            answer = parse_answer(problem["answer"], f"{source_file}: problem {pid!r}: ")
        except EduFairError:
            stats["problems_unparsable_answer"] += 1
            continue
        forms = numeric_answer_forms(answer)
        kept = 0
        dialogues = _dialogue_items(problem)
        for _, turns in dialogues:
            stats["dialogues"] += 1
            check = check_dialogue(turns, str(problem["question"]), forms)
            # Cumulative counts, in the order of the paper's criteria.
            if check.exchanges < MIN_EXCHANGES:
                continue
            stats["dialogues_min_exchanges"] += 1
            if check.errors < MIN_ERRORS:
                continue
            stats["dialogues_min_errors"] += 1
            if check.correct_after_last_error < MIN_CORRECT_AFTER_LAST_ERROR:
                continue
            stats["dialogues_correct_after_last_error"] += 1
            if check.disclosure:
                continue
            stats["dialogues_no_disclosure"] += 1
            kept += 1
        if kept:
            candidates.append((pid, problem, question, answer, forms, kept, len(dialogues)))
    stats["problems_kept"] = len(candidates)
    chosen = seeded_sample(candidates, cap, seed)
    stats["sampled"] = len(chosen)
    items = [
        BankItem(
            id=item_id(DOMAIN, SOURCE, question, answer),
            domain=DOMAIN,
            grade=GRADES[DOMAIN],
            question=question,
            answer=answer,
            answer_forms=forms,
            source=SOURCE,
            meta={
                "socrateach_id": pid,
                "analysis": str(problem.get("analysis", "")),
                "dialogues_total": total,
                "dialogues_passing": kept,
            },
        )
        for pid, problem, question, answer, forms, kept, total in chosen
    ]
    return SocraTeachResult(items=items, stats=stats, source_file=source_file, source_sha256=source_sha256)


def parameters(cap: int | None, seed: int) -> dict[str, Any]:
    return {
        "min_exchanges": MIN_EXCHANGES,
        "min_student_errors": MIN_ERRORS,
        "min_correct_after_last_error": MIN_CORRECT_AFTER_LAST_ERROR,
        "no_tutor_disclosure": "teacher states gold (matching.mentions_answer) before the student did; problem text removed first",
        "user_type_mapping": "partial|incomplete -> partial; incorrect|wrong|error|mistake|misconception -> error; "
        "correct|right -> correct; else other",
        "problem_kept_if": "at least one dialogue passes",
        "cap": cap,
        "seed": seed,
    }
