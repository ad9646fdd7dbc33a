"""Does a text *state* the gold as an answer, and where: :func:`find_stated_answer`, the matcher of
the stop rule (paper §3.2) and of the leakage detector, and the span helpers the stop rule uses
(:func:`asked_at`, :func:`negates_answer`, :func:`gold_mentioned`, :func:`is_numeric_gold`,
:func:`prepare_text`), and :func:`find_offered_answer` (the gold *offered* in a leading question
or for checking: the partial-reveal detector's, never the stop rule's). The rules are in the comment
blocks below; candidate mentions come from the
scanners of :mod:`.numbers` and :mod:`.phrases`, sentences and clauses from :mod:`.sentences`.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from fractions import Fraction

from edufair_metrics.protocol.matching.mention import NUMERIC_DOMAINS, SCIENCE_DOMAINS, normalize_answer
from edufair_metrics.protocol.matching.numbers import NONE_WORDS, SMALL_WORDS, TEENS, TENS, number_spans, parse_number
from edufair_metrics.protocol.matching.phrases import phrase_spans, word_variants
from edufair_metrics.protocol.matching.sentences import OPENER, TAG, Clause, Sentence, locate, split_sentences

__all__ = [
    "AnswerMatch", "asked_at", "find_offered_answer", "find_stated_answer", "gold_mentioned", "is_numeric_gold",
    "negates_answer", "offered_for_checking", "prepare_text",
]

# A gold mention found by the scanners is discarded when, in its sentence and clause,
#
# * it is asked, not stated: its sentence ends with "?" and the mention lies in the interrogative
#   part (from the first clause opening with a question word or an inverted auxiliary, or the
#   whole sentence when none does: "You think it's 42?"). A declarative clause before a question
#   or a tag ("So it's 42, right?", "42 - can you explain why?") still states it;
# * it is negated or only compared: "not", "n't", "never", "rather than", "instead of", "than"...
#   up to four words before it in its clause ("it's not 42", "not X but Y"), or a negative
#   predicate right after it ("42 isn't right", "42 is too high"). Except where the negation is
#   the content: when the question asks for what is *not* so ("... without changing its what?",
#   "what aspect of the force does not change?", "he doesn't have what?"), a gold that is the
#   contrasted term of "X but not Y" / "X, not Y" ("It changes the direction but not its
#   magnitude.") or the object of a negated verb ("it does not change its magnitude", "without
#   changing the magnitude") is stated. An identity negation ("It's not the magnitude", "No, not
#   the magnitude") still rejects it, and in a question that does not ask for what is not so the
#   contrasted term is negated as before;
# * it is hypothetical or reported: "if", "whether", "suppose", "you said", "you think" earlier in
#   its clause;
# * it is one side of an alternative ("42 or 24", "either X or Y");
# * (numbers) it is a step, ordinal, label or list number ("step 2", "2 steps", "part 2",
#   "question 2", "page 42", "example 12", "#2", a line starting "2." / "2)", an inline "2)"
#   enumeration), or an operand of an arithmetic expression ("42 minus 12", "12 + 42", "subtract
#   12 from 42"), not its result ("84 / 2 = 42", "84 divided by 2 is 42" state 42). A noun that
#   counts the tutoring ("2 steps", "5 minutes") does not discard a number in an explicit answer
#   frame ("the answer is 3 steps", "the final answer: 5 minutes"), unless it is a distance or
#   what is left to do ("the answer is 2 steps away", "... 3 more steps").
#
# Small numbers are common in ordinary prose ("two forces act", "one way", "none of these"), so a
# *weak* mention (number words zero..ten and "none" in any domain; every number in a science
# domain, where golds are counts such as "two" or "20") needs an answer frame as well: a cue right
# before it ("the answer is", "=", "equals"), or a clause that is only the number with filler
# words ("Yes, two!", "It's four.", "There are two."), or the number followed by a content word
# of the question ("two forces" for "How many forces...?"). "none of ..." never counts; a science
# count gold is matched by its word and its digits ("two" / "2"), "none" also by "zero" / "0".
#
# With ``allow_tentative`` (the student's side of the stop rule: the turn answers the question)
#
# * a question whose interrogative part is only the candidate answer proposes it: "Is it 42?",
#   "Maybe gravity?", "42 pages?" state 42 / gravity, but "Is it 42 minus 12?", "Is it gravity or
#   friction?" and "So 2 more steps?" (a count of the tutoring, as above) do not;
# * a weak mention that closes a declarative clause also states it after a predicate verb
#   ("Carbon has four.", "Each friend gets two.", "I counted three.", "I'd say 2."), after
#   hedging adverbs only ("Definitely three."), with a trailing hedge ("There are two I think.")
#   or as the whole set ("two of them"; "none of ..." still never counts), and a count of a noun
#   right after such a verb (not a copula: "There are two protons." only lists) states it too,
#   whichever noun the question uses ("The first shell holds two electrons.", "DNA has two
#   strands.", "It has eight long legs in all."): one to three words of
#   a noun phrase, then at most a prepositional phrase, no other number, conjunction or verb of
#   a longer computation ("eight legs and two eyes" states nothing). A preposition,
#   determiner or label before the number ("divided it by two", "into two", "group two") never
#   qualifies, and steps and operands are discarded as for the tutor. The tutor's side keeps the
#   stricter frame: its prose counts many things ("Hydrogen has one, oxygen has two."), and a tutor
#   statement stops the dialogue on its own, while a student statement needs the tutor's
#   affirmation as well.


_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"', "\u2212": "-"})


@dataclass(frozen=True)
class AnswerMatch:
    """Where a text states the gold answer: character span (in the NFKC-normalised text) and the
    sentence it was found in, both as written."""

    start: int
    end: int
    text: str
    sentence: str


@dataclass(frozen=True)
class _Mention:
    start: int
    end: int
    numeric: bool
    weak: bool  # needs an answer frame (small numbers in prose)


# cached: the detectors and the stop rule ask about the same turn many times (about 20 calls per
# dialogue), and NFKC over a whole turn is one of their larger costs
@functools.lru_cache(maxsize=1 << 16)
def _prepare(text: str) -> str:
    # NFKC (full-width digits, ligatures) and same-length quote/minus folding: spans stay valid.
    return unicodedata.normalize("NFKC", text or "").translate(_APOSTROPHES)


def _numeric_golds(answer_forms: list[str], *, all_or_nothing: bool) -> tuple[frozenset[Fraction], bool]:
    """Parsed once per item (the stop rule asks after every turn): see :func:`_parse_numeric_golds`."""
    return _parse_numeric_golds(tuple(answer_forms), all_or_nothing)


@functools.lru_cache(maxsize=4096)
def _parse_numeric_golds(answer_forms: tuple[str, ...], all_or_nothing: bool) -> tuple[frozenset[Fraction], bool]:
    """Gold values of the forms, and whether the gold is a word count ("two", "none").
    ``all_or_nothing`` (science): one non-numeric form makes the gold a phrase; otherwise
    (mathematics) non-numeric forms are skipped, as in ``mentions_answer``."""
    values: set[Fraction] = set()
    worded = False
    for form in answer_forms:
        v = parse_number(form)
        if v is None:
            word = normalize_answer(form)
            if word in SMALL_WORDS:
                v, worded = Fraction(SMALL_WORDS[word]), True
            elif word in NONE_WORDS:
                v, worded = Fraction(0), True
            elif word in TEENS or word in TENS[2:]:
                v = Fraction(TEENS.index(word) + 10 if word in TEENS else TENS.index(word) * 10)
                worded = True
            elif all_or_nothing:
                return frozenset(), False
            else:
                continue
        values.add(v)
    return frozenset(values), worded


def _gold_mentions(text: str, answer_forms: list[str], domain: str) -> list[_Mention]:
    return list(_gold_mentions_of(text, tuple(answer_forms), domain))


# cached: the stop rule (after every turn) and several detectors look for the gold in the same turn
@functools.lru_cache(maxsize=1 << 16)
def _gold_mentions_of(text: str, answer_forms: tuple[str, ...], domain: str) -> tuple[_Mention, ...]:
    return tuple(_find_gold_mentions(text, list(answer_forms), domain))


def _find_gold_mentions(text: str, answer_forms: list[str], domain: str) -> list[_Mention]:
    if domain not in NUMERIC_DOMAINS and domain not in SCIENCE_DOMAINS:
        raise ValueError(f"unknown domain {domain!r}; expected one of mathematics, physics, chemistry")
    science = domain in SCIENCE_DOMAINS
    golds, worded = _numeric_golds(answer_forms, all_or_nothing=science)
    if golds:
        # every number is weak in a science domain (golds are counts); small number words everywhere
        return [_Mention(s.start, s.end, True, science or s.word)
                for s in number_spans(text, golds, zero_as_none=worded)]
    if domain in NUMERIC_DOMAINS:
        return []
    return [_Mention(a, b, False, False) for a, b in phrase_spans(text, answer_forms)]


# --- context rules ------------------------------------------------------------------------------

_NEGATOR = re.compile(
    r"\b(?:not|never|no|nor|neither|without|instead\s+of|rather\s+than|other\s+than|except|than|"
    r"wrong|incorrect|\w+n't|cannot)\b",
    re.IGNORECASE,
)
_NEGATIVE_AFTER = re.compile(
    r"^\W*(?:\w+\W+){0,2}?(?:is|was|are|were|would\s+be|seems|sounds|looks|feels|might\s+be|may\s+be)?\s*"
    r"(?:not|n't|never|wrong|incorrect|too|off|close|almost|nearly|a\s+(?:common\s+)?(?:mistake|trap)|"
    r"isn't|wasn't|aren't|doesn't|won't|can't|cannot|tempting|possible|"
    r"(?:a\s+)?(?:good|nice|reasonable|fair|great|interesting|decent|solid)\s+(?:guess|start|try|attempt|idea|"
    r"thought|estimate|first\s+guess)|worth\s+(?:checking|testing|trying)|a\s+(?:guess|possibility|candidate))\b",
    re.IGNORECASE,
)
_HYPOTHETICAL = re.compile(
    r"\b(?:if|whether|suppose|supposing|assume|assuming|unless|imagine|pretend|"
    r"you(?:'d|\s+would|\s+might|\s+may|\s+could)?\s+(?:said|say|wrote|write|think|thought|guessed|guess|"
    r"mentioned|suggested|proposed|picked|chose|choose|claimed|got|get|put|answered)|"
    r"you're\s+(?:saying|thinking|guessing)|your\s+(?:guess|answer)\s+(?:of|was))\b",
    re.IGNORECASE,
)
_ALTERNATIVE_BEFORE = re.compile(r"\b(?:or|either)\s+(?:(?:the|a|an)\s+)?$|\beither\b", re.IGNORECASE)
_ALTERNATIVE_AFTER = re.compile(r"^\s*(?:,\s*)?or\b", re.IGNORECASE)

_STEP_NOUNS = (
    r"steps?|parts?|stages?|phases?|questions?|problems?|exercises?|items?|hints?|sub-?questions?|"
    r"sub-?steps?|pages?\s+back|options?|choices?|tasks?|rounds?|lines?|sections?|chapters?|equations?|"
    r"rules?|cases?|levels?|grades?|figures?|tables?|methods?"
)
# Labels of the material rather than values: "page 42", "example 12", "slide 8", "row 15".
_LABEL_NOUNS = r"pages?|p\.|pp\.|paragraphs?|rows?|columns?|slides?|examples?|box|boxes|cards?|worksheets?|lessons?"
_STEP_BEFORE = re.compile(rf"\b(?:{_STEP_NOUNS}|{_LABEL_NOUNS}|no\.|number|#)\s*(?:#|no\.)?\s*$", re.IGNORECASE)
# Nouns that count the tutoring itself ("2 steps", "3 hints", "2 ways", "5 minutes"), not the problem;
# ignored when the question itself counts them ("How many steps...?").
_STEP_AFTER = re.compile(
    r"^\s*(?:(?P<mod>more|quick|simple|easy|small|short|main|key|separate|little|big|different|further|"
    r"important|basic|clear|other|possible|useful|good)\s+)?(?P<noun>steps?|parts?|stages?|phases?|hints?|"
    r"sub-?questions?|sub-?steps?|ways?|approaches|approach|methods?|strategies|strategy|tips?|things?|tries|"
    r"try|attempts?|examples?|questions?|minutes?|seconds?|options?|ideas?|points?|rules?|tricks?)\b",
    re.IGNORECASE,
)
# An explicit answer frame right before the mention ("the answer is", "the correct answer is",
# "the final answer:", "is the answer"): what follows is the answer even when a noun that otherwise
# counts the tutoring comes after it ("the answer is 3 steps", "the answer is 5 minutes"), unless
# the frame is the object of something else ("getting to the answer is 3 steps") or the count is
# a distance or what is still to do ("the answer is 2 steps away", "the answer is 3 more steps").
_ANSWER_FRAME = re.compile(
    r"\b(?:(?:the|my|our)\s+)?(?:(?:correct|right|final|actual|real|true|exact)\s+)?answer"
    r"(?:(?:'s|\s+(?:is|was|would\s+be|should\s+be|will\s+be|must\s+be))\s*[:=]?|\s*[:=])\s*"
    r"(?:(?:just|only|exactly|simply|actually|then|indeed|still)\s+)?$"
    r"|\b(?:is|was|would)\s+(?:it\s+|that\s+|be\s+)?the\s+(?:(?:correct|right|final)\s+)?answer\s+$",
    re.IGNORECASE,
)
_FRAME_AS_OBJECT = re.compile(
    r"\b(?:to|at|for|of|from|towards?|with|on|about|into|by|reach(?:es|ed|ing)?|find(?:s|ing)?|get(?:s|ting)?|"
    r"found|got)\s+$",
    re.IGNORECASE,
)
_COUNT_STILL_TO_DO = frozenset("more further other few".split())
_COUNT_DISTANCE = re.compile(
    r"^\s*(?:away|ahead|long|left|to\s+go|further|later|back|behind|beyond|off|"
    r"from\s+(?:here|now|there|the\s+(?:answer|end|solution)))\b",
    re.IGNORECASE,
)


def _answer_frame_before(prefix: str) -> bool:
    m = _ANSWER_FRAME.search(prefix)
    return bool(m) and not _FRAME_AS_OBJECT.search(prefix[:m.start()])


def _counts_the_tutoring(before: str, suffix: str, question_words: frozenset[str]) -> bool:
    """The number counts steps, hints, minutes... of the tutoring ("2 steps", "3 hints"), not the
    problem: not when the question counts them too, nor in an explicit answer frame. ``before``:
    the text before the number; ``suffix``: the rest of its clause."""
    step = _STEP_AFTER.match(suffix)
    if not step or step.group("noun").lower() in question_words:
        return False
    if _answer_frame_before(before):
        still_to_do = (step.group("mod") or "").lower() in _COUNT_STILL_TO_DO
        return still_to_do or bool(_COUNT_DISTANCE.match(suffix[step.end():]))
    return True


_LINE_MARKER = re.compile(r"^[ \t*\-\u2022]*\(?\d+[.)]\s", re.MULTILINE)
_OPERATOR_AFTER = re.compile(
    r"^\s*(?:[-+*/\u00d7\u00f7\u00b7^]\s*[\d(.$]|x\s*\d|%\s*of\b|percent\s+of\b|(?:plus|minus|times|"
    r"divided|multiplied|over|by|squared|cubed|less)\b)",
    re.IGNORECASE,
)
_OPERATOR_BEFORE = re.compile(
    r"(?:(?:[\d)]|\d\s)\s*(?:[-+*/\u00d7\u00f7\u00b7^]|x)\s*|\b(?:plus|minus|times|divided\s+by|multiplied\s+by|over|from|"
    r"subtract|add|multiply|divide|take\s+away|(?:half|third|quarter|fourth|fifth|tenth|thirds|quarters|fifths|"
    r"twice|double|triple|percent|product|sum|difference|quotient|%)\s+of)\s+)\$?$",
    re.IGNORECASE,
)

# Answer frames for weak mentions.
_STRONG_CUE = re.compile(
    r"(?:\banswer(?:'s|\s+is|\s+was|\s+would\s+be|\s+should\s+be|\s+will\s+be)?\s*:?|=|\bequals?|"
    r"\bequal\s+to|\bresult\s+is|\btotal\s+is|\bin\s+total)\s*"
    r"(?:(?:just|only|exactly|simply|actually|still|then|indeed)\s+)?$",
    re.IGNORECASE,
)
_FILLER = frozenset(
    "so yes yeah yep yup right correct exactly precisely absolutely indeed well okay ok oh great good "
    "perfect nice excellent that's thats that it's its it is are was were would be will there there's "
    "there're they're they we have has get got you i i'm think guess believe just only then the answer "
    "final total in all hmm um uh maybe perhaps probably still actually also and must should could "
    "need needs needed it'll it'd that'd makes make gives give".split()
)
_NOT_BEFORE_COUNT = frozenset(
    "of between with for to from by on in into among each every per these those the first last other "
    "another when while if both either any".split()
)
_COPULA = frozenset("is are was were be it's that's equals makes gives".split())
_TRAILING_FILLER = frozenset("at all in total altogether overall then of them".split())
# The student's side (the turn answers the question): a clause-final count after a predicate verb
# ("Carbon has four.", "Each friend gets two.", "I counted three.", "I'd say 2."), after hedging
# adverbs only ("Definitely three."), with a trailing hedge ("There are two I think.") or as a whole
# set ("two of them"). Prepositions, determiners and labels before the number never qualify.
_PREDICATE_VERBS = _COPULA | frozenset(
    "has have had gets get got needs need needed make made give gave contains contain contained holds hold "
    "held forms form formed shares share shared count counted counts find found see saw say said fills fill "
    "filled takes take took uses use used gains gain gained loses lose lost carries carry keeps keep kept "
    "produces produce produced becomes become became remains remain reaches reach feels feel felt "
    "experiences experience experienced receives receive received includes include included plants plant "
    "planted buys buy bought eats eat ate reads read sells sell sold owns own".split()
)
_STUDENT_HEDGES = frozenset(
    "definitely surely certainly clearly obviously honestly basically pretty sure totally i'd i'll "
    "i'm say mean".split()
)
# A counted noun phrase after a student's count ("two electrons", "eight long legs"): up to three
# words, then at most a prepositional phrase ("in the first shell", "at once"); none of these
# words may continue a computation or a list.
_COUNT_NP_MAX = 3
_PREPOSITIONS = frozenset("in on at inside within around per for from into each altogether".split())
_NOT_IN_COUNTED_NP = frozenset(
    "and or but because so then than plus minus times divided multiplied more less left over is are was were "
    "to by if when which that not no too".split()
)
_STUDENT_TAIL = frozenset("i think guess believe suppose reckon maybe probably perhaps each left altogether".split())
_WHOLE_SET = frozenset("them these those".split())
_QUESTION_STOP = frozenset(
    "what which who whom whose why how where when many much does do did is are was were the and for "
    "with that this these those from into have has had there their they them its it's can could would "
    "will should kind type than then been being about does often".split()
)
_WORD = re.compile(r"[\w']+")


@functools.lru_cache(maxsize=4096)
def _content_words(question: str | None) -> frozenset[str]:
    if not question:
        return frozenset()
    words = set()
    for w in _WORD.findall(_prepare(question).lower()):
        if len(w) >= 3 and w not in _QUESTION_STOP and not w.isdigit():
            words.update(word_variants(w))
    return frozenset(words)


def _words(s: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(s)]


def _has_answer_frame(text: str, clause: Clause, m: _Mention, question_words: frozenset[str],
                      student: bool = False) -> bool:
    prefix, suffix = text[clause.start:m.start], text[m.end:clause.end]
    if _STRONG_CUE.search(prefix):
        return True
    after = _words(suffix)
    if student:
        if (after[:1] == ["of"] and after[1:2] and after[1] in _WHOLE_SET
                and text[m.start:m.end].lower() not in NONE_WORDS):
            after = after[2:]  # "two of them": the whole set ("none of them" still never counts)
        after = [w for w in after if w not in _STUDENT_TAIL]
    if after[:1] == ["of"]:
        return False  # "none of these", "two of the forces"
    if after and after[0] in question_words:
        before = _words(prefix)
        return not before or before[-1] not in _NOT_BEFORE_COUNT
    before = _words(prefix)
    if student and after and not all(w in _TRAILING_FILLER for w in after):
        # "The first shell holds two electrons.": a counted noun after a predicate verb
        # (a verb of having or counting, not a copula: "There are two protons." lists, it does not answer)
        core = [w for w in before if w not in _STUDENT_HEDGES]
        return _counted_noun_phrase(after) and bool(core) and core[-1] in _PREDICATE_VERBS - _COPULA
    if not all(w in _TRAILING_FILLER for w in after):
        return False
    # "It's two.", "There are two." (only fillers before), or "The work done is zero." (a copula
    # right before a clause-final number).
    if all(w in _FILLER for w in before) or (bool(before) and before[-1] in _COPULA):
        return True
    if not student:
        return False
    return _after_predicate(before)


def _after_predicate(before: list[str]) -> bool:
    """(student) Only fillers and hedges before the count, or a predicate verb right before it."""
    core = [w for w in before if w not in _STUDENT_HEDGES]
    return all(w in _FILLER for w in core) or core[-1] in _PREDICATE_VERBS


def _counted_noun_phrase(after: list[str]) -> bool:
    """The words after a count are a short noun phrase, then at most a prepositional phrase."""
    cut = next((i for i, w in enumerate(after) if w in _PREPOSITIONS), len(after))
    if not 1 <= cut <= _COUNT_NP_MAX or len(after) - cut > 6:
        return False
    return not any(w in _NOT_IN_COUNTED_NP or w.isdigit() or w in SMALL_WORDS or w in TEENS or w in TENS[2:]
                   for w in after)


_RANGE_BEFORE = re.compile(r"(?:\b(?:from|between)\s+\S+\s+(?:to|and)|\d\s*(?:to|-)|\bout\s+of|\bscale\s+of)\s*$",
                           re.IGNORECASE)
_RANGE_AFTER = re.compile(r"^\s*(?:to|-|out\s+of)\s*\d", re.IGNORECASE)


def _list_marker(text: str, m: _Mention) -> bool:
    """"1) ... 2) ..." inline, or a line "2. Multiply" in a text with at least two numbered lines."""
    if text[m.end:m.end + 1] == ")" and text[max(0, m.start - 1):m.start] != "(":
        return True
    line_start = text.rfind("\n", 0, m.start) + 1
    if re.sub(r"[\s*\-\u2022(]", "", text[line_start:m.start]) or not re.match(r"[.)]\s", text[m.end:m.end + 2]):
        return False
    return len(_LINE_MARKER.findall(text)) >= 2


# The question asks for what is *not* so (see _asks_for_what_is_not).
_NEGATIVE_QUESTION = re.compile(r"\b(?:not|never|without|cannot|lacks?|lacking)\b|n't\b", re.IGNORECASE)
_DETERMINERS = r"(?:(?:its|the|their|his|her|a|an|any|enough|much)\s+){0,3}"
# "X but not Y", "X, not Y": the clause is the contrasted term after "not".
_CONTRASTED = re.compile(rf"^\W*(?:(?:but|and|yet)\s+)?not\s+{_DETERMINERS}$", re.IGNORECASE)
# "does not change its magnitude", "without changing the magnitude": the object of a negated verb
# (not a copula or a verb of saying, which negate an identity: "that doesn't mean magnitude").
_NEGATED_VERB = re.compile(
    r"(?:\b(?:do|does|did|will|would|can|could|may|might|should|must)\s+not|\b(?:don't|doesn't|didn't|won't|"
    r"wouldn't|can't|couldn't|cannot|mustn't|shouldn't|never)|\bwithout)\s+"
    r"(?!(?:be|being|been|seem|seems|look|looks|sound|sounds|mean|means|equal|equals|say|think|call|matter)\b)"
    rf"[a-z]+\s+{_DETERMINERS}$",
    re.IGNORECASE,
)
# An earlier clause that rejects or only fills ("No, not the magnitude.") is no contrast.
_REJECTING_CLAUSE = re.compile(r"^\W*(?:no|nope|not|wrong|incorrect|hmm+|um+|well|okay|ok|so|sorry)\W*$", re.IGNORECASE)


_QUESTION_WORD = re.compile(r"\b(?:what|which|who|whom|whose|how\s+many|how\s+much|where|when)\b", re.IGNORECASE)
# A subordinate clause between the negation and the question word: the negation is not about what
# is asked ("What state exists if particles do not have enough energy?").
_SUBORDINATOR = re.compile(
    r"\b(?:if|when|whenever|because|since|that|which|who|whose|where|while|although|though|unless|so)\b",
    re.IGNORECASE)


@functools.lru_cache(maxsize=4096)
def _asks_for_what_is_not(question: str | None) -> bool:
    """The question asks for what is not so: in its last sentence a negation and the question word
    with no subordinate clause between them ("without changing its what?", "what aspect does not
    change?", "they lack what?")."""
    if not question:
        return False
    prepared = _prepare(question)
    sentences = split_sentences(prepared)
    if not sentences:
        return False
    last = prepared[sentences[-1].start:sentences[-1].end]
    for wh in _QUESTION_WORD.finditer(last):
        for neg in _NEGATIVE_QUESTION.finditer(last):
            lo, hi = sorted((wh.end(), neg.start())) if wh.start() < neg.start() else (neg.end(), wh.start())
            if not _SUBORDINATOR.search(last[lo:hi]):
                return True
    return False


def _negation_is_content(text: str, sentence: Sentence, clause: Clause, m: _Mention) -> bool:
    """(a question asking for what is not so) The gold is the contrasted term of "X but not Y" /
    "X, not Y" after an affirmative clause, or the object of a negated verb."""
    prefix = text[clause.start:m.start]
    if _NEGATIVE_AFTER.match(text[m.end:clause.end]):
        return False
    if _NEGATED_VERB.search(prefix):
        return True
    if not _CONTRASTED.match(prefix):
        return False
    earlier = [c for c in sentence.clauses if c.end <= clause.start and _words(text[c.start:c.end])]
    return bool(earlier) and len(_words(text[earlier[-1].start:earlier[-1].end])) >= 2 and not any(
        _REJECTING_CLAUSE.match(text[c.start:c.end]) for c in earlier)


def _discarded(text: str, clause: Clause, m: _Mention, question_words: frozenset[str] = frozenset(), *,
               sentence: Sentence | None = None, negative_question: bool = False) -> bool:
    """True when the mention is negated, hypothetical, an alternative, a step number or an operand."""
    prefix, suffix = text[clause.start:m.start], text[m.end:clause.end]
    window = " ".join(_WORD.findall(prefix)[-4:])
    if _NEGATOR.search(window) or _NEGATIVE_AFTER.match(suffix):
        if not (negative_question and sentence is not None and _negation_is_content(text, sentence, clause, m)):
            return True
    if _HYPOTHETICAL.search(prefix):
        return True
    if _ALTERNATIVE_BEFORE.search(prefix) or _ALTERNATIVE_AFTER.match(suffix):
        return True
    return m.numeric and _not_a_value(text, clause, m, question_words)


def _not_a_value(text: str, clause: Clause, m: _Mention, question_words: frozenset[str]) -> bool:
    """(numbers) A step, label, range bound, list marker or operand, not a value stated as such."""
    prefix, suffix = text[clause.start:m.start], text[m.end:clause.end]
    # the frame may end the clause before ("The final answer: 24 questions"), so it is read on the
    # whole text before the mention (anchored at the mention)
    if _STEP_BEFORE.search(prefix) or _counts_the_tutoring(text[:m.start], suffix, question_words):
        return True
    if _RANGE_BEFORE.search(prefix) or _RANGE_AFTER.match(suffix):
        return True  # "from 1 to 10", "10 out of 10"
    if text[m.start:m.end].isdigit() and _list_marker(text, m):
        return True
    return bool(_OPERATOR_AFTER.match(text[m.end:]) or _OPERATOR_BEFORE.search(text[:m.start]))


_TENTATIVE_LEAD = re.compile(
    r"^\W*(?:(?:so|then|and|um|uh|hmm|well|oh|okay|ok|i\s+think|i\s+guess|i\s+believe|maybe|perhaps|"
    r"probably)\W+)*"
    r"(?:(?:is|isn't|would|could|will|should|must|does|did|do|might)\s+"
    r"(?:(?:it|that|this|the\s+(?:final\s+)?answer|i|we)\s+)?(?:(?:be|get|equal|equal\s+to)\s+)?"
    r"|(?:it's|it\s+is|the\s+answer\s+is|that's|i\s+get|i\s+got)\s+)?"
    r"(?:(?:the|a|an|just|exactly|maybe|perhaps)\s+)*[$\u20ac\u00a3]?$",
    re.IGNORECASE,
)
_TENTATIVE_TAIL_BLOCK = re.compile(r"\d|\b(?:or|and|minus|plus|times|by|of|but|because|then|not)\b|[-+*/=]",
                                   re.IGNORECASE)


def _declarative_form(text: str, sentence: Sentence) -> bool:
    """A question without a question word or inverted auxiliary: "So each lap is 3 km?"."""
    return not any(OPENER.match(text[c.start:c.end]) or TAG.match(text[c.start:c.end]) for c in sentence.clauses)


def _tentative_proposal(text: str, sentence: Sentence, m: _Mention) -> bool:
    """A question whose interrogative part is only the candidate: "Is it 42?", "Maybe gravity?"."""
    q = [c for c in sentence.clauses if c.interrogative]
    if not q:
        return False
    start = q[0].start
    lead, tail = text[start:m.start], text[m.end:q[-1].end]
    tail = tail.rstrip(" ?!.\"')]")
    return bool(_TENTATIVE_LEAD.match(lead)) and not _TENTATIVE_TAIL_BLOCK.search(tail) and len(_words(tail)) <= 3


def _located_mentions(text: str, answer_forms: list[str], domain: str, question: str | None):
    """The gold mentions of ``text`` in order (leftmost, longest first), each with the prepared text,
    its sentence and clause and the question's content words: the walk both deciders make."""
    if not text or not answer_forms:
        return
    prepared = _prepare(text)
    mentions = sorted(_gold_mentions(prepared, answer_forms, domain), key=lambda m: (m.start, -m.end))
    if not mentions:
        return
    sentences = split_sentences(prepared)
    question_words = _content_words(question)
    for m in mentions:
        where = locate(sentences, m.start)
        if where is not None:
            yield prepared, m, where[0], where[1], question_words


def find_stated_answer(
    text: str,
    answer_forms: list[str],
    domain: str,
    *,
    question: str | None = None,
    allow_tentative: bool = False,
) -> AnswerMatch | None:
    """The first place where ``text`` states the gold answer *as an answer*, or None.

    Candidate mentions come from the same matchers as :func:`mentions_answer`; each is kept only if
    it is stated (see the comment block above): not asked, negated, hypothetical, an alternative,
    a step/list number or an operand; weak mentions (small numbers) also need an answer frame.
    ``question`` (the item's question) lets "two forces" count for "How many forces...?".
    ``allow_tentative`` (the student's side): a question that only offers the candidate ("Is it
    42?") proposes it, and a count closing a declarative clause after a verb ("Carbon has four.")
    states it.
    """
    for prepared, m, sentence, clause, question_words in _located_mentions(text, answer_forms, domain, question):
        if clause.interrogative:
            if not allow_tentative:
                continue
            if _tentative_proposal(prepared, sentence, m):
                if m.numeric and _not_a_value(prepared, clause, m, question_words):
                    continue  # "So 2 more steps?", "Maybe 2 hints?": a count of the tutoring
                # A bare proposal ("Is it two?") needs no further frame; the lead-in is its frame.
                return AnswerMatch(m.start, m.end, prepared[m.start:m.end],
                                   prepared[sentence.start:sentence.end].strip())
            if not _declarative_form(prepared, sentence):
                continue
            # "So each lap is 3 km?": a statement with a question mark, judged as a statement.
        if _discarded(prepared, clause, m, question_words, sentence=sentence,
                      negative_question=_asks_for_what_is_not(question)):
            continue
        if m.weak and not _has_answer_frame(prepared, clause, m, question_words, student=allow_tentative):
            continue
        return AnswerMatch(m.start, m.end, prepared[m.start:m.end], prepared[sentence.start:sentence.end].strip())
    return None


# --- offered, not stated (the partial-reveal detector; the stop rule never calls this) ------------
#
# A gold mention is *offered* when the turn hands it to the student as the candidate to accept or
# check, without stating it:
#
# * in the interrogative part of a question that asks whether the candidate holds: a yes/no
#   question ("Is it 42?", "So would 42 be the answer, then?", "Isn't it 42?", "Does 9 x 2 = 18
#   help?", "Is it 42 - can you check?"), a declarative-form question ("So 42?", "80 km per hour,
#   maybe?"), "what about 42?" / "how about 42?", or a clause that is only the candidate after a
#   wh-question ("What is that called - evaporation?"). A wh-question that asks for a value ("How
#   did you get 42?", "Why isn't it 42?") does not offer it;
# * in a statement or instruction, right after a verb inviting a check ("Try 42 and see", "Let's
#   check 42:", "Check whether 42 works", "Plug in 42").
#
# As for stated mentions, an offered mention is discarded when it is negated (a negative auxiliary
# opening a yes/no question, "Isn't it 42?", "Is it not 42?", does not negate it), followed by a
# negative or non-committal predicate ("Is 42 too big?", "Is 42 a good guess?"), a conditional
# given ("if", "suppose", "assume", "imagine"; an embedded yes/no question after a check verb,
# "check if it's 42", is not one), one side of an alternative ("Is it 42 or 44?"), or (numbers) a
# step, label, list, range or operand. A weak mention (small numbers, science counts) needs what a
# stated one needs (an answer frame, the question's noun: "Are there two forces?") or closes a
# yes/no question as its complement ("Is the number of forces two?").

_WH = re.compile(r"^\W*(?:(?:and|so|then|but|or|now|okay|ok|well|hmm|um|also)\s+)*(?:what|which|who|whom|whose|why|how|where|when)\b",
                 re.IGNORECASE)
_WHAT_ABOUT = re.compile(r"\b(?:what|how)\s+about\s+(?:(?:the|a|an|just)\s+)?[$\u20ac\u00a3]?$", re.IGNORECASE)
# The opening of a yes/no question up to the candidate's subject: removed before the negation check
# ("Isn't it", "Is it not", "Wouldn't that be").
_YES_NO_OPENING = re.compile(
    r"^\W*(?:(?:and|so|then|but|now|okay|ok|well|hmm|um|also)\W+)*"
    r"(?:is|are|was|were|am|do|does|did|can|could|would|will|should|shall|may|might|have|has|had|isn't|aren't|"
    r"wasn't|weren't|don't|doesn't|didn't|can't|couldn't|wouldn't|won't|shouldn't|hasn't|haven't)\b"
    r"(?:\s+(?:it|that|this|there|they|he|she|we|you|the\s+answer))?(?:\s+not\b)?",
    re.IGNORECASE,
)
_COPULA_OPENING = re.compile(
    r"^\W*(?:(?:and|so|then|but|now|okay|ok|well|hmm|um|also)\W+)*(?:is|are|was|were|isn't|aren't|would|could|will|"
    r"might|should|must|can)\b", re.IGNORECASE)
# Conditionals that make a mention a given, not a candidate ("If he made 18 sandwiches, ...?").
_CONDITIONAL = re.compile(r"\b(?:if|suppose|supposing|assume|assuming|unless|imagine|pretend)\b", re.IGNORECASE)
_CHECK_VERB = re.compile(
    r"\b(?:try|trying|check|checking|test|testing|verify|verifying|plug(?:ging)?\s+in|put(?:ting)?\s+in|"
    r"substitut(?:e|ing))\s+(?:(?:whether|if)\s+(?:(?:it|that|the\s+answer)\s*(?:'s|\s+is|\s+would\s+be|\s+could\s+be)\s+)?)?"
    r"(?:(?:the\s+)?(?:number|value|answer)\s+)?[$\u20ac\u00a3]?$",
    re.IGNORECASE,
)
_EMBEDDED_QUESTION = re.compile(
    r"\b(?:check|see|test|verify|find\s+out|tell\s+me|ask\s+yourself)\s+(?:whether|if)\b", re.IGNORECASE)
_ALTERNATIVE_NEXT = re.compile(r"^[\s,]*(?:or|either)\b", re.IGNORECASE)


def _offer_discarded(text: str, sentence: Sentence, clause: Clause, m: _Mention, question_words: frozenset[str],
                     *, yes_no: bool) -> bool:
    """The exclusions of the comment block above, for an offered mention."""
    prefix, suffix = text[clause.start:m.start], text[m.end:clause.end]
    if yes_no:
        opening = _YES_NO_OPENING.match(prefix)
        if opening:
            prefix = prefix[opening.end():]
    window = " ".join(_WORD.findall(prefix)[-4:])
    if _NEGATOR.search(window) or _NEGATIVE_AFTER.match(suffix):
        return True
    conditional = _CONDITIONAL.search(text[clause.start:m.start])
    if conditional and not _EMBEDDED_QUESTION.search(text[clause.start:m.start]):
        return True
    if _ALTERNATIVE_BEFORE.search(prefix) or _ALTERNATIVE_NEXT.match(text[m.end:sentence.end]):
        return True
    return m.numeric and _not_a_value(text, clause, m, question_words)


def _bare_fragment(text: str, clause: Clause, m: _Mention) -> bool:
    """The clause is only the candidate with filler words: "— evaporation?", "maybe 42?"."""
    rest = _words(text[clause.start:m.start]) + _words(text[m.end:clause.end])
    return all(w in _FILLER or w in _STUDENT_TAIL for w in rest)


def _closes_yes_no(text: str, sentence: Sentence, clause: Clause, m: _Mention) -> bool:
    """A weak mention that ends a yes/no question led by a copula or modal: "Is the number of forces two?"."""
    first = next(c for c in sentence.clauses if c.interrogative)
    after = _words(text[m.end:sentence.end])
    return bool(_COPULA_OPENING.match(text[first.start:first.end])) and all(w in _TRAILING_FILLER for w in after)


def offered_for_checking(prepared: str, pos: int) -> bool:
    """True when position ``pos`` of a :func:`prepare_text` text comes right after a verb inviting
    a check in its clause ("Try 18 and see", "Let's check 18:"): the value is offered, not stated,
    although :func:`find_stated_answer` (the stop rule) reads it as stated."""
    where = locate(split_sentences(prepared), pos)
    return where is not None and bool(_CHECK_VERB.search(prepared[where[1].start:pos]))


def find_offered_answer(
    text: str,
    answer_forms: list[str],
    domain: str,
    *,
    question: str | None = None,
) -> AnswerMatch | None:
    """The first place where ``text`` *offers* the gold as the candidate to accept or check (a
    leading question, an invitation to try it; see the comment block above), or None. A mention
    that is stated (:func:`find_stated_answer`) is not looked at here: callers ask that first."""
    for prepared, m, sentence, clause, question_words in _located_mentions(text, answer_forms, domain, question):
        if clause.interrogative:
            interrogative = [c for c in sentence.clauses if c.interrogative]
            governing = [c for c in interrogative if c.start <= clause.start
                         and (OPENER.match(prepared[c.start:c.end]) or TAG.match(prepared[c.start:c.end]))]
            opener = governing[-1] if governing else None
            wh = opener is not None and bool(_WH.match(prepared[opener.start:opener.end]))
            fragment = clause is not opener and _bare_fragment(prepared, clause, m)
            what_about = bool(_WHAT_ABOUT.search(prepared[clause.start:m.start]))
            if wh and not (fragment or what_about):
                continue  # a wh-question asks for a value, it does not offer one
            yes_no = opener is not None and not wh
            if _offer_discarded(prepared, sentence, clause, m, question_words, yes_no=yes_no):
                continue
            if m.weak and not (_has_answer_frame(prepared, clause, m, question_words, student=True)
                               or _tentative_proposal(prepared, sentence, m) or fragment or what_about
                               or (yes_no and _closes_yes_no(prepared, sentence, clause, m))):
                continue
        else:
            if not _CHECK_VERB.search(prepared[clause.start:m.start]):
                continue
            if _offer_discarded(prepared, sentence, clause, m, question_words, yes_no=False):
                continue
            if m.weak and not _has_answer_frame(prepared, clause, m, question_words, student=True):
                continue
        return AnswerMatch(m.start, m.end, prepared[m.start:m.end], prepared[sentence.start:sentence.end].strip())
    return None


def prepare_text(text: str) -> str:
    """The text the span functions work on (NFKC, curly quotes folded; same offsets throughout)."""
    return _prepare(text)


def asked_at(prepared: str, pos: int) -> bool:
    """True when position ``pos`` of a :func:`prepare_text` text lies in the interrogative part of
    its sentence ("Good, well done, can you explain why?": "Good" is not asked, "explain" is)."""
    where = locate(split_sentences(prepared), pos)
    return where is not None and where[1].interrogative


def is_numeric_gold(answer_forms: list[str], domain: str) -> bool:
    """True when the gold is matched as a number (every mathematics gold; a science count such as
    "two", "none" or "39")."""
    return bool(_numeric_golds(answer_forms, all_or_nothing=domain in SCIENCE_DOMAINS)[0])


def gold_mentioned(text: str, answer_forms: list[str], domain: str) -> bool:
    """True when ``text`` mentions the gold in any way the stop rule looks at (stated or not;
    number words and digits of a worded science count included)."""
    return bool(text and answer_forms and _gold_mentions(_prepare(text), answer_forms, domain))


def negates_answer(text: str, answer_forms: list[str], domain: str, *, question: str | None = None) -> bool:
    """True when ``text`` mentions the gold only to reject it ("42 isn't right", "not gravity").
    With ``question``: a negation that is the content of a question asking for what is not so
    ("It changes the direction but not its magnitude.", see the comment block above) rejects
    nothing."""
    prepared = _prepare(text)
    sentences = split_sentences(prepared)
    negative_question = _asks_for_what_is_not(question)
    for m in _gold_mentions(prepared, answer_forms, domain):
        where = locate(sentences, m.start)
        if where is None or where[1].interrogative:
            continue
        sentence, clause = where
        prefix, suffix = prepared[clause.start:m.start], prepared[m.end:clause.end]
        if _NEGATOR.search(" ".join(_WORD.findall(prefix)[-4:])) or _NEGATIVE_AFTER.match(suffix):
            if negative_question and _negation_is_content(prepared, sentence, clause, m):
                continue
            return True
    return False
