"""Stored record dicts (schema v3: each run header once per file and process, a record keeps only its
provenance delta) as a test reads them: each dict with ``provenance`` the record's full provenance, as
``DialogueRecord.from_dict`` resolves it (headers of earlier dicts of the same file)."""

from __future__ import annotations

from typing import Any, Iterable

from edufair_metrics.records import DialogueRecord, RunHeader


def with_provenance(dicts: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """``dicts`` (one file's or one task's records, in order), each with its full provenance."""
    headers: dict[str, RunHeader] = {}
    out = []
    for d in dicts:
        rec = DialogueRecord.from_dict(d, headers=headers)
        if rec.run is not None:
            headers.setdefault(rec.run.digest, rec.run)
        out.append({**d, "provenance": rec.provenance})
    return out
