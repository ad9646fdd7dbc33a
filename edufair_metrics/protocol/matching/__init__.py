"""Deterministic gold-answer matching, one module per concept:

* :mod:`.mention` — FROZEN: :func:`mentions_answer` (does the gold occur in a text at all; the bank
  builders drop items whose question contains it) and :func:`normalize_answer`. The shipped bank's
  selection, and so its sha256 in provenance, depends on them.
* :mod:`.stated` — :func:`find_stated_answer` (does a text *state* the gold as an answer: the stop
  rule of paper §3.2 and the leakage detector) and the span helpers of the stop rule;
  :func:`find_offered_answer` (the gold offered in a leading question or for checking: the
  partial-reveal detector's, never the stop rule's).
* :mod:`.answer` — :func:`find_given_answer` (which value a student turn gives *as its answer*,
  not as a step: the stop rule's confirmation and the leak detector's history).
* :mod:`.numbers` — number parsing, number tokens and number words (the shared scanners).
* :mod:`.phrases` — science phrase scanners (plural/singular variants).
* :mod:`.sentences` — the one sentence and clause splitter of the stop decision.

Both matchers are deliberately simple and documented, so that their behaviour is predictable.
"""

from edufair_metrics.protocol.matching.answer import GivenAnswer, find_given_answer
from edufair_metrics.protocol.matching.mention import NUMERIC_DOMAINS, mentions_answer, normalize_answer
from edufair_metrics.protocol.matching.numbers import numbers_in_text, parse_number
from edufair_metrics.protocol.matching.sentences import Clause, Sentence, locate, split_sentences
from edufair_metrics.protocol.matching.stated import (
    AnswerMatch,
    asked_at,
    find_offered_answer,
    find_stated_answer,
    gold_mentioned,
    is_numeric_gold,
    negates_answer,
    offered_for_checking,
    prepare_text,
)

__all__ = [
    "AnswerMatch",
    "Clause",
    "GivenAnswer",
    "NUMERIC_DOMAINS",
    "Sentence",
    "asked_at",
    "find_given_answer",
    "find_offered_answer",
    "find_stated_answer",
    "gold_mentioned",
    "is_numeric_gold",
    "locate",
    "mentions_answer",
    "negates_answer",
    "normalize_answer",
    "offered_for_checking",
    "numbers_in_text",
    "parse_number",
    "prepare_text",
    "split_sentences",
]
