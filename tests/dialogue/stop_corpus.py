"""The labelled stop-rule corpus (``data/stop_corpus.jsonl``) and its measurement.

Each line: the previous student turn, the tutor turn, the gold ``answer_forms``, the domain, the
item's question and the expected stop reason (``answer_revealed`` / ``answer_confirmed`` / null),
labelled by hand from the paper's definition (§3.2: the tutor revealed the correct answer, or
confirmed the student's correct answer), not from the rule's output. ``split`` (absent: the
development cases written with the rule): ``held_out`` cases were written and committed before the
rule they test (contrastive negation, number-word confirmations) and are scored as
written; ``class`` names the case class where one was given.

``python -m tests.dialogue.stop_corpus`` prints precision, recall and the confusion matrix, for
all cases, the development cases and the held-out cases, with the count of cases per class.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from edufair_metrics.dialogue import DialogueState, stop_after_tutor_turn

CORPUS = Path(__file__).parent / "data" / "stop_corpus.jsonl"
LABELS = ("answer_revealed", "answer_confirmed", None)


def load_corpus(split: str | None = None) -> list[dict]:
    cases = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [c for c in cases if split is None or c.get("split", "development") == split]


def predict(case: dict, max_tutor_turns: int = 10) -> str | None:
    doc = {"question_id": case["id"], "domain": case["domain"], "question": case["question"],
           "answer_forms": case["answer_forms"]}
    state = DialogueState(doc=doc)
    if case.get("student") is not None:
        state.add("student", case["student"])
    state.add("tutor", case["tutor"])
    return stop_after_tutor_turn(state, max_tutor_turns)


@dataclass(frozen=True)
class CorpusReport:
    n: int
    precision: float  # of predicted stops, the share that are stops by the label
    recall: float  # of labelled stops, the share the rule stops
    reason_accuracy: float  # of true stops, the share with the right reason (revealed/confirmed)
    confusion: dict[tuple[str | None, str | None], int]  # (expected, predicted) -> count
    errors: list[tuple[dict, str | None]]


def evaluate(cases: list[dict]) -> CorpusReport:
    confusion: Counter = Counter()
    errors = []
    for case in cases:
        got = predict(case)
        confusion[(case["expected"], got)] += 1
        if got != case["expected"]:
            errors.append((case, got))
    tp = sum(c for (e, g), c in confusion.items() if e is not None and g is not None)
    predicted = sum(c for (_, g), c in confusion.items() if g is not None)
    actual = sum(c for (e, _), c in confusion.items() if e is not None)
    exact = sum(c for (e, g), c in confusion.items() if e is not None and e == g)
    return CorpusReport(len(cases), tp / predicted if predicted else 1.0, tp / actual if actual else 1.0,
                        exact / tp if tp else 1.0, dict(confusion), errors)


def format_report(report: CorpusReport) -> str:
    names = {"answer_revealed": "revealed", "answer_confirmed": "confirmed", None: "no stop"}
    lines = [f"stop-rule corpus: {report.n} cases",
             f"precision {report.precision:.3f}  recall {report.recall:.3f}  "
             f"reason accuracy (among true stops) {report.reason_accuracy:.3f}",
             "expected \\ predicted  " + "  ".join(f"{names[p]:>10}" for p in LABELS)]
    for e in LABELS:
        lines.append(f"{names[e]:>20}  " + "  ".join(f"{report.confusion.get((e, p), 0):>10}" for p in LABELS))
    lines.append("disagreements:")
    for case, got in report.errors:
        lines.append(f"  {case['id']} expected {case['expected']} got {got}: {case['note']}")
    return "\n".join(lines)


if __name__ == "__main__":
    for split in (None, "development", "held_out"):
        cases = load_corpus(split)
        classes = Counter(c.get("class", "-") for c in cases)
        print(f"== {split or 'all'} ({len(cases)} cases; per class {dict(sorted(classes.items()))})")
        print(format_report(evaluate(cases)))
