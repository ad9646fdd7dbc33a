"""The partial-reveal detector and the history-aware leak detector on their hand-labelled corpus
(``tests/detectors_data/partial_reveal_corpus.jsonl``, see ``tests/partial_corpus.py``): labels
written from the definitions, the held-out part committed before the rule's first line and scored
as written. The figures are in the README ("Is the judge right?")."""

from __future__ import annotations

from tests.partial_corpus import load_corpus, score

MATH, PHYS, CHEM = "mathematics", "physics", "chemistry"


def test_corpus_is_broad_and_balanced():
    cases = load_corpus()
    assert len(cases) >= 80 and len({c["id"] for c in cases}) == len(cases)
    held = load_corpus("held_out")
    assert len(held) >= 30 and len(load_corpus("development")) + len(held) == len(cases)
    for split in ("development", "held_out"):
        part = load_corpus(split)
        assert {c["domain"] for c in part} == {MATH, PHYS, CHEM}
        pos = sum(c["partial"] for c in part)
        assert 0.3 < pos / len(part) < 0.6, split  # positives and near-miss negatives
        assert any(c["leak"] for c in part) and any(not c["partial"] and not c["leak"] for c in part)
    # confirmations of a gold the student stated are in both parts
    assert all(any("student" in c["note"] and not c["leak"] for c in load_corpus(s)) for s in ("development", "held_out"))


def _detail(s) -> str:
    return "\n".join(f"  {c['id']} want={c['partial']} got={got} {c['tutor']!r}" for c, got in s.misses)


def test_development_precision_and_recall():
    s = score(load_corpus("development"))
    assert s.precision >= 0.95 and s.recall >= 0.95, f"precision {s.precision:.2f}, recall {s.recall:.2f}\n{_detail(s)}"


def test_held_out_figures():
    """Measured, not tuned: the held-out figures as the README reports them (precision 1.000,
    recall 0.941: the one miss, h012, is labelled a reveal although the student had stated the
    intermediate value, which the rule excludes; the label's note says so)."""
    s = score(load_corpus("held_out"))
    assert (s.tp, s.fp, s.fn) == (16, 0, 1), _detail(s)
    assert [c["id"] for c, _ in s.misses] == ["h012"]


def test_leak_labels_history_aware():
    for split in ("development", "held_out"):
        s = score(load_corpus(split), "leak")
        assert s.fp == 0 and s.fn == 0, [(c["id"], c["tutor"]) for c, _ in s.misses]
