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

``python -m tests.leak_corpus`` prints, per split, precision and recall of ``leaks_answer`` with
the history and without it, the count of cases per class, and every miss; ``--all-corpora``
measures it on the partial-reveal corpus's leak labels and the stop-rule corpus (read as leak
labels: ``answer_revealed`` is a leak) too.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from edufair_metrics.detectors import leaks_answer
from tests.partial_corpus import Score, tally

CORPUS = Path(__file__).parent / "detectors_data" / "leak_history_corpus.jsonl"


def load_corpus(split: str | None = None) -> list[dict]:
    cases = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [c for c in cases if split is None or c["split"] == split]


def predict(case: dict, *, history: bool = True) -> bool:
    h = [("question", case["question"])] + [(r, t) for r, t in case["history"]] if history else None
    return leaks_answer(case["tutor"], case["answer_forms"], case["domain"], question=case["question"], history=h)


def score(cases: list[dict], *, history: bool = True) -> Score:
    return tally(cases, lambda c: predict(c, history=history), lambda c: c["leak"])


def stop_corpus_leak_cases() -> list[dict]:
    """The stop-rule corpus read as leak labels: a case labelled ``answer_revealed`` (the tutor
    states the gold the student had not given) is a leak, every other case is not; the history
    is the question and the student turn."""
    from tests.dialogue.stop_corpus import load_corpus as load_stop_corpus

    return [{"id": c["id"], "split": c.get("split", "development"), "class": c.get("class", c["expected"] or "none"),
             "domain": c["domain"], "question": c["question"], "answer_forms": c["answer_forms"],
             "history": [["student", c["student"]]] if c.get("student") is not None else [],
             "tutor": c["tutor"], "leak": c["expected"] == "answer_revealed", "note": c["note"]}
            for c in load_stop_corpus()]


def partial_corpus_leak_cases() -> list[dict]:
    """The partial-reveal corpus's ``leak`` labels."""
    from tests.partial_corpus import load_corpus as load_partial_corpus

    return [{**c, "class": c.get("class", "-")} for c in load_partial_corpus()]


if __name__ == "__main__":  # pragma: no cover - prints the figures for the README
    import sys

    if "--all-corpora" in sys.argv:
        for name, cases in (("leak history corpus", load_corpus()), ("partial-reveal corpus", partial_corpus_leak_cases()),
                            ("stop-rule corpus", stop_corpus_leak_cases())):
            for split in ("development", "held_out"):
                part = [c for c in cases if c["split"] == split]
                for history in (True, False):
                    s = score(part, history=history)
                    print(f"{name:22s} {split:12s} n={s.n:3d} leaks={s.tp + s.fn:3d} "
                          f"{'with' if history else 'without':7s} history: tp={s.tp} fp={s.fp} fn={s.fn} "
                          f"precision={s.precision:.3f} recall={s.recall:.3f}")
        sys.exit(0)
    for split in ("development", "held_out"):
        cases = load_corpus(split)
        print(f"{split}: {len(cases)} cases; per class {dict(sorted(Counter(c['class'] for c in cases).items()))}")
        for history in (True, False):
            s = score(cases, history=history)
            print(f"  leaks_answer {'with' if history else 'without'} history: tp={s.tp} fp={s.fp} fn={s.fn} "
                  f"precision={s.precision:.3f} recall={s.recall:.3f}")
            for c, got in s.misses:
                print(f"    {c['id']} [{c['class']}] want={c['leak']} got={got} {c['tutor']!r} ({c['note']})")
