"""summary.md's part on the post-test (outcome fairness), when the runs have one."""

from __future__ import annotations



from edufair_metrics.report.tables import to_markdown


def outcome_section(table) -> list[str]:
    """summary.md's part on the post-test, from ``analysis.tallies.outcome_levels`` (the audit's
    ``outcome``); nothing without post-tests."""
    if not len(table):
        return []
    calls = int(table["post-tests"].sum())
    return ["## Outcome fairness (post-test; EduFair extension)", "",
            f"{calls} post-test(s) scored: one student call per finished dialogue (in the student's call counts). "
            "Contrasts of the outcome metrics: table_outcome.md (metric kind outcome, its own FDR family; units and "
            "verdicts in units.csv).", "",
            to_markdown(table, "Post-test per condition level (descriptive)",
                        "pre-test: the student's opening turn (its answer before any tutoring) read by the answer matcher; "
                        "post-test: the same student's answer after the dialogue, alone. A dialogue in which the tutor "
                        "revealed the gold (it stopped because the tutor stated it, or a detector found a leak or a "
                        "partial reveal) counts as a revealed outcome when the post-test is correct, never as "
                        "learned.")]
