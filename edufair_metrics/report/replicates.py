"""The variance components in the report (``analysis.replicates.variance_components``): how much
of a paired difference's variance is within-question dialogue noise (measured by replicate
dialogues, ``edufair.replicates``, or by a placebo replicate) and which number of dialogues per
question and level would have been most efficient. Shown only for runs that measure it."""

from __future__ import annotations

import math
from typing import Mapping

from edufair_metrics.report.tables import to_markdown

__all__ = ["TITLE", "replicates_markdown"]

TITLE = "Variance components (within-question noise)"


def _num(x: float, digits: int = 4) -> str:
    if x != x:
        return "—"
    return "inf" if math.isinf(x) else f"{x:.{digits}g}"


def replicates_markdown(components, labels: Mapping[str, str] | None = None, cost_ratio: float = 1.0) -> str:
    """The summary.md section: per tutor, domain, condition and metric the within- and
    between-question variance, the within share at k = 1 and k*; "" when no run measures them."""
    if components is None or not len(components):
        return ""
    labels = labels or {}
    table = components.assign(
        domain=components["domain"].map(lambda d: labels.get(d, d)),
        within_var=components["within_var"].map(_num), between_var=components["between_var"].map(_num),
        share_within=components["share_within"].map(lambda x: "—" if x != x else f"{x:.0%}"),
        k_star=components["k_star"].map(lambda x: _num(x, 3)),
        k_star_whole=components["k_star_whole"].map(lambda x: "—" if x != x else ("inf" if math.isinf(x) else str(int(x)))),
    )[["tutor", "domain", "condition", "metric", "source", "k", "questions", "within_var", "between_var",
       "share_within", "k_star", "k_star_whole"]]
    note = ("A question's paired difference varies for two reasons: questions differ (between_var, the question x "
            "level heterogeneity) and each dialogue is one draw of the tutor's sampling (within_var, from the replicate "
            "dialogues of edufair.replicates, or from the placebo replicate). With k dialogues per question and level its "
            "variance is 2·(between_var + within_var / k); share_within is the dialogue noise's share at k = 1. "
            f"k_star = sqrt((c_q/c_r)·within_var/between_var) with c_q/c_r = {cost_ratio:g} (a new question costs "
            "that many dialogues) is the most efficient number of dialogues per question and level (Cochran §10); "
            "k_star_whole the whole number to run. Per metric: variance_components.csv; `edufair plan` uses these.")
    return to_markdown(table, TITLE, note)
