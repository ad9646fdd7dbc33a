"""FROZEN: the shipped question bank's selection (and hence the bank sha256 recorded in provenance) depends on this module.

:func:`mentions_answer` says whether the gold occurs in a text at all: the bank builders drop
items whose question contains it (``bank/gsm8k.py``, ``bank/sciq.py``, ``bank/socrateach.py``), so
changing what it matches changes which items a rebuild keeps, and so the bank files and their
sha256. :func:`normalize_answer` wrote the shipped ``answer_forms``. Both must stay byte-for-byte
identical in behaviour; ``tests/protocol/test_mention_frozen.py`` pins them on the shipped bank.
Improvements to matching belong in :mod:`.stated` (the stop rule's matcher), never here; a
deliberate change here means a new bank version.

This module therefore imports nothing from its sibling modules: it keeps private copies of the
number and phrase scanners it needs (the living ones, in :mod:`.numbers` and :mod:`.phrases`, may
change with the stop rule). Correctness of the freeze beats deduplication here.

Occurrence rules:

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
from fractions import Fraction
from typing import Iterable

__all__ = ["NUMERIC_DOMAINS", "SCIENCE_DOMAINS", "mentions_answer", "normalize_answer"]

# The domain vocabulary of the matchers (the living matcher in .stated reads it from here, so
# that both always agree on which golds are numbers).
NUMERIC_DOMAINS = ("mathematics",)
SCIENCE_DOMAINS = ("physics", "chemistry")

# --- private, frozen copies of the number scanners (see the module docstring) -----------------

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


def _parse_number(text: str) -> Fraction | None:
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


def _numbers_in_text(text: str) -> list[Fraction]:
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
    if golds.intersection(_numbers_in_text(text)):
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


# --- normalisation and private, frozen copies of the phrase scanners ---------------------------

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


@functools.lru_cache(maxsize=4096)
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
    """True when ``text`` contains the gold answer given by ``answer_forms`` (see module doc)."""
    if not text or not answer_forms:
        return False
    if domain in NUMERIC_DOMAINS:
        golds = {v for v in (_parse_number(f) for f in answer_forms) if v is not None}
        return _mentions_number(text, golds)
    if domain in SCIENCE_DOMAINS:
        golds = {v for v in (_parse_number(f) for f in answer_forms) if v is not None}
        if golds and len(golds) == len(answer_forms):  # purely numeric science answer
            return _mentions_number(text, golds)
        return _mentions_phrase(text, answer_forms)
    raise ValueError(f"unknown domain {domain!r}; expected one of mathematics, physics, chemistry")
