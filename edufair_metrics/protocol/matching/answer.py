"""Which value a student turn gives *as its answer* (:func:`find_given_answer`), so that a gold
that is only a step of the student's working ("30 + 15 + 45 = 90, and 90 + 45 = 135"), part of a
wrong computation, or a quantity read off the problem is not taken for the student's answer. The
stop rule's confirmation and the leak detector's history both read a student turn through it.

The values a turn *states* are the stop rule's (:func:`~.stated.find_stated_answer` with
``allow_tentative``: not asked in another question, negated, hypothetical, an alternative, a step
number or an operand; "Is it 42?" proposes 42): the gold and, for a number gold, every other value
the turn states (digits, digits with a glued unit, number words). The turn's answer is

* the last value in an explicit answer frame ("the answer is 135", "my answer: 135", "I got 135",
  "I think it's 135") or proposed by a question ("Is it 135?", "135?"), when there is one;
* otherwise the last value it states ("... 90 + 45 = 135." gives 135, "9 x 2 = 18." gives 18).

A quantity of the question counts only where the turn computes it ("8 - 2 = 6") or gives it in an
explicit frame ("my answer is 6"); read off the problem ("each needs 2 loaves") it is no answer.

A sentence that revises ("Wait, ...", "Oh, ...", "Actually ...", "No, ...", "I mean ...") starts
afresh: only what it and the sentences after it state count. A phrase gold (science) has no other
value the matcher can read: the turn's answer is the gold when the turn states it.

Known limits: a value stated after an unframed answer is read as the answer ("42 pages. That's 35%
of the book." gives 35); number words are read up to 999.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from fractions import Fraction

from edufair_metrics.protocol.matching.numbers import (
    GLUED_UNIT_RE,
    NUMBER_RE,
    WORD_NUMBER_RE,
    numbers_in_text,
    parse_number,
    token_value,
    word_numbers_in_text,
)
from edufair_metrics.protocol.matching.sentences import locate, split_sentences
from edufair_metrics.protocol.matching.stated import (
    AnswerMatch,
    find_stated_answer,
    gold_mentioned,
    is_numeric_gold,
    prepare_text,
)

__all__ = ["GivenAnswer", "find_given_answer"]

# An explicit answer frame right before the value (only filler words and a currency sign between).
_FRAME = (
    r"(?:\b(?:the|my|our|final)?\s*answer(?:'s|\s+is|\s+was|\s+would\s+be|\s+should\s+be|\s+will\s+be|\s+must\s+be)?"
    r"\s*[:=]?|\bi\s+(?:got|get|have|make\s+it)|\bi\s+(?:think|guess|believe|reckon)(?:\s+(?:it'?s|it\s+is|that'?s|"
    r"the\s+answer\s+is))?|\bi'?d\s+say)"
)
_EXPLICIT_FRAME = re.compile(
    _FRAME + r"\s*(?:(?:just|only|exactly|about|around|like|then|still|maybe|probably|um|uh)\s+)*[$\u20ac\u00a3]?\s*$",
    re.IGNORECASE,
)
_FRAME_ANYWHERE = re.compile(_FRAME, re.IGNORECASE)
# The result of a computation in the value's sentence ("8 - 2 = 6", "5 times 4 is 20"): a quantity of
# the question computed, not read off.
_COMPUTED = re.compile(
    r"(?:[\d)]\s*(?:[-+*/^\u00d7\u00f7\u00b7]|x)\s*[$\u20ac\u00a3]?[\d(.]|\b(?:plus|minus|times|divided\s+by|multiplied\s+by|"
    r"take\s+away|less)\b)[^=]*?(?:=|\bis|\bequals|\bgives|\bmakes|\bcomes\s+to)\s*[$\u20ac\u00a3]?\s*$",
    re.IGNORECASE,
)
# A sentence that revises what came before.
_REVISION = re.compile(
    r"^\W*(?:wait|oh|oops|actually|hmm+\W+no|no|sorry|hold\s+on|i\s+mean|on\s+second\s+thought)\b", re.IGNORECASE)


@dataclass(frozen=True)
class GivenAnswer:
    """A student turn's answer: whether it is the gold, whether it was given in an explicit
    frame or proposed (``explicit``), and where (the matcher's span)."""

    gold: bool
    explicit: bool
    match: AnswerMatch


def _fmt(v: Fraction) -> str:
    return str(v.numerator) if v.denominator == 1 else f"{float(v):.6f}".rstrip("0").rstrip(".")


def _stated_all(prepared: str, forms: list[str], domain: str, question: str | None) -> list[AnswerMatch]:
    """Every place where the turn states one of ``forms`` (each found mention blanked, then read again)."""
    out = []
    text = prepared
    while True:
        m = find_stated_answer(text, forms, domain, question=question, allow_tentative=True)
        if m is None:
            return out
        out.append(AnswerMatch(m.start, m.end, prepared[m.start:m.end], m.sentence))
        text = text[:m.start] + " " * (m.end - m.start) + text[m.end:]


@functools.lru_cache(maxsize=4096)
def _givens(question: str | None) -> frozenset[Fraction]:
    if not question:
        return frozenset()
    prepared = prepare_text(question)
    return frozenset(numbers_in_text(prepared)) | frozenset(word_numbers_in_text(prepared))


def _explicit(prepared: str, m: AnswerMatch) -> bool:
    """Given in an explicit answer frame, or proposed by a question ("Is it 42?", "42 pages?")."""
    where = locate(split_sentences(prepared), m.start)
    if where is None:
        return False
    sentence, clause = where
    if clause.interrogative:
        return True
    return bool(_EXPLICIT_FRAME.search(prepared[sentence.start:m.start]))


def _computed(prepared: str, m: AnswerMatch) -> bool:
    """The value is the result of a computation in its sentence (the clause splitter reads " - "
    as a dash)."""
    where = locate(split_sentences(prepared), m.start)
    return where is not None and bool(_COMPUTED.search(prepared[where[0].start:m.start]))


def _value_positions(prepared: str, golds: set[Fraction]) -> dict[Fraction, int]:
    """Each value the turn writes (digits, glued units, number words) other than the gold, with the
    start of its last occurrence: no stated mention of it starts later."""
    last: dict[Fraction, int] = {}
    for m in NUMBER_RE.finditer(prepared):
        last[token_value(m)] = m.start()
    for m in GLUED_UNIT_RE.finditer(prepared):
        v = parse_number(m.group("num"))
        if v is not None:
            last[v] = max(last.get(v, -1), m.start())
    for m in WORD_NUMBER_RE.finditer(prepared):
        for v in word_numbers_in_text(m.group()):
            last[v] = max(last.get(v, -1), m.start())
    return {v: p for v, p in last.items() if v not in golds}


@functools.lru_cache(maxsize=1 << 14)
def _given(text: str, forms: tuple[str, ...], domain: str, question: str | None) -> GivenAnswer | None:
    prepared = prepare_text(text)
    if not prepared.strip():
        return None
    revisions = [s.start for s in split_sentences(prepared) if _REVISION.match(prepared[s.start:s.end])]
    since = revisions[-1] if revisions else 0
    found = _answer_since(prepared, forms, domain, question, since)
    if found is None and since:
        found = _answer_since(prepared, forms, domain, question, 0)  # nothing stated after the revision
    return found


def _answer_since(prepared: str, forms: tuple[str, ...], domain: str, question: str | None,
                  since: int) -> GivenAnswer | None:
    """The turn's answer among the values stated from position ``since`` on. Values are read from
    the last one the turn writes backwards, and the walk stops once no earlier value can be the
    answer (the last explicit one, or the last one when the turn has no explicit frame)."""
    best_explicit: tuple[AnswerMatch, bool] | None = None
    best_any: tuple[AnswerMatch, bool] | None = None

    def consider(matches: list[AnswerMatch], gold: bool) -> None:
        nonlocal best_explicit, best_any
        for m in matches:
            if m.start < since:
                continue
            if best_any is None or m.start > best_any[0].start:
                best_any = (m, gold)
            if _explicit(prepared, m) and (best_explicit is None or m.start > best_explicit[0].start):
                best_explicit = (m, gold)

    consider(_stated_all(prepared, list(forms), domain, question), True)
    if is_numeric_gold(list(forms), domain):
        golds = {v for v in (parse_number(f) for f in forms) if v is not None}
        givens = _givens(question)
        may_be_explicit = "?" in prepared or bool(_FRAME_ANYWHERE.search(prepared))
        for v, last in sorted(_value_positions(prepared, golds).items(), key=lambda kv: -kv[1]):
            if last < since or (best_explicit is not None and last < best_explicit[0].start):
                break
            if best_explicit is None and not may_be_explicit and best_any is not None and last < best_any[0].start:
                break
            consider([m for m in _stated_all(prepared, [_fmt(v)], domain, question)
                      if v not in givens or _explicit(prepared, m) or _computed(prepared, m)], False)
    chosen = best_explicit or best_any
    return None if chosen is None else GivenAnswer(chosen[1], best_explicit is not None, chosen[0])


def find_given_answer(text: str, answer_forms: list[str], domain: str, *,
                      question: str | None = None) -> GivenAnswer | None:
    """A student turn's answer (see the module docstring), or None when the turn states no value
    (a number gold) or does not state the gold (a phrase gold)."""
    if not text or not answer_forms or not (gold_mentioned(text, answer_forms, domain)
                                            or is_numeric_gold(answer_forms, domain)):
        return None
    return _given(text, tuple(answer_forms), domain, question)
