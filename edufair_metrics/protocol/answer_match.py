"""Deterministic gold-answer detectors.

:func:`mentions_answer`: does the gold occur in a text at all (the bank builders drop items whose
question contains it). :func:`find_stated_answer`: does a text *state* the gold as an answer, and
where (the stop rule of paper §3.2 and leakage detectors; rules in the comment block above it).
Both are deliberately simple and documented, so that their behaviour is predictable. Occurrence:

Mathematics (numeric gold)
    Every number token in the text is parsed exactly (``fractions.Fraction``) and compared with
    the gold value(s) parsed from ``answer_forms``. Handled: thousands separators ("1,000"),
    currency ("$18"), trailing zeros ("18.0", "18.00"), leading-dot decimals (".5"), signs
    ("-3" only when the minus is not a binary operator, as in "20-3"), percentages ("25%"),
    units after a space ("18 dollars"), fractions "3/4" and ``\\frac{3}{4}`` (matched only against
    a non-integer gold, so "36/2" does not count as stating 18), and English number words
    for golds 11..99 ("eighteen", "twenty-five"; words for 0..10 are too common in ordinary
    prose, e.g. "one way", to be evidence). A number glued to a letter ("18th", "2x", "H2O")
    is not a number token, and "180"/"1.8"/"18.5" never match 18.

Science (SciQ phrase gold)
    The normalised answer phrase (see :func:`normalize_answer`) must occur in the normalised
    text with word boundaries, case-insensitively; words may be separated by spaces or
    hyphens, and the last word may carry a simple plural/singular variant (s, es, y/ies).
    A purely numeric science answer is matched numerically as above.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from fractions import Fraction
from typing import Iterable

__all__ = [
    "AnswerMatch",
    "NUMERIC_DOMAINS",
    "find_stated_answer",
    "asked_at",
    "gold_mentioned",
    "is_numeric_gold",
    "mentions_answer",
    "negates_answer",
    "normalize_answer",
    "numbers_in_text",
    "parse_number",
    "prepare_text",
]

NUMERIC_DOMAINS = ("mathematics",)
_SCIENCE_DOMAINS = ("physics", "chemistry")

# A number token: not glued to a word character or a decimal point on the left, not glued to a
# word character on the right. The minus sign is a sign only when the character before it is
# not a word character or a closing bracket (otherwise it is subtraction: "20-3").
_NUMBER_RE = re.compile(
    r"(?<![\w.\)\]])(?P<neg>[-\u2212](?=\.?\d))?"
    r"(?<![\w.])"
    r"(?:(?P<int>\d{1,3}(?:,\d{3})+(?![\d,])|\d+)(?:\.(?P<dec>\d+))?|\.(?P<dec_only>\d+))"
    r"(?![\w])"
)
# "3/4" (no spaces: with spaces it reads as a division being set up) and LaTeX \frac{3}{4}.
_FRACTION_RE = re.compile(
    r"(?<![\w.])(?P<num>\d+)/(?P<den>\d+)(?![\w.])|\\d?frac\{\s*(?P<lnum>\d+)\s*\}\{\s*(?P<lden>\d+)\s*\}"
)

_UNITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
_TEENS = ["ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
          "eighteen", "nineteen"]
_TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_WORD_MIN, _WORD_MAX = 11, 99


def _number_words(value: int) -> list[str]:
    """English spellings of 11..99 as regex fragments ("twenty[- ]five")."""
    if value < 20:
        return [_TEENS[value - 10]]
    tens, units = divmod(value, 10)
    if units == 0:
        return [_TENS[tens]]
    return [_TENS[tens] + r"[\s\-]+" + _UNITS[units]]


def _fold(text: str) -> str:
    # NFKC folds full-width digits and ligatures; casefold for case-insensitive matching.
    return unicodedata.normalize("NFKC", text).casefold()


def parse_number(text: str) -> Fraction | None:
    """Parse a whole string as one number ("$1,000", "-3.50", "3/4", "18%"); None otherwise."""
    s = _fold(text).strip().replace("\u2212", "-")
    s = re.sub(r"^\$\s*|\s*(?:%|dollars?)$", "", s).strip()
    s = s.lstrip("$").strip()
    m = re.fullmatch(r"(-)?\s*(\d+)\s*/\s*(\d+)", s)
    if m:
        if int(m.group(3)) == 0:
            return None
        value = Fraction(int(m.group(2)), int(m.group(3)))
        return -value if m.group(1) else value
    m = re.fullmatch(r"(-)?(\d{1,3}(?:,\d{3})+|\d+)?(?:\.(\d+))?", s)
    if not m or (m.group(2) is None and m.group(3) is None):
        return None
    value = Fraction(int((m.group(2) or "0").replace(",", "")))
    if m.group(3):
        value += Fraction(int(m.group(3)), 10 ** len(m.group(3)))
    return -value if m.group(1) else value


def numbers_in_text(text: str) -> list[Fraction]:
    """All plain number tokens of ``text`` (fractions a/b contribute their two parts)."""
    out = []
    for m in _NUMBER_RE.finditer(_fold(text)):
        int_part = m.group("int")
        dec = m.group("dec") or m.group("dec_only")
        value = Fraction(int(int_part.replace(",", ""))) if int_part else Fraction(0)
        if dec:
            value += Fraction(int(dec), 10 ** len(dec))
        out.append(-value if m.group("neg") else value)
    return out


def _fractions_in_text(text: str) -> list[Fraction]:
    out = []
    for m in _FRACTION_RE.finditer(_fold(text)):
        num, den = (m.group("num"), m.group("den")) if m.group("num") else (m.group("lnum"), m.group("lden"))
        if int(den) != 0:
            out.append(Fraction(int(num), int(den)))
    return out


def _mentions_number(text: str, golds: set[Fraction]) -> bool:
    if not golds:
        return False
    if golds.intersection(numbers_in_text(text)):
        return True
    non_integer = {g for g in golds if g.denominator != 1}
    if non_integer and non_integer.intersection(_fractions_in_text(text)):
        return True
    folded = _fold(text)
    for g in golds:
        if g.denominator == 1 and _WORD_MIN <= abs(g.numerator) <= _WORD_MAX:
            words = "|".join(_number_words(abs(g.numerator)))
            # "negative"/"minus" before the word flips the sign; require it to match the gold's.
            neg = r"(?:negative|minus)\s+" if g < 0 else r"(?<!negative )(?<!minus )"
            if re.search(rf"(?<![\w-]){neg}(?:{words})(?![\w-])", folded):
                return True
    return False


_ARTICLE_RE = re.compile(r"^(?:a|an|the)\s+")
_EDGE_PUNCT = " \t\n\r.,;:!?\"'`()[]{}"


def normalize_answer(text: str) -> str:
    """Lowercase (NFKC, casefold), hyphens/underscores -> space, whitespace collapsed, edge
    punctuation trimmed, one leading article dropped: ``"  The Nucleus. "`` -> ``"nucleus"``."""
    s = _fold(text).replace("_", " ").replace("-", " ").replace("\u2010", " ")
    s = re.sub(r"\s+", " ", s).strip(_EDGE_PUNCT)
    stripped = _ARTICLE_RE.sub("", s)
    return stripped if stripped else s


def _word_variants(word: str) -> list[str]:
    """Simple singular/plural variants of one word (longest first, for the regex)."""
    variants = {word}
    if word.isalpha() and len(word) >= 3:
        variants.update({word + "s", word + "es"})
        if word.endswith("ies"):
            variants.add(word[:-3] + "y")
        elif word.endswith("y") and word[-2:-1] not in "aeiou":
            variants.add(word[:-1] + "ies")
        if word.endswith("es"):
            variants.add(word[:-2])
        if word.endswith("s") and not word.endswith("ss"):
            variants.add(word[:-1])
    return sorted(variants, key=lambda v: (-len(v), v))


@functools.lru_cache(maxsize=4096)  # a dialogue asks for its gold's pattern after every turn
def _phrase_pattern(phrase: str) -> re.Pattern[str] | None:
    words = phrase.split()
    if not words:
        return None
    head = [re.escape(w) for w in words[:-1]]
    last = "(?:" + "|".join(re.escape(v) for v in _word_variants(words[-1])) + ")"
    body = r"[\s\-]+".join(head + [last])
    return re.compile(rf"(?<![\w])(?<!\d\.){body}(?![\w])(?!\.\d)")


def _mentions_phrase(text: str, forms: Iterable[str]) -> bool:
    folded = _fold(text)
    for form in forms:
        pattern = _phrase_pattern(normalize_answer(form))
        if pattern is not None and pattern.search(folded):
            return True
    return False


def mentions_answer(text: str, answer_forms: list[str], domain: str) -> bool:
    """True when ``text`` states the gold answer given by ``answer_forms`` (see module doc)."""
    if not text or not answer_forms:
        return False
    if domain in NUMERIC_DOMAINS:
        golds = {v for v in (parse_number(f) for f in answer_forms) if v is not None}
        return _mentions_number(text, golds)
    if domain in _SCIENCE_DOMAINS:
        golds = {v for v in (parse_number(f) for f in answer_forms) if v is not None}
        if golds and len(golds) == len(answer_forms):  # purely numeric science answer
            return _mentions_number(text, golds)
        return _mentions_phrase(text, answer_forms)
    raise ValueError(f"unknown domain {domain!r}; expected one of mathematics, physics, chemistry")


# ---------------------------------------------------------------------------------------------
# "States the gold as an answer" (the stop rule of paper §3.2, shared with leakage detectors)
# ---------------------------------------------------------------------------------------------
#
# ``mentions_answer`` says whether the gold occurs in a text at all (the bank builders need exactly
# that). The stop rule needs more: the speaker must *state* the gold as an answer. A gold mention
# found by the matchers above is discarded when, in its sentence and clause,
#
# * it is asked, not stated: its sentence ends with "?" and the mention lies in the interrogative
#   part (from the first clause opening with a question word or an inverted auxiliary, or the
#   whole sentence when none does: "You think it's 42?"). A declarative clause before a question
#   or a tag ("So it's 42, right?", "42 - can you explain why?") still states it;
# * it is negated or only compared: "not", "n't", "never", "rather than", "instead of", "than"...
#   up to four words before it in its clause ("it's not 42", "not X but Y"), or a negative
#   predicate right after it ("42 isn't right", "42 is too high");
# * it is hypothetical or reported: "if", "whether", "suppose", "you said", "you think" earlier in
#   its clause;
# * it is one side of an alternative ("42 or 24", "either X or Y");
# * (numbers) it is a step, ordinal or list number ("step 2", "2 steps", "part 2", "question 2",
#   "#2", a line starting "2." / "2)", an inline "2)" enumeration), or an operand of an
#   arithmetic expression ("42 minus 12", "12 + 42", "subtract 12 from 42"), not its result
#   ("84 / 2 = 42", "84 divided by 2 is 42" state 42).
#
# Small numbers are common in ordinary prose ("two forces act", "one way", "none of these"), so a
# *weak* mention (number words zero..ten and "none" in any domain; every number in a science
# domain, where golds are counts such as "two" or "20") needs an answer frame as well: a cue right
# before it ("the answer is", "=", "equals"), or a clause that is only the number with filler
# words ("Yes, two!", "It's four.", "There are two."), or the number followed by a content word
# of the question ("two forces" for "How many forces...?"). "none of ..." never counts; a science
# count gold is matched by its word and its digits ("two" / "2"), "none" also by "zero" / "0".
#
# With ``allow_tentative`` (the student's side of the stop rule) a question whose interrogative
# part is only the candidate answer proposes it: "Is it 42?", "Maybe gravity?", "42 pages?" state
# 42 / gravity, but "Is it 42 minus 12?" and "Is it gravity or friction?" do not.


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


_GLUED_UNIT_RE = re.compile(
    r"(?<![\w.,])(?P<num>\d+(?:\.\d+)?)(?:km|cm|mm|kg|mg|ml|mph|kmh|hrs?|mins?|secs?|lbs?|ft|oz|kwh|hz|kpa)\b",
    re.IGNORECASE,
)
_SCALED_RE = re.compile(r"(?<![\w.,])(?P<num>\d+(?:\.\d+)?)\s+(?P<scale>thousand|million|billion)\b", re.IGNORECASE)
_SCALES = {"thousand": 1000, "million": 10**6, "billion": 10**9}
_SMALL_WORDS = {w: i for i, w in enumerate(_UNITS)} | {"ten": 10}
_NONE_WORDS = ("none",)


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
    (mathematics) non-numeric forms are skipped, as in :func:`mentions_answer`."""
    values: set[Fraction] = set()
    worded = False
    for form in answer_forms:
        v = parse_number(form)
        if v is None:
            word = normalize_answer(form)
            if word in _SMALL_WORDS:
                v, worded = Fraction(_SMALL_WORDS[word]), True
            elif word in _NONE_WORDS:
                v, worded = Fraction(0), True
            elif word in _TEENS or word in _TENS[2:]:
                v = Fraction(_TEENS.index(word) + 10 if word in _TEENS else _TENS.index(word) * 10)
                worded = True
            elif all_or_nothing:
                return frozenset(), False
            else:
                continue
        values.add(v)
    return frozenset(values), worded


def _number_mentions(text: str, golds: frozenset[Fraction], *, all_weak: bool, zero_as_none: bool) -> list[_Mention]:
    out: list[_Mention] = []
    for m in _NUMBER_RE.finditer(text):
        int_part = m.group("int")
        dec = m.group("dec") or m.group("dec_only")
        value = Fraction(int(int_part.replace(",", ""))) if int_part else Fraction(0)
        if dec:
            value += Fraction(int(dec), 10 ** len(dec))
        if m.group("neg"):
            value = -value
        if value in golds:
            out.append(_Mention(m.start(), m.end(), True, all_weak))
    for m in _SCALED_RE.finditer(text):  # "14 thousand", "1.5 million"
        v = parse_number(m.group("num"))
        if v is not None and v * _SCALES[m.group("scale").lower()] in golds:
            out.append(_Mention(m.start(), m.end(), True, all_weak))
    for m in _GLUED_UNIT_RE.finditer(text):  # "3km", "18kg": a number with its unit glued on
        if parse_number(m.group("num")) in golds:
            out.append(_Mention(m.start(), m.end("num"), True, all_weak))
    non_integer = {g for g in golds if g.denominator != 1}
    for m in _FRACTION_RE.finditer(text):
        num, den = (m.group("num"), m.group("den")) if m.group("num") else (m.group("lnum"), m.group("lden"))
        if int(den) != 0 and Fraction(int(num), int(den)) in non_integer:
            out.append(_Mention(m.start(), m.end(), True, all_weak))
    for g in golds:
        if g.denominator != 1 or abs(g.numerator) > _WORD_MAX:
            continue
        n = abs(g.numerator)
        if n >= _WORD_MIN:
            words, weak = "|".join(_number_words(n)), all_weak
        else:
            words, weak = _UNITS[n] if n < 10 else "ten", True
            if n == 0 and zero_as_none:
                words = "none|zero"
        neg = r"(?:negative|minus)\s+" if g < 0 else r"(?<!negative )(?<!minus )"
        for m in re.finditer(rf"(?<![\w-]){neg}(?:{words})(?![\w-])", text, re.IGNORECASE):
            out.append(_Mention(m.start(), m.end(), True, weak))
    return out


def _phrase_mentions(text: str, forms: Iterable[str]) -> list[_Mention]:
    out = []
    variants = []
    for form in forms:
        phrase = normalize_answer(form)
        variants.append(phrase)
        worded = re.sub(r"\b(10|[0-9])\b", lambda d: _UNITS[int(d.group())] if d.group() != "10" else "ten", phrase)
        if worded != phrase:
            variants.append(worded)  # "group 1" is also said "group one"
    for phrase in variants:
        pattern = _phrase_pattern(phrase)
        if pattern is None:
            continue
        for m in re.finditer(pattern.pattern, text, re.IGNORECASE):
            out.append(_Mention(m.start(), m.end(), False, False))
    return out


def _gold_mentions(text: str, answer_forms: list[str], domain: str) -> list[_Mention]:
    if domain not in NUMERIC_DOMAINS and domain not in _SCIENCE_DOMAINS:
        raise ValueError(f"unknown domain {domain!r}; expected one of mathematics, physics, chemistry")
    science = domain in _SCIENCE_DOMAINS
    golds, worded = _numeric_golds(answer_forms, all_or_nothing=science)
    if golds:
        return _number_mentions(text, golds, all_weak=science, zero_as_none=worded)
    if domain in NUMERIC_DOMAINS:
        return []
    return _phrase_mentions(text, answer_forms)


# --- sentences and clauses ---------------------------------------------------------------------

# A sentence ends at . ! ? (not a decimal point: whitespace or the end must follow) or a newline.
_SENTENCE_END = re.compile(r"[.!?]+[\"')\]]*(?=\s|$)|\n")
# Clause boundaries inside a sentence: ", " ; ": " dashes, and contrastive conjunctions.
_CLAUSE_SEP = re.compile(
    r",(?=\s|$)|;|:(?=\s|$)|\s[\u2014\u2013-]{1,2}\s|[\u2014\u2013]|\s(?=(?:but|whereas|though|although|however)\b)",
    re.IGNORECASE,
)
_OPENER = re.compile(
    r"^\W*(?:(?:and|so|then|but|or|now|okay|ok|well|hmm|um|also)\s+)*"
    r"(?:what|which|who|whom|whose|why|how|where|when|is|are|was|were|am|do|does|did|can|could|would|"
    r"will|should|shall|may|might|have|has|had|isn't|aren't|wasn't|weren't|don't|doesn't|didn't|can't|"
    r"couldn't|wouldn't|won't|shouldn't|hasn't|haven't|or)\b",
    re.IGNORECASE,
)
_TAG = re.compile(
    r"^\W*(?:right|correct|ok|okay|yes|yeah|agreed|true|no|see|you see|got it|make sense|fair|"
    r"isn't it|aren't they|don't you think|wouldn't you say|does that make sense|"
    r"is that right|is that correct|am i right)\W*$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class _Clause:
    start: int
    end: int
    interrogative: bool


@dataclass(frozen=True)
class _Sentence:
    start: int
    end: int
    clauses: tuple[_Clause, ...]


def _split_sentences(text: str) -> list[_Sentence]:
    sentences = []
    pos = 0
    bounds = [m.end() for m in _SENTENCE_END.finditer(text)] + [len(text)]
    for end in bounds:
        if end <= pos:
            continue
        raw = text[pos:end]
        lead = len(raw) - len(raw.lstrip())
        start = pos + lead
        if text[start:end].strip():
            sentences.append(_sentence(text, start, end))
        pos = end
    return sentences


def _sentence(text: str, start: int, end: int) -> _Sentence:
    body = text[start:end]
    cuts = [0] + [m.end() for m in _CLAUSE_SEP.finditer(body)] + [len(body)]
    spans = [(start + a, start + b) for a, b in zip(cuts, cuts[1:]) if b > a]
    is_question = body.rstrip(" \"')]*").endswith("?")
    q_from = len(spans)
    if is_question:
        openers = [i for i, (a, b) in enumerate(spans) if _OPENER.match(text[a:b])]
        if openers:
            q_from = openers[0]
        elif len(spans) > 1 and _TAG.match(text[spans[-1][0]:spans[-1][1]]):
            q_from = len(spans) - 1
        else:
            q_from = 0  # a declarative-form question: "You think it's 42?"
    clauses = tuple(_Clause(a, b, i >= q_from) for i, (a, b) in enumerate(spans))
    return _Sentence(start, end, clauses)


def _locate(sentences: list[_Sentence], pos: int) -> tuple[_Sentence, _Clause] | None:
    for s in sentences:
        if s.start <= pos < s.end:
            for c in s.clauses:
                if c.start <= pos < c.end:
                    return s, c
            return s, s.clauses[-1]
    return None


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
_STEP_BEFORE = re.compile(rf"\b(?:{_STEP_NOUNS}|no\.|number|#)\s*(?:#|no\.)?\s*$", re.IGNORECASE)
# Nouns that count the tutoring itself ("2 steps", "3 hints", "2 ways", "5 minutes"), not the problem;
# ignored when the question itself counts them ("How many steps...?").
_STEP_AFTER = re.compile(
    r"^\s*(?:(?:more|quick|simple|easy|small|short|main|key|separate|little|big|different|further|"
    r"important|basic|clear|other|possible|useful|good)\s+)?(?P<noun>steps?|parts?|stages?|phases?|hints?|"
    r"sub-?questions?|sub-?steps?|ways?|approaches|approach|methods?|strategies|strategy|tips?|things?|tries|"
    r"try|attempts?|examples?|questions?|minutes?|seconds?|options?|ideas?|points?|rules?|tricks?)\b",
    re.IGNORECASE,
)
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
            words.update(_word_variants(w))
    return frozenset(words)


def _words(s: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(s)]


def _has_answer_frame(text: str, clause: _Clause, m: _Mention, question_words: frozenset[str]) -> bool:
    prefix, suffix = text[clause.start:m.start], text[m.end:clause.end]
    if _STRONG_CUE.search(prefix):
        return True
    after = _words(suffix)
    if after[:1] == ["of"]:
        return False  # "none of these", "two of the forces"
    if after and after[0] in question_words:
        before = _words(prefix)
        return not before or before[-1] not in _NOT_BEFORE_COUNT
    if not all(w in _TRAILING_FILLER for w in after):
        return False
    before = _words(prefix)
    # "It's two.", "There are two." (only fillers before), or "The work done is zero." (a copula
    # right before a clause-final number).
    return all(w in _FILLER for w in before) or (bool(before) and before[-1] in _COPULA)


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


def _discarded(text: str, clause: _Clause, m: _Mention, question_words: frozenset[str] = frozenset()) -> bool:
    """True when the mention is negated, hypothetical, an alternative, a step number or an operand."""
    prefix, suffix = text[clause.start:m.start], text[m.end:clause.end]
    window = " ".join(_WORD.findall(prefix)[-4:])
    if _NEGATOR.search(window) or _NEGATIVE_AFTER.match(suffix):
        return True
    if _HYPOTHETICAL.search(prefix):
        return True
    if _ALTERNATIVE_BEFORE.search(prefix) or _ALTERNATIVE_AFTER.match(suffix):
        return True
    if m.numeric:
        step = _STEP_AFTER.match(suffix)
        if _STEP_BEFORE.search(prefix) or (step and step.group("noun").lower() not in question_words):
            return True
        if _RANGE_BEFORE.search(prefix) or _RANGE_AFTER.match(suffix):
            return True  # "from 1 to 10", "10 out of 10"
        if text[m.start:m.end].isdigit() and _list_marker(text, m):
            return True
        if _OPERATOR_AFTER.match(text[m.end:]) or _OPERATOR_BEFORE.search(text[:m.start]):
            return True
    return False


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


def _declarative_form(text: str, sentence: _Sentence) -> bool:
    """A question without a question word or inverted auxiliary: "So each lap is 3 km?"."""
    return not any(_OPENER.match(text[c.start:c.end]) or _TAG.match(text[c.start:c.end]) for c in sentence.clauses)


def _tentative_proposal(text: str, sentence: _Sentence, m: _Mention) -> bool:
    """A question whose interrogative part is only the candidate: "Is it 42?", "Maybe gravity?"."""
    q = [c for c in sentence.clauses if c.interrogative]
    if not q:
        return False
    start = q[0].start
    lead, tail = text[start:m.start], text[m.end:q[-1].end]
    tail = tail.rstrip(" ?!.\"')]")
    return bool(_TENTATIVE_LEAD.match(lead)) and not _TENTATIVE_TAIL_BLOCK.search(tail) and len(_words(tail)) <= 3


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
    ``allow_tentative``: a question that only offers the candidate ("Is it 42?") proposes it.
    """
    if not text or not answer_forms:
        return None
    prepared = _prepare(text)
    mentions = sorted(_gold_mentions(prepared, answer_forms, domain), key=lambda m: (m.start, -m.end))
    if not mentions:
        return None
    sentences = _split_sentences(prepared)
    question_words = _content_words(question)
    for m in mentions:
        where = _locate(sentences, m.start)
        if where is None:
            continue
        sentence, clause = where
        if clause.interrogative:
            if not allow_tentative:
                continue
            if _tentative_proposal(prepared, sentence, m):
                # A bare proposal ("Is it two?") needs no further frame; the lead-in is its frame.
                return AnswerMatch(m.start, m.end, prepared[m.start:m.end],
                                   prepared[sentence.start:sentence.end].strip())
            if not _declarative_form(prepared, sentence):
                continue
            # "So each lap is 3 km?": a statement with a question mark, judged as a statement.
        if _discarded(prepared, clause, m, question_words):
            continue
        if m.weak and not _has_answer_frame(prepared, clause, m, question_words):
            continue
        return AnswerMatch(m.start, m.end, prepared[m.start:m.end], prepared[sentence.start:sentence.end].strip())
    return None


def prepare_text(text: str) -> str:
    """The text the span functions work on (NFKC, curly quotes folded; same offsets throughout)."""
    return _prepare(text)


def asked_at(prepared: str, pos: int) -> bool:
    """True when position ``pos`` of a :func:`prepare_text` text lies in the interrogative part of
    its sentence ("Good, well done, can you explain why?": "Good" is not asked, "explain" is)."""
    where = _locate(_split_sentences(prepared), pos)
    return where is not None and where[1].interrogative


def is_numeric_gold(answer_forms: list[str], domain: str) -> bool:
    """True when the gold is matched as a number (every mathematics gold; a science count such as
    "two", "none" or "39")."""
    return bool(_numeric_golds(answer_forms, all_or_nothing=domain in _SCIENCE_DOMAINS)[0])


def gold_mentioned(text: str, answer_forms: list[str], domain: str) -> bool:
    """True when ``text`` mentions the gold in any way the stop rule looks at (stated or not;
    number words and digits of a worded science count included)."""
    return bool(text and answer_forms and _gold_mentions(_prepare(text), answer_forms, domain))


def negates_answer(text: str, answer_forms: list[str], domain: str) -> bool:
    """True when ``text`` mentions the gold only to reject it ("42 isn't right", "not gravity")."""
    prepared = _prepare(text)
    sentences = _split_sentences(prepared)
    for m in _gold_mentions(prepared, answer_forms, domain):
        where = _locate(sentences, m.start)
        if where is None or where[1].interrogative:
            continue
        clause = where[1]
        prefix, suffix = prepared[clause.start:m.start], prepared[m.end:clause.end]
        if _NEGATOR.search(" ".join(_WORD.findall(prefix)[-4:])) or _NEGATIVE_AFTER.match(suffix):
            return True
    return False
