"""A two-question physics bank for runner and CLI tests (the shipped bank is tested on its own)."""

from __future__ import annotations

import json
from pathlib import Path

QUESTIONS = [
    {"id": "phys-q1", "question": "What force pulls objects toward Earth?", "answer": "gravity", "answer_forms": ["gravity"]},
    {"id": "phys-q2", "question": "What is the unit of force?", "answer": "newton", "answer_forms": ["newton"]},
]


def write_bank(d: Path, n: int = len(QUESTIONS)) -> Path:
    """``d/physics.jsonl`` with the first ``n`` questions; returns ``d`` (a ``bank_dir``)."""
    d.mkdir(parents=True, exist_ok=True)
    with open(d / "physics.jsonl", "w") as fh:
        for q in QUESTIONS[:n]:
            fh.write(json.dumps({**q, "domain": "physics", "grade": 8, "source": "sciq"}) + "\n")
    return d
