"""The hand-labelled partial-reveal corpus (``detectors_data/partial_reveal_corpus.jsonl``) and its
measurement.

Each line: the item (``question``, gold ``answer_forms``, ``domain``), the dialogue so far
(``history``: [role, text] pairs after the question), the tutor turn, and two labels written by
hand from the definitions in ``edufair_metrics/detectors/reveal.py`` (not from the detectors'
output): ``partial`` (the turn partially reveals the gold) and ``leak`` (it states the gold, which
the student has not stated). ``split``: ``development`` (used while writing the rule) or
``held_out`` (all 40 written and committed before the rule's first line; scored as written, never
edited to fit).

``python -m tests.partial_corpus`` prints precision and recall per split and every miss.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from edufair_metrics.detectors import leaks_answer, partially_reveals

CORPUS = Path(__file__).parent / "detectors_data" / "partial_reveal_corpus.jsonl"


def load_corpus(split: str | None = None) -> list[dict]:
    cases = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [c for c in cases if split is None or c["split"] == split]


def _history(case: dict) -> list[tuple[str, str]]:
    return [("question", case["question"])] + [(r, t) for r, t in case["history"]]


def predict(case: dict, label: str = "partial") -> bool:
    detector = partially_reveals if label == "partial" else leaks_answer
    return detector(case["tutor"], case["answer_forms"], case["domain"], history=_history(case))


@dataclass(frozen=True)
class Score:
    n: int
    tp: int
    fp: int
    fn: int
    misses: list[tuple[dict, bool]]

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else float("nan")

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else float("nan")


def tally(cases: list[dict], predicted, wanted) -> Score:
    """Precision / recall counts of ``predicted(case)`` against ``wanted(case)`` over ``cases``."""
    tp = fp = fn = 0
    misses = []
    for c in cases:
        got, want = predicted(c), bool(wanted(c))
        tp += got and want
        fp += got and not want
        fn += want and not got
        if got != want:
            misses.append((c, got))
    return Score(len(cases), tp, fp, fn, misses)


def score(cases: list[dict], label: str = "partial") -> Score:
    return tally(cases, lambda c: predict(c, label), lambda c: c[label])


if __name__ == "__main__":  # pragma: no cover - prints the figures for the README
    for label in ("partial", "leak"):
        for split in ("development", "held_out", None):
            s = score(load_corpus(split), label)
            print(f"{label:8s} {split or 'all':12s} n={s.n} tp={s.tp} fp={s.fp} fn={s.fn} "
                  f"precision={s.precision:.3f} recall={s.recall:.3f}")
            for c, got in s.misses:
                print(f"    {c['id']} want={c[label]} got={got} [{c['domain']}] {c['tutor']!r} ({c['note']})")
