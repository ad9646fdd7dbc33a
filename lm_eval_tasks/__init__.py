"""EduFair's face to lm-evaluation-harness: the task YAMLs under ``edufair/`` and the thin module
``task`` they name. Everything else lives in ``edufair_metrics``; this package imports it, never the
reverse."""

from __future__ import annotations

from pathlib import Path

from edufair_metrics.bank import DATA_DIR  # the shipped question bank
from edufair_metrics.protocol import DATA_DIR as PROMPTS_DIR  # protocol and judge prompt texts

TASKS_DIR = Path(__file__).resolve().parent / "edufair"

__all__ = ["TASKS_DIR", "DATA_DIR", "PROMPTS_DIR", "tasks_path"]


def tasks_path() -> Path:
    """Directory to pass as ``lm_eval --include_path``."""
    return TASKS_DIR
