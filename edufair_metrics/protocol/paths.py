"""Where the protocol's normative texts live: prompts (App. C), judge prompt (App. F), name list."""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data"
