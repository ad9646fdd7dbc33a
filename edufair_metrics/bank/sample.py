"""The paper's fixed stratified subsample for API tutors (§4: 30% per domain, 272 / 150 / 150):
the same questions for every tutor and every condition, on every machine.

Selection is by a keyed hash, not by a random generator: question ``q`` is ranked by
``sha256(f"{seed}:{q.id}")`` and the first ``round(fraction × n)`` of a domain's ``n`` questions are
kept, in bank order. It depends only on the seed and the question ids, so it is stable across runs,
machines, library versions and ``--limit``/sharding (which apply afterwards), and each domain's
task samples its own domain (stratified by construction).
"""

from __future__ import annotations

import hashlib
import math
from typing import Any, ClassVar, Sequence

from pydantic import Field

from edufair_metrics.records import BankItem
from edufair_metrics.schema import SettingsModel


class QuestionSample(SettingsModel):
    """``sample: {fraction: 0.3, seed: 0}`` in the ``edufair`` settings."""

    PATH: ClassVar[str] = "edufair.sample"
    EXPECTED: ClassVar[str] = "a mapping like {fraction: 0.3, seed: 0}"

    fraction: float = Field(gt=0, le=1, description="the share of each domain's questions, e.g. 0.3")
    seed: int = 0

    def size(self, n: int) -> int:
        """round(fraction × n), halves up (907 × 0.3 = 272.1 → 272; 500 × 0.3 → 150), at least 1."""
        return max(1, min(n, math.floor(self.fraction * n + 0.5))) if n else 0

    def select(self, items: Sequence[BankItem]) -> list[BankItem]:
        """The sampled questions, in bank order."""
        k = self.size(len(items))
        ranked = sorted(items, key=lambda it: hashlib.sha256(f"{self.seed}:{it.id}".encode("utf-8")).hexdigest())
        keep = {it.id for it in ranked[:k]}
        return [it for it in items if it.id in keep]

    def provenance(self, items: Sequence[BankItem], selected: Sequence[BankItem]) -> dict[str, Any]:
        ids = "\n".join(it.id for it in selected)
        return {"fraction": self.fraction, "seed": self.seed, "questions": len(selected), "of": len(items),
                "ids_sha256": hashlib.sha256(ids.encode("utf-8")).hexdigest()}
