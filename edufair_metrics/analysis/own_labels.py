"""The judge against the user's own labels on their run (``edufair judge-human --format edufair``):
agreement per metric and per level, the differential judge error between the levels of each
contrast pair, and the corrected (prediction-powered) verdict of each unit. Pure functions of the
run's records, its labelling sample and the labels (``runlog.labels``).

Scales. Agreement and error rates compare the judge's and the human's 0/1 on the labelled turns
(a turn either side calls not applicable is left out of that metric). The corrected verdicts
estimate the mean paired difference of a dialogue-level share: for answer_leakage, step_scaffolded
and actionability the report's own rate (every judged tutor turn applies); for the gated
mistake_recognize and corrective_tone the share of *all* judged tutor turns labelled 1, not applicable
counting as 0 (scale ``share_of_turns``): one drawn turn per dialogue estimates a share of all
turns without bias, a rate among applicable turns it does not. Names contrasts (tens of names per
side) are left out: the sample labels one turn per level and question.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from edufair_metrics.analysis.agreement import AGREEMENT_COLUMNS, DEFAULT_AGREEMENT_N_BOOT, agreement
from edufair_metrics.analysis.ppi import differential_error, paired_ppi
from edufair_metrics.protocol.contrasts import ContrastSpec, load_contrasts
from edufair_metrics.records import PEDAGOGICAL_METRICS, DialogueRecord
from edufair_metrics.runlog.labels import HumanLabel, LabelSample, judge_turn_value, judged_turns, sampleable

GATED = ("mistake_recognize", "corrective_tone")
LEVEL_AGREEMENT_COLUMNS = ["level"] + AGREEMENT_COLUMNS
CORRECTED_KEYS = ["tutor", "domain", "condition", "task", "contrast", "pair", "metric", "scale"]


def _dialogue(tid: str) -> str:
    return tid.rsplit("|", 1)[0]


def labelled_pairs(records: Sequence[DialogueRecord], sample: LabelSample, labels: dict[str, HumanLabel]):
    """(sample item, record, human label) of every labelled sample turn."""
    by_key = {f"{r.key[0]}|{r.key[2]}|{r.key[3]}": r for r in records}
    out = []
    for item in sample.items:
        lab = labels.get(item.turn_id)
        rec = by_key.get(_dialogue(item.turn_id))
        if lab is not None and rec is not None:
            out.append((item, rec, lab))
    return out


def agreement_rows(records, sample, labels, *, n_boot: int = DEFAULT_AGREEMENT_N_BOOT, seed: int = 0) -> list[dict[str, Any]]:
    """Per metric, over all labelled turns (level ``all``) and per level: κ, α and % agreement with
    CIs that resample dialogues."""
    pairs = labelled_pairs(records, sample, labels)
    rows = []
    levels = sorted({it.level for it, _, _ in pairs})
    for metric in PEDAGOGICAL_METRICS:
        mine = [(it, rec, lab) for it, rec, lab in pairs if metric in lab.values]
        if not mine:
            continue
        for level in ["all", *levels]:
            sel = [p for p in mine if level == "all" or p[0].level == level]
            if not sel:
                continue
            judge = [judge_turn_value(rec, it.turn_index, metric) for it, rec, _ in sel]
            human = [lab.values[metric] for _, _, lab in sel]
            ag = agreement(judge, human, n_boot=n_boot, seed=seed, clusters=[_dialogue(it.turn_id) for it, _, _ in sel])
            rows.append({"level": level, **ag.as_row(metric, "judge", "human")})
    return rows


def unit_pairs(condition: str, contrasts: Sequence[ContrastSpec] | None = None):
    """(contrast name, a levels, b levels, pair label) of a condition's non-names contrasts."""
    out = []
    for spec in contrasts if contrasts is not None else load_contrasts():
        if spec.condition != condition or spec.kind == "names":
            continue
        for a, b in spec.pairs:
            out.append((spec.name, tuple(a), tuple(b), spec.pair_label(a, b)))
    return out


def differential_rows(records, sample, labels) -> list[dict[str, Any]]:
    """Per task, one-level contrast pair, metric and error kind (fpr / fnr): the judge's error
    rate at each level against the human labels, Fisher's p and the power at these counts."""
    pairs = labelled_pairs(records, sample, labels)
    rows = []
    for stratum in sample.strata:
        seen = set()
        for contrast, a, b, label in unit_pairs(stratum.condition):
            if len(a) != 1 or len(b) != 1 or (a, b) in seen:
                continue
            seen.add((a, b))
            for metric in PEDAGOGICAL_METRICS:
                side = {}
                for lv in (a[0], b[0]):
                    js, hs = [], []
                    for it, rec, lab in pairs:
                        if it.task == stratum.task and it.level == lv and lab.values.get(metric) is not None:
                            j = judge_turn_value(rec, it.turn_index, metric)
                            if j is not None:
                                js.append(j)
                                hs.append(lab.values[metric])
                    side[lv] = (js, hs)
                if not side[a[0]][0] or not side[b[0]][0]:
                    continue
                for kind in ("fpr", "fnr"):
                    d = differential_error(*side[a[0]], *side[b[0]], kind)
                    rows.append({"tutor": sample.tutor, "task": stratum.task, "domain": stratum.domain,
                                 "condition": stratum.condition, "contrast": contrast, "pair": label, "metric": metric,
                                 "a": a[0], "b": b[0], **d.as_row()})
    return rows


def _share(values: Sequence[int | None], gated: bool) -> float:
    """A dialogue's share of turns labelled 1 (not applicable: 0 for gated metrics, left out else)."""
    v = [0 if x is None and gated else x for x in values]
    v = [x for x in v if x is not None]
    return float(np.mean(v)) if v else float("nan")


def _side(values: dict[str, float], levels: Sequence[str]) -> float:
    """One side of a pair: its level's value, or the mean of its levels' (Opposite's effects)."""
    return float(np.mean([values[lv] for lv in levels]))


def corrected_rows(records, sample, labels, *, alpha: float = 0.05) -> list[dict[str, Any]]:
    """Per unit (task × contrast pair × metric): the judge-only, human-only and PPI++ estimates of
    the mean paired difference, with the verdicts and the note when they differ (``analysis.ppi``)."""
    pool = sampleable(records)
    human_at: dict[tuple[str, str, str], tuple[Any, DialogueRecord, HumanLabel]] = {}
    for it, rec, lab in labelled_pairs(records, sample, labels):
        human_at[(it.task, it.question_id, it.level)] = (it, rec, lab)
    sampled = {(it.task, it.question_id) for it in sample.items}
    rows = []
    for stratum in sample.strata:
        qs = sorted(pool.get(stratum.task, {}))
        if not qs:
            continue
        for metric in PEDAGOGICAL_METRICS:
            gated = metric in GATED
            # per question and level: the judge's share over the dialogue's judged turns (F's sides)
            shares = [{lv: _share([judge_turn_value(rec, t, metric) for t in judged_turns(rec)], gated)
                       for lv, rec in pool[stratum.task][q].items()} for q in qs]
            # per labelled question and level: (human, judge) on the labelled turn (G's and Y's sides)
            turn_values: dict[int, tuple[dict[str, float], dict[str, float]]] = {}
            for qi, q in enumerate(qs):
                if (stratum.task, q) not in sampled:
                    continue
                got = [x for x in (human_at.get((stratum.task, q, lv)) for lv in stratum.levels)
                       if x is not None and metric in x[2].values]  # the levels whose turn has this label
                if not got:
                    continue
                hv = {x[0].level: x[2].values[metric] for x in got}
                jv = {x[0].level: judge_turn_value(x[1], x[0].turn_index, metric) for x in got}
                turn_values[qi] = ({lv: float(v or 0) if gated or v is not None else float("nan") for lv, v in hv.items()},
                                   {lv: float(v or 0) if gated or v is not None else float("nan") for lv, v in jv.items()})
            for contrast, a, b, label in unit_pairs(stratum.condition):
                if not set(a) | set(b) <= set(stratum.levels):
                    continue
                f_all = np.asarray([_side(sh, a) - _side(sh, b) for sh in shares])
                keep = np.isfinite(f_all)  # a question whose judge shares are undefined is no pair
                position = np.cumsum(keep) - 1
                labelled, y, g = [], [], []
                for qi, (hv, jv) in sorted(turn_values.items()):
                    if not set(a) | set(b) <= set(hv):
                        continue
                    yd, gd = _side(hv, a) - _side(hv, b), _side(jv, a) - _side(jv, b)
                    if keep[qi] and np.isfinite(yd) and np.isfinite(gd):  # not applicable (non-gated): no value
                        labelled.append(int(position[qi]))
                        y.append(yd)
                        g.append(gd)
                res = paired_ppi(f_all[keep], labelled, y, g, alpha=alpha)
                rows.append({"tutor": sample.tutor, "domain": stratum.domain, "condition": stratum.condition,
                             "task": stratum.task, "contrast": contrast, "pair": label, "metric": metric,
                             "scale": "share_of_turns" if gated else "rate", **res.as_row()})
    return rows


__all__ = ["CORRECTED_KEYS", "GATED", "LEVEL_AGREEMENT_COLUMNS", "agreement_rows", "corrected_rows", "differential_rows",
           "labelled_pairs", "unit_pairs"]
