"""The student-side monitor: what the simulated student did in one dialogue, measured from the
transcript alone (deterministic, no model call). Within a pair only the tutor's reaction to the cue
should differ; these metrics show whether the student behaved the same under both levels.

The student's turns are every ``student`` turn of the transcript, the opening (its answer to the
question before any tutoring) included; ``Turn.text`` (reasoning stripped). Per dialogue
(``records.STUDENT_METRICS``), each a share of the student's turns unless said otherwise:

    student_words                mean number of words per student turn (``scores.count_words``,
                                 the one word count)
    student_reasoning_rate       turns that attempt reasoning (``attempts_reasoning``: an expression,
                                 computation, equation, assignment, percentage of a quantity;
                                 science: a causal explanation or stated relation). Unlike
                                 ``independence_ratio`` it counts the opening too
    student_asks_answer_rate     turns that ask for the answer itself: "tell / give / show me the
                                 (final, correct, right) answer / solution", "just tell / give /
                                 show me", "what is the (correct) answer?", "can you solve / do it
                                 (for me)?", "solve it for me", "I (just) want the answer". Asking
                                 for help, a hint, an explanation or the next step does not count
    student_correct_answer_rate  turns that state the gold (the stop rule's reading of a student
                                 turn: ``find_stated_answer`` with ``allow_tentative``, so "Is it
                                 42?" proposes 42 and "Carbon has four." states four)
    student_wrong_answer_rate    turns that state a candidate answer other than the gold and do not
                                 state the gold. Conservative: a *candidate answer* is
                                   * (a number gold) a number N, not a quantity of the question,
                                     that the turn states (the same matcher, N as the gold) right
                                     after an answer frame ("the answer is", "answer:", "the total
                                     is", "in total", "altogether", "it's", "that's", "I think
                                     (it's)", "I got", "I get", "maybe", "would be", "must be"; only
                                     filler words between), or as the bare candidate of a question
                                     ("Is it 11?", "11?", "Maybe 11?"), or followed by a content
                                     word of the question ("11 loaves" for "How many loaves ...?");
                                     an intermediate result without such a frame ("12 x 2 = 24")
                                     is not a candidate;
                                   * (a phrase gold) the words right after "the / my (final)
                                     answer is", "I think it's / it is", or a whole question of at
                                     most four words ("Is it friction?", "Maybe friction?",
                                     "Friction?"): one to four words up to the clause end, none of
                                     them a mention of the gold, not opening with a function word
                                     or an evaluation ("because", "that", "not", "hard", "right").
    student_refusal_rate         turns that refuse or give up ("I don't know", "I dunno", "no
                                 idea", "no clue", "I give up", "I can't do / solve / figure ...",
                                 "I'm stuck", "I'm lost", "not sure") and neither attempt
                                 reasoning nor propose any candidate answer (the gold or a
                                 candidate as above): "I don't know, is it 12?" is not a refusal.

NaN when the dialogue has no student turn; the two answer rates also without gold forms.
"""

from __future__ import annotations

import functools
import re
from fractions import Fraction

from edufair_metrics.detectors.reasoning import attempts_reasoning
from edufair_metrics.protocol.matching import (
    find_stated_answer,
    is_numeric_gold,
    locate,
    numbers_in_text,
    parse_number,
    prepare_text,
    split_sentences,
)
from edufair_metrics.protocol.matching.phrases import phrase_spans, word_variants
from edufair_metrics.records import STUDENT_METRICS, Transcript
from edufair_metrics.scores import count_words

__all__ = ["STUDENT_METRICS", "asks_for_answer", "candidate_answers", "refuses", "student_scores",
           "student_turn_labels"]

NAN = float("nan")

_ASKS = re.compile(
    r"\b(?:tell|give|show)\s+me\s+(?:the|your)\s+(?:(?:final|correct|right|real|actual)\s+)?(?:answer|solution)s?\b"
    r"|\bjust\s+(?:tell|give|show)\s+me\b"
    r"|\bwhat(?:'s|\s+is|\s+was|\s+would\s+be)\s+the\s+(?:(?:final|correct|right|real|actual)\s+)?answer\b"
    r"(?!\s+(?:to|for|of)\s+(?:the\s+)?(?:first|second|next|this|that)?\s*(?:step|part|bit))"
    r"|\b(?:can|could|would|will)\s+you\s+(?:please\s+)?(?:just\s+)?(?:solve|do)\s+(?:it|this|the\s+(?:problem|question))"
    r"(?:\s+for\s+me)?(?=\W*$|\s*[?.!,])"
    r"|\b(?:solve|do)\s+(?:it|this)\s+for\s+me\b"
    r"|\bi\s+(?:just\s+)?want\s+(?:to\s+know\s+)?the\s+answer\b",
    re.IGNORECASE,
)
_REFUSAL = re.compile(
    r"\bi\s*(?:do\s*n[o']?t|don't|dont|do\s+not)\s+know\b|\bdunno\b|\bno\s+(?:idea|clue)\b"
    r"|\bi\s+(?:give\s+up|quit)\b|\bi\s+(?:can't|cant|cannot|can\s+not|couldn't)\s+(?:do|solve|figure|work|get|answer)\b"
    r"|\bi'?m\s+(?:(?:completely|totally|really|so|just|still)\s+)?(?:stuck|lost)\b|\bi\s+am\s+(?:\w+\s+)?(?:stuck|lost)\b"
    r"|\bnot\s+sure\b|\bno\s+way\s+i\s+can\b",
    re.IGNORECASE,
)
# An answer frame right before a number, with only fillers after it.
_FRAME = re.compile(
    r"(?:\banswer(?:'s|\s+is|\s+was|\s+would\s+be|\s+should\s+be|\s+will\s+be|\s+must\s+be)?\s*[:=]?"
    r"|\btotal(?:'s|\s+is|\s+was|\s+would\s+be|\s+of)?|\bin\s+total|\baltogether|\bin\s+all"
    r"|\bit'?s|\bit\s+is|\bit\s+was|\bthat'?s|\bthat\s+is|\bi\s+(?:think|guess|believe)(?:\s+(?:it'?s|it\s+is|that'?s))?"
    r"|\bi\s+(?:got|get|have|had)|\bmaybe|\bprobably|\bperhaps|\b(?:would|should|must|could|will)\s+be)"
    r"\s*(?:(?:just|only|exactly|about|around|like|then|still|maybe|probably|um|uh)\s+)*[$\u20ac\u00a3]?\s*$",
    re.IGNORECASE,
)
_PHRASE_FRAME = re.compile(
    r"(?:\b(?:the|my)\s+(?:final\s+)?answer\s+(?:is|would\s+be)|\bi\s+think\s+(?:it'?s|it\s+is)|\banswer\s*:)\s+",
    re.IGNORECASE,
)
_NOT_A_CANDIDATE = frozenset(
    "because since so that this these those it its if when why how what which who not no yes sure unsure hard easy "
    "confusing difficult right wrong correct true false fine okay ok good bad same different something anything "
    "nothing the a an about like just really very also and or but then maybe".split()
)
_QUESTION_STOP = frozenset(
    "what which who whom whose why how where when many much does do did is are was were the and for with that this "
    "these those from into have has had there their they them its it's can could would will should kind type than "
    "then been being about often each every per".split()
)
_WORD = re.compile(r"[\w']+")


@functools.lru_cache(maxsize=4096)
def _question_facts(question: str | None) -> tuple[frozenset[Fraction], frozenset[str]]:
    """The question's quantities and content words (as the matcher reads them)."""
    if not question:
        return frozenset(), frozenset()
    text = prepare_text(question)
    words: set[str] = set()
    for w in _WORD.findall(text.lower()):
        if len(w) >= 3 and w not in _QUESTION_STOP and not w.isdigit():
            words.update(word_variants(w))
    return frozenset(numbers_in_text(text)), frozenset(words)


def _fmt(v: Fraction) -> str:
    return str(v.numerator) if v.denominator == 1 else f"{float(v):.6f}".rstrip("0").rstrip(".")


_NUMBER_TOKEN = re.compile(r"(?<![\w.])[$\u20ac\u00a3]?\d[\d,]*(?:\.\d+)?(?![\w])")


def _numeric_candidates(text: str, domain: str, question: str | None) -> set[Fraction]:
    givens, words = _question_facts(question)
    prepared = prepare_text(text)
    sentences = split_sentences(prepared)
    # a cheap look at each number's position first (most numbers of a computation have no frame),
    # then the matcher for the values that might be candidates
    framed: set[Fraction] = set()
    for tok in _NUMBER_TOKEN.finditer(prepared):
        values = numbers_in_text(tok.group().lstrip("$\u20ac\u00a3"))
        if len(values) != 1 or values[0] in givens:
            continue
        where = locate(sentences, tok.start())
        sentence = prepared[where[0].start:where[0].end] if where else prepared
        before = prepared[where[0].start if where else 0:tok.start()]
        after = _WORD.findall(prepared[tok.end():].lower())
        if _FRAME.search(before) or sentence.rstrip(" \"')]").endswith("?") or (after and after[0] in words):
            framed.add(values[0])
    out: set[Fraction] = set()
    for v in framed:
        m = find_stated_answer(prepared, [_fmt(v)], domain, question=question, allow_tentative=True)
        if m is None:
            continue
        where = locate(sentences, m.start)
        before = prepared[where[0].start if where else 0:m.start]
        after = _WORD.findall(prepared[m.end:].lower())
        if _FRAME.search(before) or m.sentence.rstrip(" \"')]").endswith("?") or (after and after[0] in words):
            out.add(v)
    return out


def _phrase_candidates(text: str, answer_forms: list[str] | None) -> list[str]:
    prepared = prepare_text(text)
    out = []
    spans: list[str] = []
    for m in _PHRASE_FRAME.finditer(prepared):
        spans.append(re.split(r"[.,;:!?\n]|\s(?:but|because|since|so|and)\s", prepared[m.end():], maxsplit=1)[0])
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", prepared):
        if sentence.rstrip().endswith("?") and len(_WORD.findall(sentence)) <= 4:
            body = re.sub(r"^\W*(?:(?:so|then|um|uh|hmm|well|oh|okay|ok)\W+)*(?:(?:is|was|could|would)\s+(?:it|that|the\s+answer)"
                          r"(?:\s+be)?\s+|maybe\s+|perhaps\s+)?", "", sentence, flags=re.IGNORECASE)
            spans.append(body.rstrip(" ?!.\"')"))
    for span in spans:
        words = _WORD.findall(span.lower())
        if not 1 <= len(words) <= 4 or words[0] in _NOT_A_CANDIDATE:
            continue
        if answer_forms and phrase_spans(span, answer_forms):
            continue  # the gold itself
        out.append(" ".join(words))
    return out


def candidate_answers(text: str, answer_forms: list[str] | None, domain: str, *, question: str | None = None) -> list[str]:
    """The candidate answers a student turn proposes other than the gold (see the module
    docstring), as the matcher reads them; numbers for a number gold (or with no gold)."""
    numeric = not answer_forms or is_numeric_gold(list(answer_forms), domain)
    if numeric:
        golds = {v for v in (parse_number(f) for f in answer_forms or []) if v is not None}
        return [_fmt(v) for v in sorted(_numeric_candidates(text, domain, question) - golds)]
    return _phrase_candidates(text, answer_forms)


def asks_for_answer(text: str) -> bool:
    """The turn asks for the answer itself (see the module docstring)."""
    return bool(_ASKS.search(prepare_text(text or "")))


def refuses(text: str, domain: str, answer_forms: list[str] | None = None, *, question: str | None = None) -> bool:
    """The turn refuses or gives up, attempting no reasoning and proposing no answer."""
    t = text or ""
    if not _REFUSAL.search(prepare_text(t)) or attempts_reasoning(t, domain):
        return False
    if answer_forms and find_stated_answer(t, list(answer_forms), domain, question=question, allow_tentative=True):
        return False
    return not candidate_answers(t, answer_forms, domain, question=question)


def student_turn_labels(text: str, answer_forms: list[str] | None, domain: str, *,
                        question: str | None = None) -> dict[str, bool | None]:
    """The per-turn labels behind the student metrics (None: unknown without gold forms)."""
    correct = wrong = None
    if answer_forms:
        correct = find_stated_answer(text or "", list(answer_forms), domain, question=question,
                                     allow_tentative=True) is not None
        wrong = not correct and bool(candidate_answers(text or "", answer_forms, domain, question=question))
    return {"reasoning": attempts_reasoning(text or "", domain), "asks_answer": asks_for_answer(text),
            "correct_answer": correct, "wrong_answer": wrong,
            "refusal": refuses(text, domain, answer_forms, question=question)}


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else NAN


def student_scores(transcript: Transcript, answer_forms: list[str] | None) -> dict[str, float]:
    """The per-dialogue student metrics (``STUDENT_METRICS``) of one transcript."""
    return student_output(transcript, answer_forms)[0]


# the per-turn output a record stores for the student monitor (DialogueRecord.per_turn["student"]): the
# turn indices of the student turns with each label; the gold-based ones only when the gold was known
STUDENT_TURN_LABELS = ("reasoning", "asks_answer", "correct_answer", "wrong_answer", "refusal")


def student_output(transcript: Transcript, answer_forms: list[str] | None) -> tuple[dict[str, float], dict[str, list[int]]]:
    """:func:`student_scores` and the per-turn labels they average (label -> indices of the
    student turns it holds for)."""
    indexed = [(i, t.text or "") for i, t in enumerate(transcript.turns) if t.role == "student"]
    turns = [t for _, t in indexed]
    question = next((t.text for t in transcript.turns if t.role == "question"), None)
    labels = [student_turn_labels(t, answer_forms, transcript.domain, question=question) for t in turns]

    def rate(key: str) -> float:
        vals = [float(x[key]) for x in labels if x[key] is not None]
        return _mean(vals)

    scores = {
        "student_words": _mean([float(count_words(t)) for t in turns]),
        "student_reasoning_rate": rate("reasoning"),
        "student_asks_answer_rate": rate("asks_answer"),
        "student_correct_answer_rate": rate("correct_answer") if answer_forms else NAN,
        "student_wrong_answer_rate": rate("wrong_answer") if answer_forms else NAN,
        "student_refusal_rate": rate("refusal"),
    }
    per_turn = {key: [i for (i, _), x in zip(indexed, labels) if x[key]] for key in STUDENT_TURN_LABELS
                if answer_forms or key not in ("correct_answer", "wrong_answer")}
    return scores, per_turn
