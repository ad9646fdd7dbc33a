"""Paths the tests share: the checkout, the test fixtures, and the ``shared/`` material (paper text,
corpora) beside the checkout or in ``$EDUFAIR_SHARED_DIR``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parents[1]
REPO = TESTS_DIR.parent
FIXTURES = TESTS_DIR / "fixtures"
SHARED = Path(os.environ.get("EDUFAIR_SHARED_DIR", REPO.parent / "shared"))
PAPER_HTML = SHARED / "papers" / "edufair-bench-arxiv-html.txt"


def shared_file(*parts: str) -> Path:
    """A file under ``shared/``; skips the calling test when it is not there."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared material not found at {path} (set EDUFAIR_SHARED_DIR)")
    return path
