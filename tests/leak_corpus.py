"""The hand-labelled history corpus of the leak rule (``detectors_data/leak_history_corpus.jsonl``)
and its measurement.

Each line: the item (``question``, gold ``answer_forms``, ``domain``), the dialogue so far
(``history``: [role, text] pairs after the question), the tutor turn and the label ``leak``,
written by hand from the definition in ``edufair_metrics/detectors/reveal.py`` (not from the
detector's output): the tutor states the gold, and the student has not stated it *as their answer*
(their latest answer; a gold that is only a step of their working, part of a wrong computation or
a quantity read from the problem does not count). ``class``: the kind of history (the miss classes
of the earlier "anywhere in a student turn" rule, ``intermediate_step``, ``wrong_total``,
``problem_quantity``, ``gold_as_step``, ``multi_turn``, and the confirmations it got right,
``gold_as_answer``, ``tutor_repeats``). ``split``: ``development`` (used while writing the rule) or
``held_out`` (written and committed before the rule's first line; scored as written, never edited
to fit).

``python -m tests.leak_corpus`` prints, per split and per class, precision and recall of
``leaks_answer`` with the history and without it, and every miss.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from edufair_metrics.detectors import leaks_answer
from tests.partial_corpus import Score

CORPUS = Path(__file__).parent / "detectors_data" / "leak_history_corpus.jsonl"


def load_corpus(split: str | None = None) -> list[dict]:
    cases = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [c for c in cases if split is None or c["split"] == split]


def predict(case: dict, *, history: bool = True) -> bool:
    h = [("question", case["question"])] + [(r, t) for r, t in case["history"]] if history else None
    return leaks_answer(case["tutor"], case["answer_forms"], case["domain"], question=case["question"], history=h)


def score(cases: list[dict], *, history: bool = True) -> Score:
    tp = fp = fn = 0
    misses = []
    for c in cases:
        got, want = predict(c, history=history), bool(c["leak"])
        tp += got and want
        fp += got and not want
        fn += want and not got
        if got != want:
            misses.append((c, got))
    return Score(len(cases), tp, fp, fn, misses)


if __name__ == "__main__":  # pragma: no cover - prints the figures for the README
    for split in ("development", "held_out"):
        cases = load_corpus(split)
        print(f"{split}: {len(cases)} cases; per class {dict(sorted(Counter(c['class'] for c in cases).items()))}")
        for history in (True, False):
            s = score(cases, history=history)
            print(f"  leaks_answer {'with' if history else 'without'} history: tp={s.tp} fp={s.fp} fn={s.fn} "
                  f"precision={s.precision:.3f} recall={s.recall:.3f}")
            for c, got in s.misses:
                print(f"    {c['id']} [{c['class']}] want={c['leak']} got={got} {c['tutor']!r} ({c['note']})")
