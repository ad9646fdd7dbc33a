"""The stop rule (paper §3.2), applied after each tutor turn: the tutor revealed the gold answer,
or confirmed the student's correct answer, or T_max tutor turns were generated.

"Revealed" and "confirmed" are judged on what the turns *state*, not on which words occur
(``protocol.matching.find_stated_answer``): a gold inside a question, negated, hypothetical, one side of
an alternative, a step number or an operand is not stated. The tutor

* reveals when it states the gold as an answer (``tutor_states_gold``);
* confirms when the previous student turn gave the gold as its answer
  (``protocol.matching.find_given_answer``: a tentative "Is it 42?" counts as proposing 42, a
  declarative "Carbon has four." or "The first shell holds two electrons." states the count; a gold
  that is only a step of the student's working, "84 / 2 = 42, plus 12 is 54", is not the answer)
  and the tutor either states it too or affirms the student
  (``tutor_affirms_student``): an affirmation that opens the turn ("Yes!", "Exactly, ...",
  "Right -") or that refers to the student's answer anywhere outside a question ("that's
  correct", "you're right", "you got it", "well done"). An affirmation is void when it is negated
  ("not correct", "not quite", "isn't right", "not exactly"), when the opening sentence rejects or
  hedges ("No,", "almost", "on the right track", "wrong"), or when the turn rejects the gold.
  For a number gold, an affirmation in a sentence that states other numbers (digits, or number
  words from eleven up: "Yes, twelve pages are left."), or right after such a sentence, is about
  those numbers. Sentences are the matcher's (``protocol.matching.sentences``):
  a decimal point never ends one, so "You wrote 1.5. That's correct." is about 1.5, not 5.

The evidence (rule, matched span, turn indices) is stored in ``DialogueState.stop_evidence``.
"""

from __future__ import annotations

import re
from typing import Callable

from edufair_metrics.dialogue.state import DialogueState, StopEvidence
from edufair_metrics.protocol.matching import (
    find_given_answer,
    find_stated_answer,
    gold_mentioned,
    is_numeric_gold,
    locate,
    negates_answer,
    numbers_in_text,
    prepare_text,
    split_sentences,
)
from edufair_metrics.protocol.matching.numbers import word_numbers_in_text
from edufair_metrics.records import STOP_ANSWER_CONFIRMED, STOP_ANSWER_REVEALED, STOP_MAX_TURNS

RULE_STATES_GOLD = "tutor_states_gold"
RULE_AFFIRMS_STUDENT = "tutor_affirms_student"
RULE_MAX_TURNS = "max_turns"

# Affirmations that refer to the student's answer: they count anywhere in the turn (outside the
# interrogative part of a question, not negated, not withheld, not scoped to a detail).
_AFFIRM_ANYWHERE = re.compile(
    r"\b(?:that'?s|that\s+is|this\s+is|it'?s|it\s+is)\s+(?:(?:exactly|absolutely|completely|totally|perfectly|"
    r"quite|100%|all)\s+)?(?:right|correct|it|the\s+(?:right|correct)\s+answer)\b"
    r"|\byou(?:'re|\s+are)\s+(?:(?:absolutely|exactly|completely|totally|quite|100%)\s+)?(?:right|correct)\b"
    r"|\byou(?:'ve|\s+have)?\s+(?:got|nailed|found|solved)\s+it\b"
    r"|\b(?:got|have|reached|achieved|found|arrived\s+at|gotten|given)\s+the\s+(?:correct|right)\s+(?:answer|solution)\b"
    r"|\byour\s+answer\s+(?:is|was)\s+(?:(?:exactly|absolutely|completely|perfectly)\s+)?(?:right|correct)\b"
    r"|\b(?:is|was)\s+(?:(?:exactly|absolutely|completely|perfectly|indeed|now|also|definitely|totally)\s+)?"
    r"(?:right|correct)\b"
    r"|\b(?:well\s+done|spot\s+on|great\s+job|good\s+job|nice\s+job|nice\s+work|great\s+work|good\s+work|"
    r"exactly\s+right|nailed\s+it|bingo|right\s+on|excellent\s+work|perfectly\s+right)\b",
    re.IGNORECASE,
)
# Words that affirm when they open the turn. Strong ones ("Yes", "Correct", "Excellent") affirm
# whatever follows unless it turns them into something else ("Excellent question", "Correct me");
# weak ones ("Right", "Good", "Great", "Sure") only when punctuation or another affirmation follows
# ("Good!", "Great job"; not "Right now", "Good question").
_OPENING_LEAD = r"^\W*(?:(?:oh|wow|ah|well|okay|ok|alright|so|and|very|really)\W+)*"
_AFFIRM_OPENING_STRONG = re.compile(
    _OPENING_LEAD
    + r"(?P<word>yes|yeah|yep|yup|correct|exactly|precisely|absolutely|indeed|perfect|excellent|awesome|wonderful|"
    r"fantastic|brilliant|bravo|bingo|superb|outstanding)\b"
    r"(?!\s+(?:questions?|timing|points?|idea|try|attempt|effort|start|thinking|observation|what|how|why|when|"
    r"where|which|me|let's|lets|now|but)\b)",
    re.IGNORECASE,
)
_AFFIRM_OPENING_WEAK = re.compile(
    _OPENING_LEAD
    + r"(?P<word>right|good|great|nice|true|sure|of\s+course|definitely|well|lovely|cool)"
    r"(?=\s*(?:[!.,;:\u2014\u2013-]|$)|\s+(?:job|work|stuff|one|done|answer)\b)",
    re.IGNORECASE,
)
_NEGATED_AFFIRM = re.compile(r"(?:\b(?:not|never|hardly|almost|nearly)|n't)\W*(?:\w+\W+)?$", re.IGNORECASE)
# "whether that's right", "if you're correct": the judgement is withheld.
_WITHHELD_AFFIRM = re.compile(r"\b(?:whether|if|once|until|unless)\b", re.IGNORECASE)
# "You're right that we subtract first", "right about 84": agreement with a detail, not the answer.
_SCOPED_AFFIRM = re.compile(r"^\s+(?:that|about|to|in\s+(?:that|saying|thinking))\b", re.IGNORECASE)
# A turn that opens by rejecting confirms nothing ("No, ...", "Not quite.", "Incorrect.").
_OPENS_WITH_REJECTION = re.compile(
    r"^\W*(?:no\b|nope\b|not\s+(?:quite|exactly|really|correct|right|so)\b|incorrect\b|wrong\b|almost\b|"
    r"close\b|nearly\b|hmm+\W+not\b)",
    re.IGNORECASE,
)
# In the affirmation's sentence, a rejection or hedge before it, or a hedge right after it
# ("Yes, but not quite", "Right, almost", "You're on the right track"), voids it. Criticism of
# something else after it ("Correct answer, but the wrong method"; "Well done, where did you go
# wrong before?") does not.
_REJECTION_BEFORE = re.compile(
    r"\bno\b|\bnope\b|\bnot\b|\bincorrect\b|\bwrong\b|\balmost\b|\bnearly\b|\bclose\b|\bmistake\b",
    re.IGNORECASE,
)
_HEDGE_AFTER = re.compile(
    r"\bnot\s+(?:quite|exactly|entirely|completely|fully|really|yet)\b|\balmost\b|\bnearly\b|\bclose\b|"
    r"\bpartly\b|\bpartially\b|\bhalf\s+right\b|\bright\s+(?:track|direction|idea|path|lines)\b|"
    r"\b(?:you're|you\s+are|we're|we\s+are)\s+getting\s+(?:there|close)\b|\bbut\s+(?:not|no|there'?s|one|a\s+(?:small|little)|check|careful|"
    r"double-?check|re-?check|missing|wrong|incorrect|it's\s+not|that's\s+not|is\s+it)\b",
    re.IGNORECASE,
)


def find_affirmation(text: str, *, about_other_number: Callable[[str], bool] = lambda _: False) -> str | None:
    """The tutor's affirmation of the student's answer (the matched words), or None.

    ``about_other_number(sentence)``: True when a sentence states numbers but not the gold; an
    affirmation in it (or right after it, "You doubled 12 to get 24. That's correct.") is about that
    number, not about the student's answer ("Yes, 84 pages are left.")."""
    prepared = prepare_text(text)
    # The matcher's splitter: a decimal point ("1.5") never ends a sentence, so the sentence an
    # affirmation sits in (and the one before it) is the one the matcher reads.
    sentences = split_sentences(prepared)
    if not sentences or _OPENS_WITH_REJECTION.match(prepared):
        return None
    candidates: list[tuple[int, int, bool]] = []  # (start, end, opening)
    for pattern in (_AFFIRM_OPENING_STRONG, _AFFIRM_OPENING_WEAK):
        m = pattern.match(prepared)
        if m:
            candidates.append((m.start("word"), m.end("word"), True))
            break
    candidates += [(m.start(), m.end(), False) for m in _AFFIRM_ANYWHERE.finditer(prepared)]
    for start, end, opening in sorted(candidates):
        where = locate(sentences, start)
        if where is None or where[1].interrogative:
            continue  # asked ("Is that correct?"), not affirmed
        i = next(k for k, s in enumerate(sentences) if s is where[0])
        s_start, s_end = where[0].start, where[0].end
        sentence, before, after = prepared[s_start:s_end], prepared[s_start:start], prepared[end:s_end]
        if _REJECTION_BEFORE.search(before) or _HEDGE_AFTER.search(after):
            continue
        if not opening:
            if _NEGATED_AFFIRM.search(before) or _WITHHELD_AFFIRM.search(before) or _SCOPED_AFFIRM.match(after):
                continue
        previous = prepared[sentences[i - 1].start:sentences[i - 1].end] if i > 0 else ""
        if about_other_number(sentence) or (not opening and not re.search(r"\d", sentence)
                                            and previous and about_other_number(previous)):
            continue
        return prepared[start:end]
    return None


def _large_number_words(sentence: str) -> list:
    """Number words from eleven up ("twelve", "a hundred and five"); smaller ones are prose ("one way")."""
    return [v for v in word_numbers_in_text(sentence) if v > 10]


def stop_after_tutor_turn(state: DialogueState, max_tutor_turns: int) -> str | None:
    """The stop rule, applied after each tutor turn: the tutor revealed the gold answer, or
    confirmed the student's correct answer, or T_max tutor turns were generated. Sets
    ``state.stop_evidence`` to why (None when the dialogue goes on)."""
    doc = state.doc
    forms, domain, question = doc["answer_forms"], doc["domain"], doc.get("question")
    tutor_index = len(state.turns) - 1
    tutor = state.turns[tutor_index]
    student_index = next((i for i in range(tutor_index - 1, -1, -1) if state.turns[i].role == "student"), None)
    student = None
    if student_index is not None:
        given = find_given_answer(state.turns[student_index].text, forms, domain, question=question)
        student = given.match if given is not None and given.gold else None
    student_span = student.text if student else None
    student_at = student_index if student else None

    stated = find_stated_answer(tutor.text, forms, domain, question=question)
    rejects = negates_answer(tutor.text, forms, domain, question=question)
    if student is not None and not rejects:
        numeric = is_numeric_gold(forms, domain)

        def about_other_number(sentence: str) -> bool:
            # only for number golds: "Yes, 84 pages are left" affirms 84, not the student's 42
            return numeric and bool(numbers_in_text(sentence) or _large_number_words(sentence)) \
                and not gold_mentioned(sentence, forms, domain)

        affirmation = find_affirmation(tutor.text, about_other_number=about_other_number)
        if affirmation is not None:
            state.stop_evidence = StopEvidence(RULE_AFFIRMS_STUDENT, tutor_index, affirmation, student_span, student_at)
            return STOP_ANSWER_CONFIRMED
    if stated is not None:
        state.stop_evidence = StopEvidence(RULE_STATES_GOLD, tutor_index, stated.text, student_span, student_at)
        return STOP_ANSWER_CONFIRMED if student is not None else STOP_ANSWER_REVEALED
    if state.tutor_turns >= max_tutor_turns:
        state.stop_evidence = StopEvidence(RULE_MAX_TURNS, tutor_index)
        return STOP_MAX_TURNS
    state.stop_evidence = None
    return None
