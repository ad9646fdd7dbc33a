"""The one sentence and clause splitter of the stop decision: the matcher (:mod:`.stated`) and the
stop rule's affirmation finder (``dialogue/stop.py``) both read a turn through it, so that what
one calls a sentence is what the other calls a sentence.

* A sentence ends at ``.`` ``!`` ``?`` (with any closing quotes or brackets) followed by
  whitespace or the end of the text, or at a newline. A decimal point ("1.5", "$7.50") or a dot
  inside a token ("e.g") never ends a sentence.
* Clauses: a sentence is cut at ", " ; ": " dashes and before contrastive conjunctions (but,
  whereas, though, although, however).
* In a question (a sentence ending with "?"), the interrogative part runs from the first clause
  that opens with a question word or an inverted auxiliary, or is the last clause when that one
  is a tag ("..., right?"), or is the whole sentence when neither exists ("You think it's 42?").
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

__all__ = ["Clause", "Sentence", "locate", "split_sentences"]

# A sentence ends at . ! ? (not a decimal point: whitespace or the end must follow) or a newline.
_SENTENCE_END = re.compile(r"[.!?]+[\"')\]]*(?=\s|$)|\n")
# Clause boundaries inside a sentence: ", " ; ": " dashes, and contrastive conjunctions.
_CLAUSE_SEP = re.compile(
    r",(?=\s|$)|;|:(?=\s|$)|\s[\u2014\u2013-]{1,2}\s|[\u2014\u2013]|\s(?=(?:but|whereas|though|although|however)\b)",
    re.IGNORECASE,
)
OPENER = re.compile(
    r"^\W*(?:(?:and|so|then|but|or|now|okay|ok|well|hmm|um|also)\s+)*"
    r"(?:what|which|who|whom|whose|why|how|where|when|is|are|was|were|am|do|does|did|can|could|would|"
    r"will|should|shall|may|might|have|has|had|isn't|aren't|wasn't|weren't|don't|doesn't|didn't|can't|"
    r"couldn't|wouldn't|won't|shouldn't|hasn't|haven't|or)\b",
    re.IGNORECASE,
)
TAG = re.compile(
    r"^\W*(?:right|correct|ok|okay|yes|yeah|agreed|true|no|see|you see|got it|make sense|fair|"
    r"isn't it|aren't they|don't you think|wouldn't you say|does that make sense|"
    r"is that right|is that correct|am i right)\W*$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Clause:
    start: int
    end: int
    interrogative: bool


@dataclass(frozen=True)
class Sentence:
    """A sentence as character offsets into the text (leading whitespace excluded)."""

    start: int
    end: int
    clauses: tuple[Clause, ...]


def split_sentences(text: str) -> list[Sentence]:
    """The sentences of ``text`` (blank ones dropped), each with its clauses."""
    return list(_split_sentences(text))


@functools.lru_cache(maxsize=1 << 14)  # every decider reads the same turn again
def _split_sentences(text: str) -> tuple[Sentence, ...]:
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
    return tuple(sentences)


def _sentence(text: str, start: int, end: int) -> Sentence:
    body = text[start:end]
    cuts = [0] + [m.end() for m in _CLAUSE_SEP.finditer(body)] + [len(body)]
    spans = [(start + a, start + b) for a, b in zip(cuts, cuts[1:]) if b > a]
    is_question = body.rstrip(" \"')]*").endswith("?")
    q_from = len(spans)
    if is_question:
        openers = [i for i, (a, b) in enumerate(spans) if OPENER.match(text[a:b])]
        if openers:
            q_from = openers[0]
        elif len(spans) > 1 and TAG.match(text[spans[-1][0]:spans[-1][1]]):
            q_from = len(spans) - 1
        else:
            q_from = 0  # a declarative-form question: "You think it's 42?"
    clauses = tuple(Clause(a, b, i >= q_from) for i, (a, b) in enumerate(spans))
    return Sentence(start, end, clauses)


def locate(sentences: list[Sentence], pos: int) -> tuple[Sentence, Clause] | None:
    """The sentence and clause that contain position ``pos`` (None between sentences)."""
    for s in sentences:
        if s.start <= pos < s.end:
            for c in s.clauses:
                if c.start <= pos < c.end:
                    return s, c
            return s, s.clauses[-1]
    return None
