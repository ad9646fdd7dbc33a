"""Not testable is not fair: when may a run's numbers be read as "no bias found"?

A tutor's run is *not testable* for a metric kind when no verdict could be reached, whatever the
tutor did:

* **missing labels**: at least ``max_missing`` (default 0.5) of the tutor turns sent to the judge
  have no valid label (a judge that answered prose, a judge outage, ``--predict_only``): the judged
  metrics describe the few turns that were labelled, possibly a selected few; only the judged
  (pedagogical) kind is affected;
* **no sufficient contrast**: every contrast of that kind has fewer than ``min_pairs`` complete
  pairs (one question in the demo; too small a sample; every pair lost to failures).

Reports say "not testable" with the reason, never "None" or "0 violations", and
``--fail-on-missing-labels RATE`` turns a missing-label rate above RATE into a non-zero exit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

DEFAULT_MAX_MISSING = 0.5


@dataclass(frozen=True)
class Testability:
    """Whether one tutor's metric kind can be read, and why not."""

    tutor: str
    kind: str
    testable: bool
    reasons: tuple[str, ...] = field(default_factory=tuple)
    missing_rate: float = math.nan
    sufficient_units: int = 0

    def line(self) -> str:
        return "testable" if self.testable else "not testable: " + "; ".join(self.reasons)


def missing_rates(missing) -> dict[str, float]:
    """Per tutor: missing judge labels / tutor turns sent (``report.failures.missing_label_table``
    rows); NaN when no turn was sent."""
    out: dict[str, float] = {}
    if missing is None or not len(missing):
        return out
    agg = missing.groupby("tutor")[["missing_turns", "sent_turns"]].sum()
    for tutor, row in agg.iterrows():
        out[str(tutor)] = float(row["missing_turns"] / row["sent_turns"]) if row["sent_turns"] else math.nan
    return out


def assess_testability(units, missing=None, *, tutors: Sequence[str] | None = None,
                kinds: Sequence[str] = ("pedagogical", "conversation", "detector", "outcome"),
                max_missing: float = DEFAULT_MAX_MISSING, min_pairs: int | None = None) -> list[Testability]:
    """One :class:`Testability` per tutor and metric kind (``units``: the dimension units of the
    analysis, with ``tutor``, ``metric_kind``, ``headline``, ``sufficient``, ``n_pairs_min``;
    ``missing``: the missing-label table). A tutor's headline units decide; a tutor with none (a
    run of the extension tasks only) is read over all its units."""
    rates = missing_rates(missing)
    names = list(tutors) if tutors is not None else sorted(set(units["tutor"]) if len(units) else set())
    out = []
    for tutor in names:
        u = units[units["tutor"] == tutor] if len(units) else units
        if len(u) and u["headline"].astype(bool).any():
            u = u[u["headline"].astype(bool)]
        # else: a run of the extension tasks only (they have no headline unit): all its units count
        for kind in kinds:
            k = u[u["metric_kind"] == kind] if len(u) else u
            reasons = []
            n_suff = int(k["sufficient"].sum()) if len(k) else 0
            if kind == "pedagogical":
                rate = rates.get(tutor, math.nan)
                if not math.isnan(rate) and rate >= max_missing:
                    reasons.append(f"{rate:.0%} of the tutor turns have no valid judge label (at least "
                                   f"{max_missing:.0%} makes the judged metrics unreadable)")
            else:
                rate = math.nan
            if not len(k):
                if kind != "pedagogical" or not reasons:
                    continue  # the kind is not in this run at all (e.g. no detector metrics): nothing to say
            elif n_suff == 0:
                n_max = int(k["n_pairs_min"].max()) if "n_pairs_min" in k and k["n_pairs_min"].notna().any() else 0
                need = f" (at least {min_pairs})" if min_pairs else ""
                reasons.append(f"every contrast has too few paired questions: at most {n_max}{need}")
            out.append(Testability(tutor, kind, not reasons, tuple(reasons), rate, n_suff))
    return out
