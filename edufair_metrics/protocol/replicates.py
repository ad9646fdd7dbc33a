"""Replicate dialogues (``edufair.replicates: k``): each (question, level) document run k times with
independent tutor sampling, so that a question's per-level score is the mean of k dialogues and the
within-question (dialogue) noise is measured, not only suffered.

Replicate 1 is today's document, untouched (the tutor's own sampling, no per-request seed): a run
with k = 1 has exactly today's documents, and a k = 1 pilot's dialogues are replicate 1 of a larger
k from the call cache. Replicates r = 2..k carry ``dialogue_replicate: r`` and a per-dialogue tutor
sampling seed ``REPLICATE_SEED_BASE + r`` in ``tutor_gen_kwargs`` (the request field ``seed`` on
API and vLLM tutors, ``torch.manual_seed`` on hf, as the placebo replicate does); the seed is part
of every call-cache key (``dialogue.loop`` merges it into the decoding settings), so a replicate is
never served another replicate's answers. The level stays the plain level: every contrast reads
every replicate, and the pairing averages a question's replicates within each level first
(``analysis.replicates.average_replicates``), so the question stays the unit of inference.
"""

from __future__ import annotations

import copy
from typing import Any

from edufair_metrics.errors import EduFairError

# the document and record field of a replicate's index (1..k); absent on k = 1 documents
REPLICATE_FIELD = "dialogue_replicate"
# per-request seeds of replicates 2..k: far from the placebo replicate's (protocol.placebo, 9_000_000 + r)
REPLICATE_SEED_BASE = 7_000_000


def replicate_seed(replicate: int) -> int | None:
    """The tutor sampling seed of replicate ``replicate`` (None for replicate 1: the tutor's own)."""
    return None if int(replicate) == 1 else REPLICATE_SEED_BASE + int(replicate)


def check_replicates(k: Any, where: str = "edufair.replicates") -> int:
    """``k`` as a positive integer, or a one-line error (bools, floats and strings are refused)."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise EduFairError(f"{where} must be a whole number >= 1 (dialogues per question and level), got {k!r}")
    return k


def expand_replicates(docs: list[dict[str, Any]], k: int, task: str = "") -> list[dict[str, Any]]:
    """``docs`` (question-major) with replicates 2..``k`` of every document, each question's
    replicates right after its own documents (so ``--limit`` and shards keep whole questions).
    ``k`` = 1 returns ``docs`` unchanged (the same objects: byte-identical documents)."""
    k = check_replicates(k, f"{task + ': ' if task else ''}edufair.replicates")
    if k == 1:
        return docs
    out: list[dict[str, Any]] = []
    block: list[dict[str, Any]] = []

    def flush() -> None:
        for r in range(1, k + 1):
            for doc in block:
                rep = copy.deepcopy(doc) if r > 1 else dict(doc)
                rep[REPLICATE_FIELD] = r
                seed = replicate_seed(r)
                # every document carries the keys: a datasets.Dataset takes its columns from the first
                rep["tutor_gen_kwargs"] = None if seed is None else {"seed": seed}
                out.append(rep)
        block.clear()

    for i, doc in enumerate(docs):
        if doc.get("tutor_gen_kwargs"):
            raise EduFairError(f"{task or 'edufair'}: edufair.replicates cannot be combined with documents that already "
                               "set their own tutor sampling (the placebo replicate): replicates measure the "
                               "within-question noise themselves; drop edufair.placebo")
        block.append(doc)
        if i + 1 == len(docs) or docs[i + 1]["question_id"] != doc["question_id"]:
            flush()
    return out


def doc_replicate(doc: dict[str, Any] | None) -> tuple[int, int | None]:
    """(replicate index, tutor seed) of a document: (1, None) for a document of a k = 1 run."""
    if not isinstance(doc, dict) or doc.get(REPLICATE_FIELD) is None:
        return 1, None
    gk = doc.get("tutor_gen_kwargs") if isinstance(doc.get("tutor_gen_kwargs"), dict) else {}
    seed = gk.get("seed")
    return int(doc[REPLICATE_FIELD]), None if seed is None else int(seed)
