"""Shards that merge: one task's questions split over k independent runs (k hosts of a SLURM array,
k machines against one ``vllm serve`` fleet), each running every level of its questions, and
``edufair report`` pooling the k results as one run.

Question ``q`` belongs to shard ``int(sha256("edufair-shard:" + q.id)) mod count``: a question's
shard depends only on its id and the count, never on the bank's order, the other questions, the
question sample, ``--limit`` or the machine, and all levels (and placebo replicates) of a question
go to one shard, so every demographic pair is formed inside a shard. The split applies after
lm-eval's ``--limit`` / ``--samples`` (k shards of a run hold exactly that run's documents) and
before the split over processes (``accelerate launch``). Shard sizes follow the hash: about
n / count each, not exactly.

Setting: ``--metadata '{"edufair": {"shard": {"index": 0, "count": 3}}}'`` (index 0 … count − 1),
recorded in every record's provenance (``execution.shard``) with the shards of that count that hold
none of the run's questions (``empty``, from the whole question set, which every shard's run
knows). Completeness is checked against the question set: pooling needs every shard that holds a
question, and an empty shard (more shards than the hash gives questions) is neither run nor needed.
"""

from __future__ import annotations

import hashlib
from typing import Any, ClassVar, Iterable

from pydantic import Field, model_validator

from edufair_metrics.schema import SettingsModel


def shard_of(question_id: str, count: int) -> int:
    """The shard (0 … count − 1) that question ``question_id`` belongs to."""
    digest = hashlib.sha256(f"edufair-shard:{question_id}".encode("utf-8")).hexdigest()
    return int(digest, 16) % count


class Shard(SettingsModel):
    """``shard: {index: 0, count: 3}`` in the ``edufair`` settings."""

    PATH: ClassVar[str] = "edufair.shard"
    EXPECTED: ClassVar[str] = "a mapping like {index: 0, count: 3}"

    index: int = Field(ge=0, description="this run's shard, 0 … count − 1")
    count: int = Field(ge=1, description="how many shards the task's questions are split into")

    @model_validator(mode="after")
    def _index_below_count(self) -> "Shard":
        if self.index >= self.count:
            raise ValueError(f"index must be below count (0 … {self.count - 1}), got index {self.index}")
        return self

    def holds(self, question_id: Any) -> bool:
        return shard_of(str(question_id), self.count) == self.index

    def select(self, docs: list[tuple[int, dict[str, Any]]]) -> list[tuple[int, dict[str, Any]]]:
        """The ``(doc_id, document)`` pairs of this shard's questions, in order."""
        return [(i, d) for i, d in docs if self.holds(d["question_id"])]

    def empty_shards(self, question_ids: Iterable[Any]) -> list[int]:
        """The shards of this count that hold none of ``question_ids`` (the whole run's questions)."""
        held = {shard_of(str(q), self.count) for q in question_ids}
        return [i for i in range(self.count) if i not in held]

    def provenance(self, question_ids: Iterable[Any] | None = None) -> dict[str, Any]:
        """``{index, count}``, and with the run's questions the shards that hold none (``empty``)."""
        out: dict[str, Any] = {"index": self.index, "count": self.count}
        if question_ids is not None:
            out["empty"] = self.empty_shards(question_ids)
        return out

    def __str__(self) -> str:
        return f"shard {self.index} of {self.count}"
