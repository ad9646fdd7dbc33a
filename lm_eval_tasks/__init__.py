"""EduFair task definitions for lm-evaluation-harness (YAMLs under ``edufair/``) and the
multi-turn dialogue runner they use."""

from __future__ import annotations

from pathlib import Path

TASKS_DIR = Path(__file__).resolve().parent / "edufair"
DATA_DIR = TASKS_DIR / "data"
PROMPTS_DIR = TASKS_DIR / "prompts"


def tasks_path() -> Path:
    """Directory to pass as ``lm_eval --include_path``."""
    return TASKS_DIR
