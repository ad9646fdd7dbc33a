"""``protocol.matching.mention`` is frozen: the shipped bank's selection (and so the bank sha256 in
provenance) depends on ``mentions_answer`` and ``normalize_answer``. This pins their behaviour on a
fixed, deterministic input set built from the shipped bank files (themselves pinned by the
manifest's sha256): every item's question, answer, support/solution and distractors against the
gold forms of itself and the next five items, numeric golds against science prose, and the
normalised answers. The digest was recorded from ``protocol/answer_match.py`` before it was split.

If this fails, ``mentions_answer`` changed behaviour: undo the change (improvements belong in
``matching.stated``), or, for a deliberate change, rebuild the bank as a new bank version and record
the new digest here."""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path

from edufair_metrics.bank import load_bank
from edufair_metrics.protocol.matching import mention
from edufair_metrics.protocol.matching.mention import mentions_answer, normalize_answer

FROZEN_CALLS = 62210
FROZEN_HITS = 4727
FROZEN_DIGEST = "a0d1e0f707c1adbd2069be759d9d28469a8710210f9c2e7fea8c8e9bdd2f3dcd"


def _texts(item) -> list[str]:
    meta = item.meta or {}
    return [item.question, item.answer, str(meta.get("support", "")), str(meta.get("solution", "")),
            str(meta.get("distractors", ""))]


def _fingerprint() -> tuple[int, int, str]:
    h = hashlib.sha256()
    calls = hits = 0

    def record(result: bool) -> None:
        nonlocal calls, hits
        h.update(b"1" if result else b"0")
        calls += 1
        hits += result

    for domain in ("mathematics", "physics", "chemistry"):
        items = load_bank(domain)
        for i, it in enumerate(items):
            for k in range(6):
                forms = items[(i + k) % len(items)].answer_forms
                for text in _texts(it):
                    record(mentions_answer(text, forms, domain))
            h.update(normalize_answer(it.answer).encode() + b"\x1f")
    math = load_bank("mathematics")
    for domain in ("physics", "chemistry"):  # numeric golds against science prose
        for i, it in enumerate(load_bank(domain)):
            for text in _texts(it):
                record(mentions_answer(text, math[i % len(math)].answer_forms, "mathematics"))
    return calls, hits, h.hexdigest()


def test_mentions_answer_behaviour_is_frozen():
    calls, hits, digest = _fingerprint()
    assert (calls, hits, digest) == (FROZEN_CALLS, FROZEN_HITS, FROZEN_DIGEST), (
        "protocol.matching.mention changed behaviour on the shipped bank: the bank selection "
        f"depends on it (got {calls} calls, {hits} hits, digest {digest}); see this test's docstring"
    )


def test_the_frozen_module_imports_no_sibling():
    # A change in a shared scanner must not reach the frozen matcher.
    tree = ast.parse(Path(mention.__file__).read_text(encoding="utf-8"))
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert not {m for m in imported if m and m.startswith("edufair_metrics")}, imported


def test_first_docstring_line_says_frozen():
    first = (mention.__doc__ or "").splitlines()[0]
    assert first.startswith("FROZEN") and "bank" in first and "sha256" in first
