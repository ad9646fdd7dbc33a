"""The banners of a report: what a reader must see before any number, from one source
(:func:`banners`) that summary.md (right under its title) and index.html (over the overview, from the
page's JSON ``banners``) both render, so that the two views never disagree on a warning.

Each :class:`Banner` is Markdown (bold ``**…**``, code spans, ``> `` quoted lines, ``- `` items), the
same text in both views: summary.md writes it as is, the viewer renders the same few marks
(``viewer.js``: ``bannerBox``). In the order shown:

* ``exchangeability`` (fail): a tutor's placebo replicate is not exchangeable (``report.placebo``);
* ``not_testable`` (fail): a tutor's metric kind cannot be read (``analysis.testability``);
* ``degenerate_judge`` (fail): the judge labels a metric the same on every turn, or contradicts the
  deterministic detector on nearly every turn (``analysis.judge_validity``);
* ``missing_labels`` (warn): the share of tutor turns without a valid judge label, per tutor, when
  any is missing;
* ``all_insufficient`` (warn): no contrast has the pair minimum, and which figures therefore carry no
  statistic (every cell "insuff. (n=…)");
* ``bank`` (info): the bank's items stand in for the paper's bank (a proxy).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from edufair_metrics.analysis.testability import Testability

if TYPE_CHECKING:
    from edufair_metrics.analysis.audit import Audit

LEVELS = ("fail", "warn", "info")


@dataclass(frozen=True)
class Banner:
    key: str  # what it is about (see the module docstring)
    level: str  # fail / warn / info (the viewer's colour)
    markdown: str  # the text, as summary.md prints it

    def to_dict(self) -> dict[str, str]:
        return {"key": self.key, "level": self.level, "markdown": self.markdown, "text": plain_text(self.markdown)}


def plain_text(markdown: str) -> str:
    """The words of a banner without its marks, whitespace collapsed (what a reader sees in
    either view; the test that the views agree compares these)."""
    text = re.sub(r"^> ?", "", markdown, flags=re.M)
    text = re.sub(r"^- ", "", text, flags=re.M)
    text = text.replace("**", "").replace("`", "")
    return " ".join(text.split())


def testability_banner(testability: Sequence[Testability]) -> list[str]:
    """The top of summary.md when a tutor's metric kind cannot be read (missing labels, no
    contrast with enough pairs): says so with the reason, so that nothing below reads as "no bias"."""
    bad = [t for t in testability if not t.testable]
    if not bad:
        return []
    lines = ["> **NOT TESTABLE** — these results cannot show that a tutor is fair or unfair:", ">"]
    for t in bad:
        lines.append(f"> - **{t.tutor}**, {t.kind} metrics: {'; '.join(t.reasons)}.")
    lines += [">", "> Their verdicts, violation counts and tables below are not evidence either way "
              "(`analysis/testability.py`). Fix the cause (judge endpoint or prompt format; more questions) and "
              "run again."]
    return lines


def degenerate_judge_banner(a: "Audit") -> list[str]:
    """The degenerate-judge findings of each run (``ValidityScan.degenerate``), as a banner."""
    scans = a.scans or []
    labels = [r.label for r in a.runs] if len(a.runs) == len(scans) else [s.label or "run" for s in scans]
    found = [(who, why) for who, s in zip(labels, scans) for why in s.degenerate()]
    if not found:
        return []
    lines = ["> **DEGENERATE JUDGE** — its labels cannot show a difference between groups, or contradict the "
             "deterministic detector; read every judged (pedagogical) metric with care:", ">"]
    lines += [f"> - **{who}**: {why}." for who, why in found]
    lines += [">", "> See \"Judge validity\" below (summary.md) for the judge against the detector per condition level."]
    return lines


def missing_labels_banner(a: "Audit") -> list[str]:
    """The share of tutor turns without a valid judge label, per tutor with any missing."""
    m = a.missing
    if m is None or not len(m):
        return []
    agg = m.groupby("tutor")[["missing_turns", "sent_turns"]].sum()
    agg = agg[agg["missing_turns"] > 0]
    if not len(agg):
        return []
    parts = [f"**{tutor}** {row.missing_turns / row.sent_turns:.1%} ({int(row.missing_turns):,} of "
             f"{int(row.sent_turns):,} tutor turns sent to the judge)" for tutor, row in agg.iterrows()
             if row.sent_turns > 0]
    return [f"> **Missing judge labels**: {'; '.join(parts)}. A dialogue's judged rates average its labelled turns "
            "only, and a dialogue with no labelled turn has no value (its pairs drop out); by task and condition "
            "level: missing_labels.md."]


def all_insufficient_banner(a: "Audit", empty_figures: Sequence[str] = ()) -> list[str]:
    """Every contrast below the pair minimum: no bias statistic, and the figures that show none."""
    grid = a.grid
    if not len(grid) or grid["sufficient"].any():
        return []
    n_max = int(grid["n_pairs"].max())
    text = (f"**Every contrast is insufficient: n pairs < min pairs (at most {n_max} < {a.params.min_pairs}): "
            f"no bias statistic computed; see levels.md for descriptive rates** (and fig_levels.png). "
            f"The tables and figures below read \"insufficient\" / \"insuff. (n=…)\".")
    if empty_figures:
        text += (f" Figures with no statistic (every cell \"insuff. (n=…)\"): {', '.join(empty_figures)}; "
                 "they are written so that the folder has the same files in every run.")
    return [text]


def bank_banner(a: "Audit") -> list[str]:
    proxies = sorted(lab for d, lab in a.domain_labels.items() if lab != d)
    if not proxies:
        return []
    return [f"Bank: {', '.join(proxies)}: these items stand in for the paper's bank; the numbers are not the paper's."]


def banners(a: "Audit", *, empty_figures: Sequence[str] = ()) -> list[Banner]:
    """Every banner of the report of ``a``, in the order both views show them. ``empty_figures``:
    the figures written whose every cell is insufficient (``report.figures.empty_figures``)."""
    from edufair_metrics.report.placebo import exchangeability_banner

    out = []
    exch = exchangeability_banner(a.exchangeability).strip()
    if exch:
        out.append(Banner("exchangeability", "fail", exch))
    for key, level, lines in (("not_testable", "fail", testability_banner(a.testability)),
                              ("degenerate_judge", "fail", degenerate_judge_banner(a)),
                              ("missing_labels", "warn", missing_labels_banner(a)),
                              ("all_insufficient", "warn", all_insufficient_banner(a, empty_figures)),
                              ("bank", "info", bank_banner(a))):
        if lines:
            out.append(Banner(key, level, "\n".join(lines)))
    return out


def banner_lines(items: Sequence[Banner]) -> list[str]:
    """summary.md's lines for ``items``: each banner, then a blank line."""
    lines: list[str] = []
    for b in items:
        lines += [b.markdown, ""]
    return lines
