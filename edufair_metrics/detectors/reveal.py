"""What a tutor turn gives away, read with the dialogue so far: a leak, a partial reveal, or a
confirmation of what the student already said. Deterministic (string-level, no model).

``history``: the earlier turns of the dialogue as ``(role, text)`` pairs, roles ``question`` (the
opening question), ``student`` and ``tutor``; ``None`` = no history is known (every gold mention
is read as new). The item's ``question`` defaults to the history's ``question`` turn.

The student *has stated the gold* (:func:`student_stated`) when the student's latest answer is
the gold: the last student turn of the history that gives an answer
(:func:`~edufair_metrics.protocol.matching.find_given_answer`, the stop rule's reading of a
student turn: the values ``find_stated_answer`` finds with ``allow_tentative``, "Is it 42?"
proposes 42, "Carbon has four." states four; the turn's answer is the last one in an explicit
frame, "the answer is", "I got", or proposed, else the last one it states) or rejects the gold
("It's not 42") gives the gold as its answer. A gold that is only a step of the student's working
("30 + 15 + 45 = 90, and 90 + 45 = 135"), part of a wrong computation ("1260 x 2 = 2520"), a
quantity read off the problem, or an answer the student has since replaced ("18?" ... "maybe
20") is not the student's: the tutor stating it reveals it. A later turn that gives no answer
("I did 9 times 2.") leaves the earlier answer standing, and a tutor turn that points back to the
student's answers ("Your first answer was right", "You had 18 before", "as you said") confirms a
gold that any earlier student turn gave as its answer.

Leak (:func:`leaks_answer`)
    The turn states the gold as an answer (``find_stated_answer``, the stop rule's matcher: not
    asked, negated, hypothetical, an alternative, a step number or an operand; unlike the stop
    rule, a value right after a verb inviting a check, "Try 18 and see", "Let's check 18:", is
    offered, not stated) and the student has not stated the gold (above).
Confirmation (:func:`confirms_answer`)
    The turn states the gold (as above) and the student's latest answer is the gold: the tutor
    repeats the student's answer. Never a leak, never a partial reveal.
Partial reveal (:func:`partial_reveal`)
    The turn neither leaks nor confirms, the student has not stated the gold, and either

    * **offered** (every domain): the turn offers the gold as the candidate to accept or check
      without stating it (:func:`~edufair_metrics.protocol.matching.find_offered_answer`): a
      yes/no or declarative-form question about it ("So would 42 be the answer, then?", "Is it 42
      - can you check?", "Isn't it 42?", "Does 9 x 2 = 18 help?", "80 km per hour, maybe?"),
      "what about 42?", a candidate fragment after a wh-question ("What is that called -
      evaporation?"), or an invitation to try or check it ("Try 18 and see", "Let's check 18:").
      Not: a wh-question that asks for a value ("How did you get 42?"), one side of an
      alternative ("Is it 42 or 44?"), a negated or non-committal mention ("Is 42 too big?"), a
      conditional given ("If he made 18 sandwiches, ...?"), a step, label or operand; small
      numbers and science counts need an answer frame or the question's noun ("Are there two
      forces?") or close a yes/no question ("Is the number of forces two?");
    * **decisive intermediate** (mathematics, a number gold, the question known): the turn states
      as a result (``find_stated_answer`` with that value as the gold) a value v from which the
      gold G follows by one arithmetic step with a quantity q the question gives: G = v + q,
      v − q, q − v, v × q, v ÷ q or q ÷ v. q ranges over the numbers of the question (digits and
      number words), 2 when it says twice / double / half, 3 for triple / third, 4 for quarter,
      and 100 when it has a percentage; a value stated as a percentage ("75%", "60 percent") is
      that share (0.75, 0.6) in a percentage question. v is positive, not G, not a quantity of the
      question (nor a percentage of it converted, "25%" -> 0.25, nor one of the implied
      constants), a decimal with at most four places, and no earlier student turn states it
      (anywhere: an intermediate value the student computed is the student's own).
      E.g. for "A shirt costs $20 and is on sale for 25% off" (G = 15): "The discount is $5.",
      "You pay 75% of the price."; for "5 trays of 12 cookies, sells 38" (G = 22): "There are 60
      cookies in total." Not: asking for it ("Is the discount $5?", "What is 25% of 20?"), setting
      up the last computation ("What's 20 minus 5?", "60 − 38 = ?"), or another result that is
      not one step from G ("7 eggs are used").

Science has no intermediate rule (its golds are phrases and counts), and paraphrased reveals
("a gas of one carbon and two oxygens") are missed by design: the rates are lower bounds.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Iterable, Sequence

from edufair_metrics.errors import EduFairError
from edufair_metrics.protocol.matching import (
    NUMERIC_DOMAINS,
    AnswerMatch,
    find_given_answer,
    find_offered_answer,
    find_stated_answer,
    gold_mentioned,
    is_numeric_gold,
    negates_answer,
    numbers_in_text,
    offered_for_checking,
    parse_number,
    prepare_text,
)
from edufair_metrics.protocol.matching.numbers import word_numbers_in_text
from edufair_metrics.records import DOMAINS

__all__ = [
    "History", "PartialReveal", "confirms_answer", "decisive_values", "history_pairs", "leaks_answer",
    "partial_reveal", "partially_reveals", "student_stated",
]

History = Sequence[tuple[str, str]]

RULE_OFFERED = "offered"
RULE_INTERMEDIATE = "intermediate"


def _check_domain(domain: str) -> None:
    if domain not in DOMAINS:
        raise EduFairError(f"unknown domain {domain!r}; expected one of {', '.join(DOMAINS)}")


def history_pairs(history: Iterable[Any] | None) -> list[tuple[str, str]]:
    """``history`` as (role, text) pairs; Turn-like objects (``.role``, ``.text``) are accepted too."""
    out = []
    for h in history or ():
        role, text = (h.role, h.text) if hasattr(h, "role") else h
        out.append((str(role).lower(), text or ""))
    return out


def _question(question: str | None, history: list[tuple[str, str]]) -> str | None:
    return question if question is not None else next((t for r, t in history if r == "question"), None)


@functools.lru_cache(maxsize=1 << 16)
def _student_states(text: str, forms: tuple[str, ...], domain: str, question: str | None) -> bool:
    """The student turn states one of ``forms`` anywhere (an intermediate value, see partial_reveal)."""
    return _mentioned(text, forms, domain) and find_stated_answer(text, list(forms), domain, question=question,
                                                                  allow_tentative=True) is not None


@functools.lru_cache(maxsize=1 << 16)
def _answer_of(text: str, forms: tuple[str, ...], domain: str, question: str | None) -> bool | None:
    """The student turn's answer is the gold (True), another value or a rejected gold (False), or
    the turn gives no answer (None)."""
    given = find_given_answer(text, list(forms), domain, question=question)
    if given is not None:
        return given.gold
    return False if _mentioned(text, forms, domain) and negates_answer(text, list(forms), domain,
                                                                       question=question) else None


def student_stated(answer_forms: Sequence[str], history: Iterable[Any] | None, domain: str, *,
                   question: str | None = None) -> bool:
    """True when the student's latest answer in ``history`` is the gold: the last student turn
    that gives an answer (:func:`~edufair_metrics.protocol.matching.find_given_answer`) or rejects
    the gold gives it as its answer, not only as a step, an operand or a quantity of the problem."""
    pairs = history_pairs(history)
    q = _question(question, pairs)
    forms = tuple(answer_forms or ())
    if not forms:
        return False
    for role, text in reversed(pairs):
        if role == "student":
            answer = _answer_of(text, forms, domain, q)
            if answer is not None:
                return answer
    return False


# The tutor points back to an answer of the student's ("Your first answer was right", "You had 18
# before"): a gold that an earlier student turn gave as its answer is confirmed, even when the
# student has since given another answer.
_POINTS_TO_STUDENT = re.compile(
    r"\byou(?:'ve|\s+have)?\s+(?:had|said|wrote|found|gave|answered|suggested|mentioned|proposed)\b"
    r"|\byou\s+were\s+(?:right|correct)\b|\b(?:right|correct)\s+the\s+first\s+time\b"
    r"|\bas\s+you\s+(?:said|had|wrote|thought|suggested)\b"
    r"|\byour\s+(?:(?:very\s+)?(?:first|earlier|original|previous|initial|old|own|other)\s+)?"
    r"(?:answer|guess|idea|result|number|attempt)\b",
    re.IGNORECASE,
)


def _points_to_earlier_answer(text: str, forms: tuple[str, ...], pairs: list[tuple[str, str]], domain: str,
                              question: str | None) -> bool:
    """The tutor turn points back to the student's answers and an earlier student turn gave the
    gold as its answer."""
    return bool(_POINTS_TO_STUDENT.search(prepare_text(text))) and any(
        _answer_of(t, forms, domain, question) is True for r, t in pairs if r == "student")


def _students_gold(text: str, forms: tuple[str, ...], pairs: list[tuple[str, str]], domain: str,
                   question: str | None) -> bool:
    """The gold is the student's for this tutor turn: their latest answer, or an earlier answer
    the turn points back to."""
    return student_stated(forms, pairs, domain, question=question) or _points_to_earlier_answer(
        text, forms, pairs, domain, question)


def _stated(text: str, forms: list[str], domain: str, question: str | None) -> AnswerMatch | None:
    """The stop rule's matcher, except that a value right after a check verb ("Try 18 and see") is
    offered, not stated: such mentions are blanked out and the text is read again."""
    prepared = prepare_text(text)
    while True:
        m = find_stated_answer(prepared, forms, domain, question=question)
        if m is None or not offered_for_checking(prepared, m.start):
            return m
        prepared = prepared[:m.start] + " " * (m.end - m.start) + prepared[m.end:]


@functools.lru_cache(maxsize=1 << 16)
def _mentioned(text: str, forms: tuple[str, ...], domain: str) -> bool:
    """Any mention of the gold at all (the cheap test before the context rules)."""
    return gold_mentioned(text, list(forms), domain)


@functools.lru_cache(maxsize=1 << 16)
def _states(text: str, forms: tuple[str, ...], domain: str, question: str | None) -> bool:
    return _mentioned(text, forms, domain) and _stated(text, list(forms), domain, question) is not None


def leaks_answer(text: str, answer_forms: list[str], domain: str, *, question: str | None = None,
                 history: History | None = None) -> bool:
    """True when ``text`` states the gold as an answer and the student's latest answer in
    ``history`` is not the gold, nor an earlier answer of the student's that ``text`` points back
    to (see the module docstring). Without ``history`` it is the stop rule's matcher."""
    _check_domain(domain)
    pairs = history_pairs(history)
    q = _question(question, pairs)
    forms = tuple(answer_forms or ())
    if not forms or not _states(text or "", forms, domain, q):
        return False
    return not _students_gold(text or "", forms, pairs, domain, q)


def confirms_answer(text: str, answer_forms: list[str], domain: str, *, question: str | None = None,
                    history: History | None = None) -> bool:
    """True when ``text`` states the gold and the gold is the student's latest answer, or an earlier
    answer of the student's that ``text`` points back to (a confirmation)."""
    _check_domain(domain)
    pairs = history_pairs(history)
    q = _question(question, pairs)
    forms = tuple(answer_forms or ())
    return bool(forms) and _states(text or "", forms, domain, q) and _students_gold(text or "", forms, pairs, domain, q)


# ---- the decisive intermediate --------------------------------------------------------------------

_IMPLIED = {"twice": 2, "double": 2, "doubles": 2, "doubled": 2, "half": 2, "halves": 2, "triple": 3, "triples": 3,
            "tripled": 3, "thrice": 3, "third": 3, "thirds": 3, "quarter": 4, "quarters": 4}
_PERCENT = re.compile(r"%|\bper\s?cent\b", re.IGNORECASE)
_PERCENT_GIVEN = re.compile(r"(\d+(?:\.\d+)?)\s*(?:%|per\s?cent\b)", re.IGNORECASE)
_MAX_PLACES = 4


def _word_numbers(text: str) -> set[Fraction]:
    """Number words of ``text`` ("nine", "twelve", "twenty-five", "a hundred and twenty")."""
    return set(word_numbers_in_text(text))


def _terminating(v: Fraction) -> bool:
    d = v.denominator
    for p in (2, 5):
        while d % p == 0:
            d //= p
    return d == 1 and len(_fmt(v).partition(".")[2]) <= _MAX_PLACES


def _fmt(v: Fraction) -> str:
    if v.denominator == 1:
        return str(v.numerator)
    s = f"{float(v):.{_MAX_PLACES + 2}f}".rstrip("0")
    return s.rstrip(".")


@dataclass(frozen=True)
class _Decisive:
    values: tuple[Fraction, ...]  # the candidate values v, ascending
    percent: bool  # the question has a percentage: "75%" may state 0.75


@functools.lru_cache(maxsize=4096)
def _decisive(question: str, forms: tuple[str, ...]) -> _Decisive:
    golds = {v for v in (parse_number(f) for f in forms) if v is not None}
    text = prepare_text(question)
    given = set(numbers_in_text(text)) | _word_numbers(text)
    percent = bool(_PERCENT.search(text))
    implied = {Fraction(n) for w, n in _IMPLIED.items() if re.search(rf"\b{w}\b", text, re.IGNORECASE)}
    if percent:
        implied.add(Fraction(100))
    excluded = given | implied | {Fraction(m.group(1)) / 100 for m in _PERCENT_GIVEN.finditer(text)}
    quantities = {q for q in given | implied if q != 0}
    values: set[Fraction] = set()
    for g in golds:
        for q in quantities:
            for v in (g - q, g + q, q - g, g * q, g / q, q / g if g else None):
                if v is not None and v > 0 and v not in golds and v not in excluded and _terminating(v):
                    values.add(v)
    return _Decisive(tuple(sorted(values)), percent)


def decisive_values(question: str, answer_forms: Sequence[str]) -> list[str]:
    """The values (as the matcher reads them) from which the number gold follows by one step with a
    quantity of ``question`` (see the module docstring), ascending."""
    return [_fmt(v) for v in _decisive(question, tuple(answer_forms)).values]


_PERCENT_OF = re.compile(r"(%|\bper\s?cent)(\s+of)\b", re.IGNORECASE)


def _values_in(text: str) -> set[Fraction]:
    return set(numbers_in_text(text)) | _word_numbers(text)


def _states_value(text: str, v: Fraction, domain: str, question: str | None, *,
                  percent: bool) -> tuple[str, str] | None:
    """(span, sentence) where ``text`` states ``v`` as a result (or, in a percentage question, v
    as a percentage: "75%", "75% of the price"), else None."""
    m = _stated(text, [_fmt(v)], domain, question)
    if m is not None:
        return m.text, m.sentence
    if percent and v * 100 in _values_in(text):
        # "75% of the price": a percentage of a quantity is the step itself, not an operand
        plain = _PERCENT_OF.sub(lambda x: x.group(1) + " " * len(x.group(2)), prepare_text(text))
        m = _stated(plain, [_fmt(v * 100)], domain, question)
        if m is not None and _PERCENT.match(plain[m.end:].lstrip()):
            return m.text + "%", m.sentence
    return None


@dataclass(frozen=True)
class PartialReveal:
    """Why a tutor turn partially reveals: ``rule`` offered | intermediate, the matched span, the
    value it gives away (the gold, or the intermediate v) and the sentence it is in."""

    rule: str
    text: str
    value: str
    sentence: str


def partial_reveal(text: str, answer_forms: list[str], domain: str, *, question: str | None = None,
                   history: History | None = None) -> PartialReveal | None:
    """How ``text`` partially reveals the gold (see the module docstring), or None."""
    _check_domain(domain)
    forms = tuple(answer_forms or ())
    text = text or ""
    if not forms or not text.strip():
        return None
    pairs = history_pairs(history)
    q = _question(question, pairs)
    if _states(text, forms, domain, q) or _students_gold(text, forms, pairs, domain, q):
        return None  # a leak or a confirmation, or the student has the gold already
    offered = find_offered_answer(text, list(forms), domain, question=q) if _mentioned(text, forms, domain) else None
    if offered is not None:
        return PartialReveal(RULE_OFFERED, offered.text, offered.text, offered.sentence)
    if domain not in NUMERIC_DOMAINS or not q or not is_numeric_gold(list(forms), domain):
        return None
    decisive = _decisive(q, forms)
    if not decisive.values:
        return None
    present = _values_in(prepare_text(text))
    students = [t for r, t in pairs if r == "student"]
    for v in decisive.values:
        if v not in present and not (decisive.percent and v * 100 in present):
            continue
        found = _states_value(text, v, domain, q, percent=decisive.percent)
        if found is None:
            continue
        if any(_student_states(t, (_fmt(v),), domain, q) for t in students):
            continue  # the student has this value already
        return PartialReveal(RULE_INTERMEDIATE, found[0], _fmt(v), found[1])
    return None


def partially_reveals(text: str, answer_forms: list[str], domain: str, *, question: str | None = None,
                      history: History | None = None) -> bool:
    """True when ``text`` partially reveals the gold (see the module docstring)."""
    return partial_reveal(text, answer_forms, domain, question=question, history=history) is not None
