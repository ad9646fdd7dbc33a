"""Phrase scanners of the stop rule's matcher (:mod:`.stated`): where a text mentions a science
phrase gold, and the simple plural/singular variants of a word.

The normalised answer phrase (:func:`~.mention.normalize_answer`) must occur with word
boundaries, case-insensitively; words may be separated by spaces or hyphens, the last word may
carry a simple plural/singular variant (s, es, y/ies), and a digit 0..10 in the phrase may also be
written as a word ("group 1" / "group one").

(:mod:`.mention`, the frozen bank-selection matcher, keeps its own copies of these scanners.)
"""

from __future__ import annotations

import functools
import re
from typing import Iterable

from edufair_metrics.protocol.matching.mention import normalize_answer
from edufair_metrics.protocol.matching.numbers import small_number_word

__all__ = ["phrase_pattern", "phrase_spans", "word_variants"]


def word_variants(word: str) -> list[str]:
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
def phrase_pattern(phrase: str) -> re.Pattern[str] | None:
    """A normalised phrase as a case-insensitive pattern (None for an empty phrase)."""
    words = phrase.split()
    if not words:
        return None
    head = [re.escape(w) for w in words[:-1]]
    last = "(?:" + "|".join(re.escape(v) for v in word_variants(words[-1])) + ")"
    body = r"[\s\-]+".join(head + [last])
    return re.compile(rf"(?<![\w])(?<!\d\.){body}(?![\w])(?!\.\d)", re.IGNORECASE)


def phrase_spans(text: str, forms: Iterable[str]) -> list[tuple[int, int]]:
    """(start, end) of every mention of one of the phrase ``forms`` in ``text``."""
    variants = []
    for form in forms:
        phrase = normalize_answer(form)
        variants.append(phrase)
        worded = re.sub(r"\b(10|[0-9])\b", lambda d: small_number_word(int(d.group())), phrase)
        if worded != phrase:
            variants.append(worded)  # "group 1" is also said "group one"
    out = []
    for phrase in variants:
        pattern = phrase_pattern(phrase)
        if pattern is not None:
            out.extend((m.start(), m.end()) for m in pattern.finditer(text))
    return out
