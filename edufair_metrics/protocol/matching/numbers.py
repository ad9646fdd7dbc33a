"""Number scanners shared by the stop rule's matcher (:mod:`.stated`) and the stop rule itself.

* :func:`parse_number`: a whole string as one number ("$1,000", "-3.50", "3/4", "18%");
* :func:`numbers_in_text`: every plain number token of a text;
* :func:`number_spans`: where a text mentions one of a set of gold values: number tokens,
  scaled numbers ("14 thousand"), numbers with a glued unit ("3km"), fractions ("3/4",
  ``\\frac{3}{4}``, only for a non-integer gold) and number words ("eighteen"; "two", "none";
  "one hundred and twenty"; halves, thirds and quarters: "three-quarters", "seven and a half");
* :func:`word_numbers_in_text`: the values of a text's number words ("nine", "twenty-five",
  "a hundred and twenty").

A number glued to a letter ("18th", "2x", "H2O") is not a number token; the minus sign is a sign
only when it is not a binary operator ("20-3" is subtraction).

(:mod:`.mention`, the frozen bank-selection matcher, keeps its own copies of these scanners.)
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from fractions import Fraction

__all__ = [
    "NONE_WORDS", "NumberSpan", "SMALL_WORDS", "TEENS", "TENS", "UNITS", "number_spans", "numbers_in_text",
    "parse_number", "small_number_word", "token_value", "word_numbers_in_text", "worded_fraction",
]

# A number token: not glued to a word character or a decimal point on the left, not glued to a
# word character on the right. The minus sign is a sign only when the character before it is
# not a word character or a closing bracket (otherwise it is subtraction: "20-3").
NUMBER_RE = re.compile(
    r"(?<![\w.\)\]])(?P<neg>[-\u2212](?=\.?\d))?"
    r"(?<![\w.])"
    r"(?:(?P<int>\d{1,3}(?:,\d{3})+(?![\d,])|\d+)(?:\.(?P<dec>\d+))?|\.(?P<dec_only>\d+))"
    r"(?![\w])"
)
# "3/4" (no spaces: with spaces it reads as a division being set up) and LaTeX \frac{3}{4}.
FRACTION_RE = re.compile(
    r"(?<![\w.])(?P<num>\d+)/(?P<den>\d+)(?![\w.])|\\d?frac\{\s*(?P<lnum>\d+)\s*\}\{\s*(?P<lden>\d+)\s*\}"
)
# "3km", "18kg": a number with its unit glued on (the span is the number).
GLUED_UNIT_RE = re.compile(
    r"(?<![\w.,])(?P<num>\d+(?:\.\d+)?)(?:km|cm|mm|kg|mg|ml|mph|kmh|hrs?|mins?|secs?|lbs?|ft|oz|kwh|hz|kpa)\b",
    re.IGNORECASE,
)
# "14 thousand", "1.5 million".
SCALED_RE = re.compile(r"(?<![\w.,])(?P<num>\d+(?:\.\d+)?)\s+(?P<scale>thousand|million|billion)\b", re.IGNORECASE)
SCALES = {"thousand": 1000, "million": 10**6, "billion": 10**9}

UNITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
TEENS = ["ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
         "eighteen", "nineteen"]
TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
# Number words 11..99 are evidence on their own; 0..10 are too common in prose ("one way").
WORD_MIN, WORD_MAX = 11, 99
SMALL_WORDS = {w: i for i, w in enumerate(UNITS)} | {"ten": 10}
NONE_WORDS = ("none",)


def number_words(value: int) -> list[str]:
    """English spellings of 11..99 as regex fragments ("twenty[- ]five")."""
    if value < 20:
        return [TEENS[value - 10]]
    tens, units = divmod(value, 10)
    if units == 0:
        return [TENS[tens]]
    return [TENS[tens] + r"[\s\-]+" + UNITS[units]]


HUNDREDS_MAX = 999


def _below_hundred(value: int) -> str:
    """1..99 as one regex fragment."""
    if value <= 10:
        return small_number_word(value)
    return "|".join(number_words(value))


def hundreds_words(value: int) -> str:
    """100..999 as a regex fragment: "(one|a) hundred (and) twenty[- ]five". A whole hundred
    ("two hundred") must not continue with more number words ("two hundred and five")."""
    hundreds, rest = divmod(value, 100)
    head = r"(?:one|a)\s+hundred" if hundreds == 1 else small_number_word(hundreds) + r"\s+hundred"
    if rest == 0:
        return head + r"(?![\s\-]+(?:and\s+)?(?:" + "|".join(UNITS[1:] + TEENS + TENS[2:]) + r")\b)"
    return head + r"(?:\s+and)?[\s\-]+(?:" + _below_hundred(rest) + ")"


# Number words of a text: "twenty-five", "a hundred and twenty", "nine".
_WORD_VALUE = {w: i for i, w in enumerate(UNITS)} | {w: 10 + i for i, w in enumerate(TEENS)} | {
    w: 10 * i for i, w in enumerate(TENS) if w}
_WORD_ALT = "|".join(sorted(_WORD_VALUE, key=len, reverse=True))
WORD_NUMBER_RE = re.compile(
    rf"(?<![\w-])(?<!thousand )(?<!thousand and )(?<!hundred )(?<!hundred and )(?:(?P<h>{_WORD_ALT}|a)\s+hundred"
    rf"(?:(?:\s+and)?[\s\-]+(?P<hr>(?:{_WORD_ALT})(?:-(?:{_WORD_ALT}))?))?"
    rf"|(?P<w>(?:{_WORD_ALT})(?:-(?:{_WORD_ALT}))?))(?![\w-])(?!\s+(?:hundred|thousand|million|billion)\b)",
    re.IGNORECASE,
)


def _compound_value(word: str) -> int | None:
    """ "twenty-five" -> 25, "nine" -> 9; None for "five-six" and the like."""
    parts = word.lower().split("-")
    if len(parts) == 1:
        return _WORD_VALUE.get(parts[0])
    tens, unit = (_WORD_VALUE.get(p) for p in parts)
    if parts[0] in TENS and parts[1] in UNITS[1:]:
        return tens + unit  # type: ignore[operator]
    return None


def word_numbers_in_text(text: str) -> list[Fraction]:
    """The values of the number words of ``text``, in order ("nine", "twelve", "twenty-five",
    "a hundred and twenty", "three hundred"); none inside a larger number ("one thousand two
    hundred"), which it does not read."""
    out = []
    for m in WORD_NUMBER_RE.finditer(text):
        if m.group("w"):
            v = _compound_value(m.group("w"))
        else:
            head = 1 if m.group("h").lower() == "a" else _WORD_VALUE.get(m.group("h").lower())
            rest = _compound_value(m.group("hr")) if m.group("hr") else 0
            v = None if head is None or not 1 <= head <= 9 or rest is None or rest > 99 else head * 100 + rest
        if v is not None:
            out.append(Fraction(v))
    return out


_FRACTION_WORDS = {
    Fraction(1, 2): r"(?:a|one)[\s\-]+half", Fraction(1, 4): r"(?:a|one)[\s\-]+(?:quarter|fourth)",
    Fraction(3, 4): r"three[\s\-]+(?:quarters|fourths)", Fraction(1, 3): r"(?:a|one)[\s\-]+third",
    Fraction(2, 3): r"two[\s\-]+thirds",
}
# "three quarters of the 12 cookies" is an operand; "three quarters of a cup" is the value.
_OF_A_QUANTITY = r"(?!\s+of\s+(?:the|his|her|their|its|this|that|these|those|them|it|[$\u20ac\u00a3]?\d))"


def worded_fraction(value: Fraction) -> str | None:
    """A positive value below 100 with a half, third or quarter as a regex ("three-quarters",
    "seven and a half", "two and two thirds"); None for other values."""
    if value <= 0 or value >= 100:
        return None
    whole = value.numerator // value.denominator
    part = _FRACTION_WORDS.get(value - whole)
    if part is None:
        return None
    if whole:
        whole_words = small_number_word(whole) if whole <= 10 else "|".join(number_words(whole))
        part = rf"(?:{whole_words})\s+and\s+{part}"
    return rf"(?<![\w-]){part}(?![\w-]){_OF_A_QUANTITY}"


def small_number_word(n: int) -> str:
    """The word for 0..10 ("zero" ... "ten")."""
    return UNITS[n] if n < 10 else "ten"


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


def token_value(m: re.Match[str]) -> Fraction:
    """The value of one :data:`NUMBER_RE` match."""
    int_part = m.group("int")
    dec = m.group("dec") or m.group("dec_only")
    value = Fraction(int(int_part.replace(",", ""))) if int_part else Fraction(0)
    if dec:
        value += Fraction(int(dec), 10 ** len(dec))
    return -value if m.group("neg") else value


def numbers_in_text(text: str) -> list[Fraction]:
    """All plain number tokens of ``text`` (fractions a/b contribute their two parts)."""
    return [token_value(m) for m in NUMBER_RE.finditer(_fold(text))]


@dataclass(frozen=True)
class NumberSpan:
    """Where a text mentions a gold value; ``word``: written as a number word 0..10 or "none"."""

    start: int
    end: int
    word: bool = False


@functools.lru_cache(maxsize=4096)  # the stop rule asks after every turn, the history for every value
def _fraction_pattern(g: Fraction) -> re.Pattern[str] | None:
    pattern = worded_fraction(g)
    return re.compile(pattern, re.IGNORECASE) if pattern else None


@functools.lru_cache(maxsize=4096)
def _word_pattern(g: Fraction, zero_as_none: bool) -> tuple[re.Pattern[str], bool] | None:
    """The number words of an integer value up to 999 as a pattern, and whether they are small."""
    if g.denominator != 1 or abs(g.numerator) > HUNDREDS_MAX:
        return None
    n = abs(g.numerator)
    if n > WORD_MAX:
        words, small = hundreds_words(n), False
    elif n >= WORD_MIN:
        words, small = "|".join(number_words(n)), False
    else:
        words, small = small_number_word(n), True
        if n == 0 and zero_as_none:
            words = "none|zero"
    neg = r"(?:negative|minus)\s+" if g < 0 else r"(?<!negative )(?<!minus )"
    # "twenty" inside "one hundred twenty" is not 20, nor "one" in "one hundred"
    return re.compile(rf"(?<![\w-])(?<!hundred )(?<!hundred and ){neg}(?:{words})(?![\w-])(?!\s+hundred\b)",
                      re.IGNORECASE), small


def number_spans(text: str, golds: frozenset[Fraction], *, zero_as_none: bool = False) -> list[NumberSpan]:
    """Every place where ``text`` mentions one of the values ``golds``, in the order of the scanners
    (tokens, scaled, glued units, fractions, words). ``zero_as_none``: a gold 0 is also "none"."""
    out: list[NumberSpan] = []
    for m in NUMBER_RE.finditer(text):
        if token_value(m) in golds:
            out.append(NumberSpan(m.start(), m.end()))
    for m in SCALED_RE.finditer(text):  # "14 thousand", "1.5 million"
        v = parse_number(m.group("num"))
        if v is not None and v * SCALES[m.group("scale").lower()] in golds:
            out.append(NumberSpan(m.start(), m.end()))
    for m in GLUED_UNIT_RE.finditer(text):  # "3km", "18kg": a number with its unit glued on
        if parse_number(m.group("num")) in golds:
            out.append(NumberSpan(m.start(), m.end("num")))
    non_integer = {g for g in golds if g.denominator != 1}
    for m in FRACTION_RE.finditer(text):
        num, den = (m.group("num"), m.group("den")) if m.group("num") else (m.group("lnum"), m.group("lden"))
        if int(den) != 0 and Fraction(int(num), int(den)) in non_integer:
            out.append(NumberSpan(m.start(), m.end()))
    for g in non_integer:  # "three-quarters", "seven and a half"
        pattern = _fraction_pattern(g)
        if pattern is not None:
            out.extend(NumberSpan(m.start(), m.end()) for m in pattern.finditer(text))
    for g in golds:
        found = _word_pattern(g, zero_as_none)
        if found is not None:
            pattern, small = found
            out.extend(NumberSpan(m.start(), m.end(), small) for m in pattern.finditer(text))
    return out
