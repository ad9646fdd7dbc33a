"""The run card at the top of summary.md and index.html: per tutor the models (the endpoints' model
names), each role's decoding, T_max, protocol and bank versions, replicates, seeds, the versions and
the tokens spent, so that two runs that differ only in a setting can be told apart from their
reports (``analysis.tallies.run_card`` gathers the facts; this module only lays them out)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from edufair_metrics.provenance import versions
from edufair_metrics.report.tables import to_markdown

if TYPE_CHECKING:
    from edufair_metrics.analysis.audit import Audit

RUN_CARD_NOTE = ("From each run's records (their provenance; a value that differs between a run's tasks is listed as "
                 "a | b). Decoding: the generation settings each role was called with; T_max: the most tutor turns "
                 "per dialogue; bank: domain and the first 12 hex digits of the bank file's sha256; EduFair (run): the "
                 "version that made the run. Cost per role: the \"Cost per tutor and role\" section below.")


def run_card_table(card) -> pd.DataFrame:
    """The card transposed: one row per fact, one column per tutor."""
    if card is None or not len(card):
        return pd.DataFrame()
    t = card.set_index("tutor").T.reset_index().rename(columns={"index": "fact"})
    t.columns.name = None
    return t


def run_card_lines(a: "Audit") -> list[str]:
    table = run_card_table(a.run_card)
    if not len(table):
        return []
    v = versions()
    note = RUN_CARD_NOTE + f" This report: EduFair {v.get('edufair', '?')}, lm-eval {v.get('lm_eval', '?')}."
    return [to_markdown(table, "Run card", note)]
