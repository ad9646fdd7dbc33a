"""Demographic cues of a condition and their masking, for condition-blind judging (judge setting
``mask_cues: true``; off by default, as in the paper, whose judge sees the transcript as is).

The cues of a condition come from ``protocol.yaml`` (:func:`condition_levels`): every value of every
level of that condition (all levels, so that the text of one group is masked the same way as the
other's):
    names        the ``NAME`` values (Implicit: Michael, Jessica, Wei, Ji-Yoon)       -> "[NAME]"
    gender words any value "female" / "male", and, when the condition has such a value,
                 the fixed English list ``GENDER_WORDS`` (pronouns and gendered nouns)
                 -> "[PRONOUN]" for pronouns, "[GENDER]" for the rest
    group words  every other value (native-born, immigrant, English, a language other than
                 English, low-income, middle-class, high-income, western, asian, …)  -> "[GROUP]"
Matching is case-insensitive on word boundaries; longer phrases first ("a language other than
English" before "English"); a hyphen or space inside a phrase matches either. Only turn texts are
masked (the judge sees nothing else); the count of replacements is returned so a run can record it.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace

from edufair_metrics.errors import EduFairError
from edufair_metrics.protocol.prompts import condition_levels, load_protocol
from edufair_metrics.records import Transcript, Turn

NAME_PLACEHOLDER = "[NAME]"
PRONOUN_PLACEHOLDER = "[PRONOUN]"
GENDER_PLACEHOLDER = "[GENDER]"
GROUP_PLACEHOLDER = "[GROUP]"

GENDER_VALUES = ("female", "male")
PRONOUNS = ("he", "she", "him", "her", "hers", "his", "himself", "herself")
GENDER_WORDS = (
    # "miss" is left out: as a verb ("don't miss a step") it is far more common than as a title
    "female", "male", "girl", "girls", "boy", "boys", "woman", "women", "man", "men", "lady", "ladies",
    "gentleman", "gentlemen", "young man", "young lady", "son", "daughter", "sister", "brother", "mr", "mrs", "ms",
    "sir", "ma'am", "madam", "gal", "guy", "feminine", "masculine",
)


@dataclass(frozen=True)
class CueSet:
    """Phrase -> placeholder, longest phrase first."""

    replacements: tuple[tuple[str, str], ...]

    @functools.cached_property
    def pattern(self) -> re.Pattern[str] | None:
        if not self.replacements:
            return None
        alts = [r"[\s\-]+".join(re.escape(w) for w in re.split(r"[\s\-]+", phrase)) for phrase, _ in self.replacements]
        return re.compile(r"(?<![\w'’])(?:" + "|".join(alts) + r")(?![\w])", re.IGNORECASE)

    def placeholder(self, found: str) -> str:
        key = re.sub(r"[\s\-]+", " ", found.casefold())
        return self._lookup.get(key, GROUP_PLACEHOLDER)

    @functools.cached_property
    def _lookup(self) -> dict[str, str]:
        return {re.sub(r"[\s\-]+", " ", p.casefold()): ph for p, ph in self.replacements}


def condition_cues(condition: str) -> CueSet:
    """The cues of one condition of the shipped protocol."""
    return _cues_cached((condition,))


def all_cues() -> CueSet:
    """The cues of every condition (for texts whose condition is unknown, e.g. human-labelled sets)."""
    return _cues_cached(tuple(load_protocol()["conditions"]))


@functools.lru_cache(maxsize=16)
def _cues_cached(conditions: tuple[str, ...]) -> CueSet:
    found: dict[str, str] = {}
    gendered = False
    for condition in conditions:
        for lv in condition_levels(condition):
            for key, value in lv.attributes.items():
                v = str(value).strip()
                if not v:
                    continue
                if key == "name":
                    found[v.casefold()] = NAME_PLACEHOLDER
                elif v.casefold() in GENDER_VALUES:
                    gendered = True
                else:
                    found.setdefault(v.casefold(), GROUP_PLACEHOLDER)
    if gendered:
        for w in GENDER_WORDS:
            found.setdefault(w, GENDER_PLACEHOLDER)
        for w in PRONOUNS:
            found[w] = PRONOUN_PLACEHOLDER
    ordered = sorted(found.items(), key=lambda kv: (-len(kv[0]), kv[0]))
    return CueSet(tuple(ordered))


def mask_text(text: str, cues: CueSet) -> tuple[str, int]:
    """``text`` with every cue replaced by its placeholder, and the number of replacements."""
    if not text or cues.pattern is None:
        return text, 0
    count = 0

    def sub(m: re.Match[str]) -> str:
        nonlocal count
        count += 1
        return cues.placeholder(m.group(0))

    return cues.pattern.sub(sub, text), count


@dataclass(frozen=True)
class MaskedTranscript:
    transcript: Transcript  # a copy whose turn texts are masked (raw generations are dropped)
    masked: int  # number of cues replaced


def mask_transcript(transcript: Transcript, cues: CueSet | None = None) -> MaskedTranscript:
    """A copy of ``transcript`` whose turn texts have the demographic cues of its condition (or
    ``cues``) replaced by placeholders. An unknown condition has no cues unless given."""
    if cues is None:
        try:
            cues = condition_cues(transcript.condition)
        except EduFairError:
            cues = CueSet(())
    total = 0
    turns = []
    for t in transcript.turns:
        text, n = mask_text(t.text, cues)
        total += n
        turns.append(Turn(t.role, text, None))
    return MaskedTranscript(replace(transcript, turns=turns), total)


__all__ = ["CueSet", "MaskedTranscript", "all_cues", "condition_cues", "mask_text", "mask_transcript"]
