"""Threats the noise floor cannot see, beside each verdict: differential pair loss
(``analysis.pairloss``) and student drift (``analysis.drift``).

:func:`add_threats` adds to the grid and the units, right after ``verdict``:

* ``caveats`` — the text a reader sees beside a verdict: ``differential loss: <cause> <a> vs <b>
  (a vs b, p = …)`` when a flagged or unconfirmed row (unit) coincides with differential loss in
  the same contrast (``differential_loss``, the exact McNemar rule of ``analysis.pairloss``), and
  ``student drift: <student metrics>`` (``, part of the design`` where the student's own prompt
  differs between the sides) on every tutor-side row (unit) whose contrast has a flagged student
  unit (``analysis.drift``);
* ``differential_loss``, ``student_drift``;

and at the end the pair-accounting columns (``pairloss.LOSS_COLUMNS`` / ``UNIT_LOSS_COLUMNS``)
and ``drift_metrics``, ``drift_by_design``. Verdicts are never changed: these are caveats.
"""

from __future__ import annotations

from typing import Any, Iterable

from edufair_metrics.analysis.drift import add_student_drift
from edufair_metrics.analysis.pairloss import add_pair_loss, loss_cells, pair_accounting
from edufair_metrics.analysis.verdicts import UNIT_KEYS
from edufair_metrics.protocol.contrasts import ContrastSpec

__all__ = ["CAVEAT_COLUMNS", "FLAGGED", "add_threats", "caveat_texts"]

FLAGGED = ("flag", "unconfirmed")
CAVEAT_COLUMNS = ["caveats", "differential_loss", "student_drift"]


def caveat_texts(frame) -> list[str]:
    """The ``caveats`` text of every row of a grid or units frame with the threat columns."""
    out = []
    for verdict, loss, cause, drift, metrics, design in zip(
            frame["verdict"], frame["differential_loss"], frame["loss_cause"], frame["student_drift"],
            frame["drift_metrics"], frame["drift_by_design"]):
        parts = []
        if bool(loss) and verdict in FLAGGED:
            parts.append(f"differential loss: {cause}")
        if bool(drift):
            parts.append(f"student drift: {metrics}" + (", part of the design" if bool(design) else ""))
        out.append("; ".join(parts))
    return out


def _place(frame):
    """``CAVEAT_COLUMNS`` right after ``verdict``."""
    cols = [c for c in frame.columns if c not in CAVEAT_COLUMNS]
    at = cols.index("verdict") + 1 if "verdict" in cols else len(cols)
    return frame[cols[:at] + CAVEAT_COLUMNS + cols[at:]]


def add_threats(grid, units, runs_or_scores: Iterable[Any], *, keep_failed: bool = False,
                contrasts: list[ContrastSpec] | None = None):
    """(grid, units) with the caveat columns (module docstring), from the runs (or DialogueScores)
    the grid was computed from, failed dialogues included."""
    metrics = list(dict.fromkeys(grid["metric"])) if len(grid) else []
    acc = pair_accounting(loss_cells(runs_or_scores, keep_failed=keep_failed, metrics=metrics), contrasts)
    unit_keys = [k for k in UNIT_KEYS if k in units.columns]
    grid, units = add_pair_loss(grid, units, acc, unit_keys)
    grid, units = add_student_drift(grid, units)
    for frame in (grid, units):
        frame["caveats"] = caveat_texts(frame) if len(frame) else []
    return _place(grid), _place(units)
