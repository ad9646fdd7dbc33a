"""The reveal detectors against human "reveals the answer" labels (``edufair detector-human``): no
judge, no model call. Reads human-labelled tutor responses (``judge.human``, MRBench / BEA-2025
format) whose gold can be derived, runs the detectors on each response with the conversation
before it as history, and compares them with the human label.

Per response
    ``human``: the ``Revealing_of_the_Answer`` label as 0/1: "Yes" and "Yes (and the answer is
    correct)" = 1, "No" = 0, "To some extent" = the ``partial`` policy (yes / no / drop),
    "Yes (but the answer is incorrect)" = the ``incorrect`` policy (default drop: the tutor
    revealed an answer that is not the gold, which a gold detector cannot see and which is not a
    non-reveal either). ``appeared``: the gold was mentioned earlier in the conversation
    (``gold_mentioned`` in any earlier turn; the question quoted in the opening tutor line is left
    out). The detectors (:mod:`edufair_metrics.detectors`), each with ``question`` and ``history``:
      * ``leak``          ``leaks_answer`` (history-aware: a gold the student stated is a
                          confirmation);
      * ``stop_matcher``  ``leaks_answer`` without history (the stop rule's matcher), for
                          comparison;
      * ``partial``       ``partially_reveals``;
      * ``reveal``        leak or partial reveal.
Per detector and subset (all responses; the gold had not appeared earlier; it had)
    n, human positives, predicted positives, TP / FP / FN / TN, precision = TP / (TP + FP),
    recall = TP / (TP + FN) (NaN when the denominator is 0), each with a 95% percentile bootstrap CI
    that resamples *conversations* (``HumanItem.conversation``; the responses of one conversation
    share its history and its gold) with replacement, ``n_boot`` times
    (``numpy.random.default_rng(seed)``); resamples with an undefined value are left out.
Skipped responses are counted, never scored: no derivable gold (``no_gold``), no
``Revealing_of_the_Answer`` label (``no_label``), a label the policies drop (``dropped``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from edufair_metrics.analysis.engine import percentile_ci
from edufair_metrics.detectors import leaks_answer, partial_reveal
from edufair_metrics.errors import EduFairError
from edufair_metrics.judge.human import PARTIAL_POLICIES, HumanItem
from edufair_metrics.protocol.matching import gold_mentioned

__all__ = [
    "DETECTORS", "DETECTOR_HUMAN_COLUMNS", "INCORRECT_POLICIES", "SUBSETS", "DetectorHumanResult",
    "detector_human", "detector_human_label", "detector_human_rows", "detector_human_summary",
]

DETECTORS = ("leak", "stop_matcher", "partial", "reveal")
SUBSETS = ("all", "gold_not_yet_appeared", "gold_appeared")
INCORRECT_POLICIES = ("drop", "yes", "no")
LEAKAGE = "answer_leakage"  # the EduFair metric of Revealing_of_the_Answer (judge.human.MRBENCH_DIMENSIONS)
DETECTOR_HUMAN_COLUMNS = [
    "detector", "subset", "n", "conversations", "human_positive", "predicted", "tp", "fp", "fn", "tn",
    "precision", "precision_ci_low", "precision_ci_high", "recall", "recall_ci_low", "recall_ci_high",
]


def detector_human_label(raw: str | None, *, partial: str = "yes", incorrect: str = "drop") -> int | None:
    """A ``Revealing_of_the_Answer`` label as 0/1 under the two policies (None: dropped / none)."""
    if partial not in PARTIAL_POLICIES:
        raise EduFairError(f"--partial must be one of {', '.join(PARTIAL_POLICIES)}, got {partial!r}")
    if incorrect not in INCORRECT_POLICIES:
        raise EduFairError(f"--incorrect-reveal must be one of {', '.join(INCORRECT_POLICIES)}, got {incorrect!r}")
    if raw is None:
        return None
    s = " ".join(str(raw).split()).casefold()
    if s in ("yes", "yes (and the answer is correct)", "1", "true"):
        return 1
    if s in ("no", "0", "false"):
        return 0
    policy = {"yes": 1, "no": 0, "drop": None}
    if s in ("to some extent", "partial", "partially"):
        return policy[partial]
    if s == "yes (but the answer is incorrect)":
        return policy[incorrect]
    if s in ("", "na", "n/a", "-1"):
        return None
    raise EduFairError(f"unknown Revealing_of_the_Answer label {raw!r}")


def _appeared(item: HumanItem, forms: list[str]) -> bool:
    """The gold was mentioned in a turn before the response (the opening's quoted question left out)."""
    history = item.transcript.turns[:-1]
    for k, t in enumerate(history):
        text = t.text
        if k == 0 and item.question and item.question in text:
            text = text.replace(item.question, " ")
        if gold_mentioned(text, forms, item.transcript.domain):
            return True
    return False


def detector_human_rows(items: Sequence[HumanItem], *, partial: str = "yes", incorrect: str = "drop"
                        ) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """One row per scored response (item_id, conversation, tutor, gold, appeared, human, human_raw
    and the four detectors' 0/1, the partial reveal's rule and value) and the counts of responses
    read and skipped."""
    rows: list[dict[str, Any]] = []
    counts = {"responses": len(items), "no_gold": 0, "no_label": 0, "dropped": 0, "scored": 0}
    for it in items:
        if not it.gold:
            counts["no_gold"] += 1
            continue
        raw = it.human_raw.get(LEAKAGE) if LEAKAGE in it.human else None
        if raw is None or not str(raw).strip():
            counts["no_label"] += 1
            continue
        human = detector_human_label(raw, partial=partial, incorrect=incorrect)
        if human is None:
            counts["dropped"] += 1
            continue
        t = it.transcript
        forms, domain = [it.gold], t.domain
        response = t.turns[-1].text
        history = [(x.role, x.text) for x in t.turns[:-1]]
        leak = leaks_answer(response, forms, domain, question=it.question, history=history)
        stop = leaks_answer(response, forms, domain, question=it.question)
        pr = partial_reveal(response, forms, domain, question=it.question, history=history)
        rows.append({"item_id": it.item_id, "conversation": it.conversation or it.item_id, "tutor": it.tutor,
                     "gold": it.gold, "appeared": int(_appeared(it, forms)), "human": human, "human_raw": str(raw),
                     "leak": int(leak), "stop_matcher": int(stop), "partial": int(pr is not None),
                     "reveal": int(leak or pr is not None), "partial_rule": pr.rule if pr else "",
                     "partial_value": pr.value if pr else ""})
        counts["scored"] += 1
    return rows, counts


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def _summary_row(detector: str, subset: str, rows: list[dict[str, Any]], *, n_boot: int, seed: int) -> dict[str, Any]:
    clusters: dict[str, list[int]] = {}
    for r in rows:
        c = clusters.setdefault(r["conversation"], [0, 0, 0, 0])  # tp, fp, fn, tn
        pred, human = r[detector], r["human"]
        c[0 if pred and human else 1 if pred else 2 if human else 3] += 1
    m = np.asarray(list(clusters.values()), dtype=float).reshape(-1, 4)
    tp, fp, fn, tn = (int(x) for x in m.sum(axis=0)) if len(m) else (0, 0, 0, 0)
    precision = tp / (tp + fp) if tp + fp else math.nan
    recall = tp / (tp + fn) if tp + fn else math.nan
    p_ci = r_ci = (math.nan, math.nan)
    if len(m) and n_boot > 0:
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, len(m), size=(n_boot, len(m)))
        sums = m[idx].sum(axis=1)  # (n_boot, 4)
        p_ci = percentile_ci(_ratio(sums[:, 0], sums[:, 0] + sums[:, 1]))
        r_ci = percentile_ci(_ratio(sums[:, 0], sums[:, 0] + sums[:, 2]))
    return {"detector": detector, "subset": subset, "n": len(rows), "conversations": len(clusters),
            "human_positive": tp + fn, "predicted": tp + fp, "tp": tp, "fp": fp, "fn": fn, "tn": tn,
            "precision": precision, "precision_ci_low": p_ci[0], "precision_ci_high": p_ci[1],
            "recall": recall, "recall_ci_low": r_ci[0], "recall_ci_high": r_ci[1]}


def detector_human_summary(rows: list[dict[str, Any]], *, n_boot: int = 1000, seed: int = 0) -> list[dict[str, Any]]:
    """Per detector and subset: the ``DETECTOR_HUMAN_COLUMNS`` (see the module docstring)."""
    subsets = {"all": rows, "gold_not_yet_appeared": [r for r in rows if not r["appeared"]],
               "gold_appeared": [r for r in rows if r["appeared"]]}
    return [_summary_row(d, s, subsets[s], n_boot=n_boot, seed=seed) for d in DETECTORS for s in SUBSETS]


@dataclass(frozen=True)
class DetectorHumanResult:
    rows: list[dict[str, Any]]  # per scored response
    summary: list[dict[str, Any]]  # per detector and subset
    counts: dict[str, int] = field(default_factory=dict)


def detector_human(items: Sequence[HumanItem], *, partial: str = "yes", incorrect: str = "drop", n_boot: int = 1000,
                   seed: int = 0) -> DetectorHumanResult:
    """The detectors against the human reveal labels of ``items`` (see the module docstring)."""
    if n_boot < 1:
        raise EduFairError(f"--n-boot must be >= 1, got {n_boot}")
    rows, counts = detector_human_rows(items, partial=partial, incorrect=incorrect)
    if not rows:
        raise EduFairError(f"no response with a derivable gold and a Revealing_of_the_Answer label "
                           f"({counts['no_gold']} without gold, {counts['no_label']} without label, "
                           f"{counts['dropped']} dropped by the policies)")
    return DetectorHumanResult(rows, detector_human_summary(rows, n_boot=n_boot, seed=seed), counts)
