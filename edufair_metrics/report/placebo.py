"""The placebo replicate in the report, read as an exchangeability check
(``analysis.placebo.exchangeability_check``): the summary.md section (:func:`placebo_markdown`),
the sentence beside every table (:func:`placebo_note`) and the banner above everything else when a
tutor's check fails (:func:`exchangeability_banner`).

How the placebo enters the verdicts: only through that banner ("exchangeability check failed:
verdicts of this run are not trusted"); no verdict value is changed. It is never compared with the
demographic |r̄| (each contrast is read against its own sign-flip floor, which depends on its own
share of zero differences)."""

from __future__ import annotations

from typing import Mapping

import pandas as pd

from edufair_metrics.analysis.placebo import CHECK_ALPHA, placebo_summary
from edufair_metrics.report.tables import to_markdown

__all__ = ["BANNER", "cost_sentence", "exchangeability_banner", "placebo_markdown", "placebo_note"]

BANNER = "exchangeability check failed: verdicts of this run are not trusted"
TITLE = "Placebo replicate (exchangeability check)"


def _band(lo: float, hi: float, digits: int = 3, pct: bool = False) -> str:
    if lo != lo:
        return "—"
    return f"{lo:.1%}–{hi:.1%}" if pct else f"{lo:+.{digits}f} to {hi:+.{digits}f}"


def exchangeability_banner(check) -> str:
    """The bold lines for the top of summary.md, one per tutor whose check failed; "" for none."""
    if check is None or not len(check) or not check["failed"].any():
        return ""
    lines = []
    for row in check[check["failed"]].itertuples(index=False):
        lines.append(f"**{row.tutor}: {BANNER}.** Its placebo replicate (the same condition level run twice) differs "
                     f"more than exchangeable runs do: excess |r| {row.excess:+.3f} over its own floor (exchangeable: "
                     f"{_band(row.excess_null_low, row.excess_null_high)}), joint sign-flip p = {row.p_exch:.4f} < "
                     f"{row.alpha:.4g}. A drift between the runs, a cache or seed problem or a judge that labels the "
                     "replicate differently would do this; see \"Placebo replicate\" below.")
    return "\n\n".join(lines) + "\n\n"


def placebo_note(check) -> str:
    """One sentence for every table's note: each tutor's check (passed / failed); "" without a
    placebo replicate."""
    if check is None or not len(check):
        return ""
    parts = [f"{r.tutor}: {'FAILED' if r.failed else 'passed'} (excess |r| {r.excess:+.3f}, p = {r.p_exch:.3f})"
             for r in check.itertuples(index=False)]
    return ("Placebo exchangeability check (two runs of the same condition, read against their own sign-flip floor): "
            f"{'; '.join(parts)}; placebo.csv and summary.md.")


def _pct(part: float, whole: float) -> str:
    return f"+{part / whole:.0%}" if whole else "+?"


def cost_sentence(cost) -> str:
    """What the placebo replicate cost over the main run (``analysis.placebo.placebo_cost``: extra
    dialogues / the main run's dialogues, summed over the tutors), or, without one, what one
    replicate of the suggested level would add; "" without runs."""
    if cost is None or not len(cost):
        return ""
    main, paid = int(cost["main"].sum()), int(cost["placebo"].sum())
    if paid:
        return (f"Cost: the placebo replicate added {paid:,} dialogues, {_pct(paid, main)} over the main run's "
                f"{main:,}.")
    level = str(cost["level"].iloc[0])
    extra = int(cost["level_dialogues"].sum())
    cond, cond_n = str(cost["condition"].iloc[0]), int(cost["condition_dialogues"].sum())
    within = f"; {_pct(extra, cond_n)} of its {cond_n:,} {cond.capitalize()} dialogues" if cond and cond_n != main else ""
    return (f"one replicate of {level} adds {extra:,} dialogues, {_pct(extra, main)} over this run's {main:,}"
            f"{within}")


def placebo_markdown(floor, check, labels: Mapping[str, str] | None = None, cost=None) -> str:
    """The summary section: per tutor the check (excess over its own floor, mean p_perm, flag rate,
    each with its bootstrap CI and the band exchangeable replicates give), then per tutor, domain
    and metric kind the placebo |r| beside its own floor; ``cost``: ``Audit.placebo_cost`` (what the
    replicate cost, or what one would cost, over the main run)."""
    title = f"## {TITLE}"
    if floor.empty:
        level = str(cost["level"].iloc[0]) if cost is not None and len(cost) else "female"
        hint = cost_sentence(cost)
        return (f"{title}\n\nNo run has a placebo replicate. Run one level twice with independent tutor "
                f"sampling (`--metadata '{{\"edufair\": {{\"placebo\": {{\"level\": \"{level}\", \"replicates\": 2}}}}}}'`"
                f"{': ' + hint if hint else ''}): if the two runs are exchangeable, their contrast's excess |r| over "
                "its own sign-flip floor is ≈ 0, its p_perm uniform and its flag rate 5%.\n")
    lines = [title, ""]
    paid = cost_sentence(cost)
    if paid:
        lines += [paid, ""]
    if check is not None and len(check):
        rows = []
        for r in check.itertuples(index=False):
            rows.append({
                "tutor": r.tutor, "rows": r.rows, "questions": r.questions,
                "excess |r| [95% CI]": f"{r.excess:+.3f} [{r.excess_ci_low:+.3f}, {r.excess_ci_high:+.3f}]",
                "exchangeable (excess ≈ 0)": _band(r.excess_null_low, r.excess_null_high),
                "mean p_perm [95% CI]": f"{r.mean_p:.3f} [{r.mean_p_ci_low:.3f}, {r.mean_p_ci_high:.3f}]",
                "exchangeable (uniform: 0.5)": f"{r.mean_p_null_low:.3f}–{r.mean_p_null_high:.3f}",
                "flag rate [95% CI]": f"{r.flag_rate:.1%} [{r.flag_rate_ci_low:.1%}, {r.flag_rate_ci_high:.1%}]",
                "exchangeable (5%)": f"{r.flag_rate_null:.1%} ({_band(r.flag_rate_null_low, r.flag_rate_null_high, pct=True)})",
                "p_exch": r.p_exch, "check": "FAILED" if r.failed else "passed"})
        m = len(check)
        lines.append(to_markdown(pd.DataFrame(rows), "Exchangeability check per tutor",
                                 "The placebo replicate runs one condition level twice; if the two runs are "
                                 "exchangeable, swapping them on a question changes nothing, so one sign flip per "
                                 "question flips every metric of that question at once (joint sign flips, B as the "
                                 "bootstrap). excess |r|: the mean over the placebo contrasts (every metric × task) of "
                                 "|r| minus their own sign-flip floor, ≈ 0 when exchangeable; mean p_perm: the mean "
                                 "sign-flip p, 0.5 when uniform; flag rate: the share with p_perm < 0.05, 5% when "
                                 "exchangeable (less where ties and zero differences make small p impossible: the "
                                 "value in brackets is the mean over the joint flips). [95% CI]: ± 1.96 bootstrap SD "
                                 "(questions resampled, all metrics together); exchangeable: the central 95% of the "
                                 "joint flips. Decision: the check fails when p_exch (the share of joint flips with at "
                                 f"least the observed mean |r|) < {CHECK_ALPHA:g} / {m} (Bonferroni over the tutors "
                                 "with a replicate); the report then says, above everything else, that this run's "
                                 "verdicts are not trusted. The verdicts themselves are not changed."))
    summary = placebo_summary(floor)
    if len(summary):
        t = summary.assign(domain=summary["domain"].map(lambda d: (labels or {}).get(d, d)))
        lines.append(to_markdown(t.round(3), "Placebo contrasts per tutor, domain and metric kind",
                                 "placebo_abs_r: mean |r| between replicate 1 and replicate r of one condition level on "
                                 "the same questions; placebo_floor: their own sign-flip floor; placebo_excess: the "
                                 "difference (≈ 0 when exchangeable); flag_rate: share with p_decide < 0.05. Each is "
                                 "read against its own floor: the placebo |r| is not compared with the demographic "
                                 "|r̄|, whose floor depends on its own share of zero differences. placebo.csv has "
                                 "every metric."))
    return "\n".join(lines)
