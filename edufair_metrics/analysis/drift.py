"""Student drift: the simulated student behaved differently between the two levels of a contrast,
so the tutor's measured difference there may be (partly) the student's.

Definition
    A tutor-side row or unit (metric kind pedagogical, conversation or detector) has
    ``student_drift`` when a *student* unit (metric kind ``student``, the student-side monitor
    ``records.STUDENT_METRICS``) of the same tutor × domain × condition × contrast is flagged
    (verdict ``flag``: its own FDR family, ``analysis.verdicts``). The domain is part of the key
    because pairs never cross domains: a student that drifts in the physics dialogues says nothing
    about the mathematics ones. ``drift_metrics`` names the flagged student metrics. Student rows
    themselves carry no drift mark (they are the monitor).

What it means (``drift_by_design``)
    Whether the student's own system prompt differs between the two sides of the contrast (the
    multiset of the student prompts of the side's levels, from ``protocol.prompts.system_prompts``):
    * False (Explicit, Implicit; Opposite's tutor effect and interaction, whose sides hold the same
      student genders): only the tutor sees the cue, so a student that behaves differently was
      moved by the tutor (a mediator the tutor induced: fewer student mistakes leave fewer
      applicable turns) or by the cue leaking into the dialogue (the tutor using the name or the
      group). The tutor's verdict is then not a clean "same student, different tutoring" effect.
    * True (Opposite's Correct, Wrong and student effect): the student is told its gender, so a
      student difference is part of the design; the tutor's verdict there includes it by
      construction.
    Student metrics never count toward the tutor's headline, leaderboard or CI gate (they are their
    own metric kind; those read only the pedagogical kind).
"""

from __future__ import annotations

import functools

import numpy as np

from edufair_metrics.protocol.contrasts import load_contrasts
from edufair_metrics.protocol.prompts import condition_levels, system_prompts

__all__ = ["DRIFT_COLUMNS", "TUTOR_KINDS", "add_student_drift", "student_cued"]

TUTOR_KINDS = ("pedagogical", "conversation", "detector")
DRIFT_KEYS = ["tutor", "domain", "condition", "contrast"]
DRIFT_COLUMNS = ["student_drift", "drift_metrics", "drift_by_design"]


@functools.lru_cache(maxsize=64)
def student_cued(condition: str, contrast: str) -> bool:
    """Whether the student's own prompt differs between the two sides of a pair of ``contrast``
    (any pair; False for an unknown contrast or condition)."""
    try:
        levels = {lv.level: lv for lv in condition_levels(condition)}
    except Exception:  # noqa: BLE001 - a condition the protocol does not know has no student cue to read
        return False
    for spec in load_contrasts():
        if spec.condition != condition or spec.name != contrast:
            continue
        for a, b in spec.pairs:
            if not all(lv in levels for lv in a + b):
                continue
            side = [sorted(system_prompts(levels[lv], "physics").student for lv in s) for s in (a, b)]
            if side[0] != side[1]:
                return True
    return False


def _drift_table(units):
    """Per (tutor, domain, condition, contrast) with a flagged student unit: the flagged metrics."""
    s = units[(units["metric_kind"] == "student") & (units["verdict"] == "flag")] if len(units) else units
    out: dict[tuple, list[str]] = {}
    for row in s[DRIFT_KEYS + ["metric"]].itertuples(index=False):
        out.setdefault(tuple(row[:4]), []).append(str(row[4]))
    return out


def _mark(frame, drift: dict[tuple, list[str]]):
    keys = list(zip(*(frame[k] for k in DRIFT_KEYS))) if len(frame) else []
    tutor_side = frame["metric_kind"].isin(TUTOR_KINDS).to_numpy() if len(frame) else np.zeros(0, dtype=bool)
    metrics = [", ".join(drift.get(tuple(k), ())) for k in keys]
    on = np.array([bool(m) for m in metrics], dtype=bool) & tutor_side
    out = frame.copy()
    out["student_drift"] = on
    out["drift_metrics"] = np.where(on, metrics, "")
    out["drift_by_design"] = [bool(o) and student_cued(str(c), str(k)) for o, c, k in
                              zip(on, frame["condition"] if len(frame) else [], frame["contrast"] if len(frame) else [])]
    return out


def add_student_drift(grid, units):
    """(grid, units) with ``DRIFT_COLUMNS`` (module docstring); units need the verdict column."""
    if "verdict" not in units.columns:
        drift: dict[tuple, list[str]] = {}
    else:
        drift = _drift_table(units)
    return _mark(grid, drift), _mark(units, drift)
