import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("EDUFAIR_SHARED_DIR", REPO.parent / "shared"))


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    # Tests never touch the user's cache; each test gets its own.
    monkeypatch.setenv("EDUFAIR_CACHE_DIR", str(tmp_path / "cache"))
    # Keep lm-eval / HF offline in tests.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")


def shared_file(*parts: str) -> Path:
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared material not found at {path} (set EDUFAIR_SHARED_DIR)")
    return path


# A two-question physics bank for runner tests (the shipped bank is tested on its own).
QUESTIONS = [
    {"id": "phys-q1", "question": "What force pulls objects toward Earth?", "answer": "gravity", "answer_forms": ["gravity"]},
    {"id": "phys-q2", "question": "What is the unit of force?", "answer": "newton", "answer_forms": ["newton"]},
]


def write_bank(d: Path, n: int = len(QUESTIONS)) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    with open(d / "physics.jsonl", "w") as fh:
        for q in QUESTIONS[:n]:
            fh.write(json.dumps({**q, "domain": "physics", "grade": 8, "source": "sciq"}) + "\n")
    return d


@pytest.fixture
def bank_dir(tmp_path):
    return write_bank(tmp_path / "bank")
