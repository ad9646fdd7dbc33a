"""Helpers shared by the bank loaders: stable ids, answer forms, seeded sampling, paths."""

from __future__ import annotations

import hashlib
import os
import random
import re
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Sequence, TypeVar

from edufair_metrics.protocol.matching import normalize_answer
from edufair_metrics.errors import EduFairError

BANK_VERSION = "1.0"
DEFAULT_SEED = 0
# Default cap (most questions kept per domain; None = all that qualify) by the source that fills
# the domain: SciQ "up to 500 questions are sampled per domain" (§3.1.2); SocraTeach is not capped
# (the paper keeps all 907 qualifying questions); the GSM8K proxy, whose pool is ~2,500, is cut to
# the paper's SocraTeach size so that the proxy bank (and its 30% API subsample, 272) has the
# paper's shape.
DEFAULT_CAPS: dict[str, int | None] = {"sciq": 500, "socrateach": None, "gsm8k-proxy": 907}

T = TypeVar("T")


def repo_root() -> Path:
    """The checkout root (parent of the ``edufair_metrics`` package)."""
    return Path(__file__).resolve().parents[2]


def shared_data_dir() -> Path:
    """``<repo>/../shared/data`` (or ``$EDUFAIR_SHARED_DIR/data``): where CI and developers keep
    the read-only corpora."""
    root = os.environ.get("EDUFAIR_SHARED_DIR")
    return (Path(root) if root else repo_root().parent / "shared") / "data"


def item_id(domain: str, source: str, question: str, answer: str) -> str:
    """Stable id from the source question text (+ gold, since SciQ repeats a few question texts
    with different answers): ``physics-sciq-3f2a9c01b7de``."""
    digest = hashlib.sha256(f"{question.strip()}\x1f{answer.strip()}".encode("utf-8")).hexdigest()
    return f"{domain}-{source}-{digest[:12]}"


def canonical_number(text: str, where: str = "") -> str:
    """``"1,000"`` -> ``"1000"``, ``"18.50"`` -> ``"18.5"``, ``"-3"`` -> ``"-3"``."""
    s = text.strip().replace(",", "").replace("$", "").replace("\u2212", "-")
    try:
        value = Decimal(s)
    except InvalidOperation:
        raise EduFairError(f"{where}not a number: {text!r}") from None
    if not value.is_finite():
        raise EduFairError(f"{where}not a finite number: {text!r}")
    if value == value.to_integral_value():
        return str(int(value))
    return format(value.normalize(), "f")


def numeric_answer_forms(canonical: str) -> list[str]:
    """Common renderings of a numeric gold: plain, thousands-grouped, with a trailing ".0".
    Currency and words are left to the matcher (``protocol.matching``), which parses numbers."""
    forms = [canonical]
    value = Decimal(canonical)
    if value == value.to_integral_value():
        n = int(value)
        if abs(n) >= 1000:
            forms.append(f"{n:,}")
        forms.append(f"{n}.0")
    return forms


def text_answer_forms(answer: str) -> list[str]:
    """SciQ gold: its normalised phrase (matcher adds plural/singular variants)."""
    norm = normalize_answer(answer)
    return [norm] if norm else []


_WS = re.compile(r"\s+")


def clean_text(text: str) -> str:
    """Collapse runs of whitespace (SciQ has stray newlines/double spaces) and trim."""
    return _WS.sub(" ", text).strip()


def seeded_sample(items: Sequence[T], k: int | None, seed: int) -> list[T]:
    """Up to ``k`` items (``None``: all) chosen with ``random.Random(seed)`` (stable across
    CPython 3 versions), returned in their original order."""
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 0):
        raise EduFairError(f"a bank cap must be a whole number >= 0 or none (got {k!r})")
    if k is None or len(items) <= k:
        return list(items)
    idx = sorted(random.Random(seed).sample(range(len(items)), k))
    return [items[i] for i in idx]
