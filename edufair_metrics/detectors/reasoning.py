"""``attempts_reasoning(text, domain)``: does a student turn show a reasoning step of its own?

Fixed, case-insensitive patterns over the text (no model), after the audit's App. B.3 / E.3:

Mathematics (and, as computations, science too) — any of
    * an expression or numerical computation: two operands joined by an operator
      (``+ - * × x · ÷ / ^``, or the words plus, minus, times, multiplied by, divided by, over),
      e.g. "9 x 2", "20-5", "nine times two", "2x + 3"; an operand is a number, a number word
      (zero … twenty, the tens, hundred) or an algebraic term ("x", "3n");
      an operation verb with numbers ("I multiplied 9 by 2", "add 5 and 3", "subtract 4 from 9",
      "double 9"), or an operation verb with a result ("I added them and got 11");
    * an equation: ``=`` (or "equals") with an expression or variable on the left ("x + 3 = 7",
      "9 × 2 = 18", "F = ma"); "answer = 18" is a bare guess, not an equation;
    * a division written with a slash and a result verb instead of ``=`` ("12/4 gives 3",
      "60/5 makes 12", "10/2 is 5", "I did 36/4 and got 9"); a bare fraction ("Is it 3/4?",
      "The answer is 3/4.") is a number, not a computation;
    * a variable assignment ("let x be the number of …", "let n = 5", "call it x");
    * a percentage or fraction of a quantity ("25% of 20", "30 percent of the price",
      "half of 40", "3/4 of 12").
Science (physics, chemistry) — the above, or
    * a causal explanation: a causal connective (because, since, so, therefore, due to, causes,
      leads to, results in, which means, that's why, …) joining two claims about the subject,
      e.g. "it sinks because it is denser than water";
    * a stated relation or formula: "the more …, the …", "… is proportional to …",
      "… depends on …", "… increases/decreases as/when/with …", "X = Y" formulas ("F = ma"),
      "X is Y divided by Z".
Never counted (when nothing above is present): a bare guess ("Is it 18?", "I think it's gravity",
"The answer is 11"), a restatement of givens ("each sandwich needs 2 loaves"), a request for the
answer or for help, and a feeling ("I'm confused", "I don't get it"); a causal clause whose cause is
only the student's own state ("I don't know because I'm confused") is a feeling, not an
explanation.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from edufair_metrics.errors import EduFairError
from edufair_metrics.records import DOMAINS

_SCIENCE = ("physics", "chemistry")

_NUM_WORDS = (
    "zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|"
    "sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred"
)
# A number: digits (with , . decimals), optional currency/percent/unit letters after a space are
# not part of it. A number word. An algebraic term: an optional coefficient and one letter that is
# not a word by itself ("a" and "i" are words).
_NUMBER = r"(?:[$€£]\s?)?\d+(?:[.,]\d+)*%?"
_NUMWORD = rf"(?:{_NUM_WORDS})(?:[\s-](?:{_NUM_WORDS}))?"
_TERM = r"(?:\d*(?![ai]\b)[a-z](?:\^\d+|²|³)?)"
_OPERAND = rf"(?:\(?(?:{_NUMBER}|{_TERM})\)?)"
# A numeric operand may carry a short unit ("10 m/s", "5 kg", "2 m/s²") as physics work does.
_UNIT = r"(?:\s?[a-zµΩ°]{1,3}(?:/[a-z]{1,3})?[²³]?(?![\w/]))"
_NUM_OPERAND = rf"(?:\(?{_NUMBER}\)?{_UNIT}?|\b{_NUMWORD}\b)"

# operand op operand, where at least one operand is numeric (so "a - b" prose and "x-axis" do not
# count), or both are algebraic terms joined by a symbol that only math uses (+ = * ^ ×).
_SYMBOL_OPS = r"[+\-−*×·÷/^]"
_EXPR_NUMERIC = re.compile(
    rf"(?<![\w.])(?:{_NUM_OPERAND}\s*{_SYMBOL_OPS}\s*{_OPERAND}|{_OPERAND}\s*{_SYMBOL_OPS}\s*{_NUM_OPERAND})(?![\w])"
    rf"|(?<![\w.]){_NUM_OPERAND}\s*x\s*{_NUM_OPERAND}(?![\w])",
    re.IGNORECASE,
)
_EXPR_ALGEBRA = re.compile(rf"(?<![\w.']){_TERM}\s*[+*×^]\s*{_TERM}(?![\w])", re.IGNORECASE)
_WORD_OPS = r"(?:plus|minus|times|multiplied\s+by|divided\s+by|over|take\s+away|less)"
_EXPR_WORDS = re.compile(rf"{_NUM_OPERAND}\s+{_WORD_OPS}\s+{_NUM_OPERAND}", re.IGNORECASE)
# An operation verb with its operands ("add 5 and 3", "multiplied 9 by 2", "subtract 4 from 9"), or
# a one-operand operation ("double 9", "square 4").
_VERB_TWO_OPERANDS = re.compile(
    rf"\b(?:add(?:ed|ing)?|multipl(?:y|ied|ying)|divid(?:e|ed|ing)|subtract(?:ed|ing)?|tak(?:e|ing)|took|sum(?:med)?)"
    rf"\s+(?:the\s+)?{_NUM_OPERAND}\s+(?:and|by|from|to|with|into|away\s+from|times)\s+(?:the\s+)?{_NUM_OPERAND}",
    re.IGNORECASE,
)
_VERB_ONE_OPERAND = re.compile(rf"\b(?:doubl(?:e|ed|ing)|halv(?:e|ed|ing)|tripl(?:e|ed|ing)|squar(?:e|ed|ing))\s+{_NUM_OPERAND}",
                               re.IGNORECASE)
_VERB_WITH_RESULT = re.compile(
    rf"\b(?:add(?:ed)?|multipl(?:y|ied)|divid(?:e|ed)|subtract(?:ed)?|doubl(?:e|ed)|halv(?:e|ed)|combin(?:e|ed))\b"
    rf"[^.?!]{{0,40}}?\b(?:got|get|gives?|gave|makes?|made|equals?|is|to\s+get)\s+{_NUM_OPERAND}",
    re.IGNORECASE,
)
# "=" (or "equals") with a number, a variable or a bracket on the left: "answer = 18" has a word
# there and is a bare guess, not an equation.
_EQUATION = re.compile(
    rf"(?<![\w.])(?:{_NUM_OPERAND}|{_TERM}|\))\s*(?:=|\bequals\b)\s*(?:-?\s*{_OPERAND}|\(|\b{_NUMWORD}\b)"
    rf"|\)\s*=",
    re.IGNORECASE,
)
_ASSIGNMENT = re.compile(
    r"\blet(?:'s)?\s+(?:say\s+)?(?:(?![ai]\b)[a-z]|the\s+\w+)\s+(?:be|=|equal|represent|stand\s+for|is)\b"
    r"|\bcall\s+(?:it|that|this|the\s+\w+)\s+(?![ai]\b)[a-z]\b"
    r"|\b(?![ai]\b)[a-z]\s+(?:is|be|stands\s+for|represents)\s+the\s+(?:number|amount|cost|price|total|length|width|"
    r"time|distance|speed|age|mass|value)\b"
    r"|\bif\s+(?![ai]\b)[a-z]\s+(?:is|=)\s+",
    re.IGNORECASE,
)
_QUANTITY = rf"(?:{_NUM_OPERAND}|(?:the|a|an|his|her|their|its|this|that|each|every|all)\s+\w+)"
_PART_OF = re.compile(
    rf"(?:\d+(?:\.\d+)?\s*(?:%|percent|per\s+cent)|\b\d+/\d+|\b(?:half|a\s+third|a\s+quarter|a\s+fifth|one\s+third|"
    rf"one\s+quarter|one\s+half|two\s+thirds|three\s+quarters|double|twice|triple))\s+of\s+{_QUANTITY}",
    re.IGNORECASE,
)
# A fraction literal ("3/4") is a number, not a division being carried out ("Is it 3/4?", also at
# the end of a sentence: "The answer is 3/4.").
_FRACTION_LITERAL = re.compile(r"(?<![\w./])\d+/\d+(?![\w/]|\.\d)")
# ... unless a result follows it through a verb instead of "=": "12/4 gives 3", "60/5 makes 12",
# "10/2 is 5", "100/20 which is 5 m/s", "I did 36/4 and got 9". The result is a number, or a
# number word that is not itself a fraction or a choice ("1/2 is one half", "3/4 is one option").
_RESULT_VERB = (
    r"(?:is|gives?|gave|makes?|made|equals?|comes\s+to|came\s+to|would\s+be|will\s+be|should\s+be|leaves|"
    r"yields|->|\u2192|(?:which|that)\s+(?:is|makes|gives)|that'?s|so\s+(?:it'?s|that'?s)|"
    r"and\s+(?:got|get|gets|that'?s|it'?s|that\s+makes))"
)
_DIVISION_WITH_RESULT = re.compile(
    rf"(?<![\w./])\d+(?:\.\d+)?/\d+(?:\.\d+)?(?![\w/])\s*,?\s*{_RESULT_VERB}\s+(?:(?:you|us|me|about|exactly|just)\s+)*"
    rf"(?:{_NUMBER}(?![\d/])|\b{_NUMWORD}\b(?!\s+(?:of|halves|half|thirds?|quarters?|fourths?|fifths?|ways?|answers?|"
    rf"options?|choices?|guess)\b))",
    re.IGNORECASE,
)
_MATH_PATTERNS = (_EXPR_NUMERIC, _EXPR_ALGEBRA, _EXPR_WORDS, _VERB_TWO_OPERANDS, _VERB_ONE_OPERAND, _VERB_WITH_RESULT, _EQUATION,
                  _ASSIGNMENT)

# ---- science ------------------------------------------------------------------------------------

_CAUSAL = re.compile(
    r"\b(?:because(?:\s+of)?|since|due\s+to|so\s+(?:that\s+)?(?=\w)|therefore|thus|hence|that'?s\s+why|that\s+is\s+why|"
    r"which\s+(?:means|makes|causes|is\s+why)|this\s+means|causes?|caused\s+by|leads?\s+to|results?\s+in|"
    r"makes?\s+(?:it|them|the)|as\s+a\s+result)\b",
    re.IGNORECASE,
)
_RELATION = re.compile(
    r"\bthe\s+(?:more|less|fewer|higher|lower|bigger|smaller|larger|greater|faster|slower|hotter|colder|heavier|lighter)\b"
    r".{1,60}?,?\s*the\s+(?:more|less|fewer|higher|lower|bigger|smaller|larger|greater|faster|slower|hotter|colder|heavier|lighter)\b"
    r"|\b(?:directly|inversely)?\s*proportional\s+to\b"
    r"|\bdepends?\s+on\b"
    r"|\b(?:increases?|decreases?|rises?|falls?|drops?|goes\s+(?:up|down)|gets?\s+(?:bigger|smaller|higher|lower|faster|slower))"
    r"\s+(?:as|when|if|with)\b"
    r"|\b\w+\s+(?:is|equals)\s+(?:the\s+)?\w+\s+(?:divided\s+by|times|multiplied\s+by|over|per|plus|minus)\s+(?:the\s+)?\w+"
    r"|\b(?![ai]\b)[a-z]{1,3}\s*=\s*(?![ai]\b)[a-z]{1,3}\b",
    re.IGNORECASE,
)
# A cause that is only the student's own state or a meta-statement: a feeling, not an explanation.
_FEELING = re.compile(
    r"^\W*(?:i\s*(?:'m|am)\s+(?:so\s+|really\s+|just\s+|kind\s+of\s+|still\s+)?(?:confused|lost|stuck|bad|not\s+good|not\s+sure|tired|bored|"
    r"dumb|stupid|terrible|unsure|scared|frustrated)|i\s+(?:do\s*n[o']?t|don't|didn't|never|can't|cannot|couldn't)\s+"
    r"(?:know|get|understand|remember|learn(?:ed)?|like|care|see)|i\s+(?:forgot|hate|give\s+up)|it'?s\s+(?:too\s+)?"
    r"(?:hard|confusing|difficult|boring)|this\s+is\s+(?:too\s+)?(?:hard|confusing|difficult|boring)|we\s+never|you\s+(?:said|told))",
    re.IGNORECASE,
)
# A causal connective needs a claim on its side too: not a question about the answer, a request or a feeling.
_REQUEST = re.compile(
    r"\b(?:just\s+)?(?:tell|give|show)\s+me\b|\bwhat\s+is\s+the\s+answer\b|\bcan\s+you\s+(?:just\s+)?(?:tell|give|help|explain)\b",
    re.IGNORECASE,
)


def _fold(text: str) -> str:
    # NFKC folds full-width digits; curly apostrophes -> straight ones for the patterns.
    return unicodedata.normalize("NFKC", text or "").replace("’", "'").replace("‘", "'")


def _math_attempt(text: str) -> bool:
    if _PART_OF.search(text) or _DIVISION_WITH_RESULT.search(text):
        return True
    plain = _FRACTION_LITERAL.sub("1", text)
    return any(pattern.search(plain) for pattern in _MATH_PATTERNS)


def _clauses(text: str) -> list[str]:
    return [c for c in re.split(r"(?<=[.!?;])\s+|\n+", text) if c.strip()]


def _causal_explanation(text: str) -> bool:
    for clause in _clauses(text):
        if _REQUEST.search(clause):
            continue
        for m in _CAUSAL.finditer(clause):
            before, after = clause[:m.start()], clause[m.end():]
            if len(re.findall(r"\w+", after)) < 2 or _FEELING.search(after) or _FEELING.search(before):
                continue
            # "so" / "since" need a claim before them too ("So is it gravity?" is a guess)
            if after.rstrip().endswith("?") and len(re.findall(r"\w+", before)) < 3:
                continue
            return True
    return False


# cached: a report asks about the same student turn for several views (scores, validity, next turn)
@functools.lru_cache(maxsize=1 << 16)
def attempts_reasoning(text: str, domain: str) -> bool:
    """True when ``text`` shows the speaker's own reasoning step (see the module docstring)."""
    if domain not in DOMAINS:
        raise EduFairError(f"unknown domain {domain!r}; expected one of {', '.join(DOMAINS)}")
    t = _fold(text)
    if not t.strip():
        return False
    if _math_attempt(t):
        return True
    if domain in _SCIENCE:
        return bool(_RELATION.search(t)) or _causal_explanation(t)
    return False


__all__ = ["attempts_reasoning"]
