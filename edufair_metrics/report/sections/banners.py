"""What goes at the top of summary.md (and the HTML view): the not-testable banner, and any banner
put right under the title."""

from __future__ import annotations

from typing import Sequence


from edufair_metrics.analysis.testability import Testability


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
              "run again.", ""]
    return lines

def with_banner(summary_md: str, banner: str) -> str:
    """``banner`` right under summary.md's title (nothing when empty)."""
    if not banner:
        return summary_md
    head, sep, rest = summary_md.partition("\n\n")
    return f"{head}\n\n{banner}{rest}" if sep else f"{summary_md}\n\n{banner}"
