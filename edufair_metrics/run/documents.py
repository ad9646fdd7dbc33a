"""The documents of one task: the bank of its domain, the paper's fixed question sample when set,
one document per (question, condition level) (k of them with ``edufair.replicates``), and the placebo replicates when set. lm-eval's task
loads these as its dataset; :func:`edufair_metrics.run.run_task` runs them without lm-eval."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from edufair_metrics.bank import bank_path, load_bank
from edufair_metrics.errors import EduFairError
from edufair_metrics.protocol import drawn_levels, expand_documents, extension_provenance, protocol_for
from edufair_metrics.protocol.names import NAMES_CONDITION
from edufair_metrics.protocol.replicates import expand_replicates


@dataclass(frozen=True)
class TaskDocuments:
    documents: list[dict[str, Any]]
    sample: dict[str, Any] | None  # the question sample's provenance (None: the whole bank)
    bank_file: Any  # the bank file read (its hash goes into provenance)
    # an extension condition's protocol provenance (its version and file hash; protocol.extension_provenance),
    # None for the paper's conditions
    protocol: dict[str, Any] | None = None


def task_documents(task: str, condition: str, domain: str, settings) -> TaskDocuments:
    """One document per (question, level), question-major, for the task ``task`` of ``condition``
    in ``domain`` under the runner ``settings`` (levels, bank_dir, sample, placebo; for the names
    condition the names drawn, ``edufair.names``, recorded in ``protocol``)."""
    items = load_bank(domain, settings.bank_dir)
    sample = None
    if settings.sample is not None:
        # the paper's fixed stratified subsample: the same questions for every tutor and condition
        selected = settings.sample.select(items)
        sample = settings.sample.provenance(items, selected)
        items = selected
    levels = list(settings.levels) if settings.levels is not None else None
    protocol = extension_provenance(condition)
    names = getattr(settings, "names", None)
    if condition == NAMES_CONDITION:
        # k names per gender x ethnicity cell, drawn once (the same for every tutor and machine)
        draw, order = drawn_levels(names)
        if levels is not None:
            outside = [lv for lv in levels if lv not in order]
            if outside:
                raise EduFairError(f"{task}: edufair.levels {', '.join(outside)} are not among the names drawn "
                                   f"(edufair.names k={draw.k}, seed={draw.seed}: {', '.join(order)})")
        levels = levels if levels is not None else order
        protocol = {**(protocol or {}), "names_draw": draw.provenance(protocol_for(condition)["conditions"][condition]["levels"])}
    elif names is not None:
        raise EduFairError(f"{task}: edufair.names (k names per cell) applies only to the edufair_implicit_names "
                           "tasks; remove it from this task's settings")
    docs = expand_documents(items, condition, levels)
    replicates = getattr(settings, "replicates", 1)
    if replicates != 1:  # k dialogues per question and level, each with its own tutor sampling seed
        docs = expand_replicates(docs, replicates, task)
    if settings.placebo is not None:  # one level again, independent tutor sampling
        docs = settings.placebo.expand(docs, task)
    if not docs:
        raise EduFairError(f"{task}: the bank for {domain} is empty")
    return TaskDocuments(docs, sample, bank_path(domain, settings.bank_dir), protocol)


def question_blocks(pairs: Sequence[tuple[int, dict[str, Any]]]) -> list[list[tuple[int, dict[str, Any]]]]:
    """``(doc_id, document)`` pairs grouped by question, in order of each question's first
    document: all levels (and placebo replicates) of a question form one block."""
    blocks: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for doc_id, doc in pairs:
        blocks.setdefault(str(doc.get("question_id")), []).append((doc_id, doc))
    return list(blocks.values())


def process_part(blocks: Sequence[list[tuple[int, dict[str, Any]]]], rank: int, world_size: int) -> list[tuple[int, dict[str, Any]]]:
    """The documents of process ``rank`` of ``world_size``: a contiguous run of whole questions
    (``question_blocks``), the questions split as evenly as they go. Every level of a question is
    on one process, so its demographic pairs and identical requests (coalescing) stay there."""
    n = len(blocks)
    start, stop = rank * n // world_size, (rank + 1) * n // world_size
    return [pair for block in blocks[start:stop] for pair in block]
