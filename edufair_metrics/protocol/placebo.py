"""The placebo replicate (the re-prompt baseline M′ of the counterfactual essay-feedback audit): one chosen
condition level run ``replicates`` times on the same questions with independent tutor sampling.
Two runs of the SAME condition differ only by tutor sampling and judge noise, so the paired |r|
between them is the empirical noise floor a real contrast must clear.

Setting (``--metadata '{"edufair": {"placebo": {"level": "female", "replicates": 2}}}'``): every
question gets, besides its normal document of ``level`` (replicate 1), documents for replicates
2..R with the same prompts, level ``<level>~replicate<r>`` (so that no demographic contrast reads
them) and a per-dialogue tutor sampling seed ``seed`` = PLACEBO_SEED_BASE + r: the request field
``seed`` on API and vLLM tutors (per-request ``SamplingParams(seed=…)``), ``torch.manual_seed`` before
the replicate's batch on hf. The seed is part of the call-cache key, so a replicate is never served
another replicate's turns. Cost: (R − 1) × questions more dialogues per task (R = 2: +1/9 in
Explicit, +1/4 in Implicit and Opposite).
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar

from pydantic import Field, field_validator

from edufair_metrics.errors import EduFairError
from edufair_metrics.schema import SettingsModel

REPLICATE_SEP = "~replicate"
# Per-request seeds of replicates 2..R; replicate 1 keeps the tutor's own sampling (its engine
# seed), so replicate documents never share a seed with it.
PLACEBO_SEED_BASE = 9_000_000


def replicate_level(level: str, replicate: int) -> str:
    return level if replicate == 1 else f"{level}{REPLICATE_SEP}{replicate}"


def split_replicate_level(level: str) -> tuple[str, int]:
    """``("female", 2)`` for ``female~replicate2``; ``(level, 1)`` for a plain level."""
    base, sep, r = str(level).partition(REPLICATE_SEP)
    if not sep:
        return base, 1
    try:
        return base, int(r)
    except ValueError:
        return str(level), 1


class PlaceboReplicate(SettingsModel):
    """``placebo: {level: female, replicates: 2}`` in the ``edufair`` settings."""

    PATH: ClassVar[str] = "edufair.placebo"
    EXPECTED: ClassVar[str] = "a mapping like {level: female, replicates: 2}"

    level: str = Field(min_length=1, description="one level of the task's condition",
                       json_schema_extra={"expected": "the name of one level of the task's condition"})
    replicates: int = Field(2, ge=2)

    @field_validator("level")
    @classmethod
    def _plain_level(cls, level: str) -> str:
        if REPLICATE_SEP in level:
            raise ValueError(f"must be a plain level name, got {level!r}")
        return level

    def expand(self, docs: list[dict[str, Any]], task: str = "") -> list[dict[str, Any]]:
        """``docs`` plus replicates 2..R of ``level``, each right after its question's last document
        (question-major order, so ``--limit`` keeps whole questions)."""
        if not any(d["level"] == self.level for d in docs):
            known = sorted({d["level"] for d in docs})
            raise EduFairError(f"{task or 'edufair'}: placebo level '{self.level}' is not a level of this task "
                               f"(known: {', '.join(known)})")
        out: list[dict[str, Any]] = []
        for i, doc in enumerate(docs):
            # every document carries the keys: a datasets.Dataset takes its columns from the first
            doc = {**doc, "replicate": 1, "tutor_gen_kwargs": None}
            out.append(doc)
            last_of_question = i + 1 == len(docs) or docs[i + 1]["question_id"] != doc["question_id"]
            if last_of_question:
                base = next((d for d in docs if d["question_id"] == doc["question_id"] and d["level"] == self.level), None)
                if base is None:
                    continue
                for r in range(2, self.replicates + 1):
                    rep = copy.deepcopy(base)
                    rep["level"] = replicate_level(self.level, r)
                    rep["replicate"] = r
                    rep["tutor_gen_kwargs"] = {"seed": PLACEBO_SEED_BASE + r}
                    out.append(rep)
        return out
