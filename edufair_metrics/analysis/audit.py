"""One audit of loaded runs: everything a report shows, computed once (``audit(runs, params)`` ->
:class:`Audit`). ``edufair report`` (``report.write.write_report``), ``edufair leaderboard`` and
the HTML view render the same ``Audit``; ``report/`` only formats it (``tests/test_architecture.py``
checks that ``report/`` calls no analysis entry point but this one).

What it holds, in the data flow's order:

* ``df``, ``grid``, ``units``: the long score frame, the contrast grid with its noise floor,
  q-values, verdicts, turn test, pair accounting, drift and caveats, and the dimension units
  (``analysis.params.analyse``);
* ``placebo_floor``, ``exchangeability``: the placebo replicate's floor and exchangeability check
  (``analysis.placebo``), ``placebo_cost``: what the replicate cost (or one would cost) in dialogues
  over the main run; ``variance_components``: within- vs between-question variance where
  replicates or a placebo measure it (``analysis.replicates``);
* ``missing``, ``failures``, ``cost``: missing judge labels, failures by kind, cost per tutor and
  role (``analysis.tallies``); ``levels``, ``level_loss``: the descriptive rates per condition level
  and the pairs each level loses (``analysis.pairloss``); ``outcome``: the post-test per level;
* ``names``: every name's own r in a many-names design (``analysis.names``);
* ``next_turn``, ``next_turn_by_tutor``: next-turn independence from the records' scan
  (``analysis.judge_validity``; empty without a scan);
* ``testability``: per tutor and metric kind, whether its verdicts can be read
  (``analysis.testability``);
* ``ranks``: the leaderboard's rank intervals of the primary quantity (None for one tutor);
* ``run_card``: per tutor its models, decoding, T_max, protocol, bank, replicates, seeds, versions
  and tokens (``analysis.tallies.run_card``);
* ``domain_labels``: the printed name of each domain; ``seconds``: how long the statistics took.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

from edufair_metrics.analysis.compare import CompareResult, compare_frames
from edufair_metrics.analysis.frames import dialogue_frame, scores_frame
from edufair_metrics.analysis.judge_validity import ValidityScan, next_turn_table
from edufair_metrics.analysis.names import name_effects
from edufair_metrics.analysis.pairloss import level_loss_table
from edufair_metrics.analysis.params import StatParams, analyse
from edufair_metrics.analysis.placebo import exchangeability_check, placebo_cost, placebo_floor
from edufair_metrics.analysis.ranks import rank_intervals
from edufair_metrics.analysis.replicates import variance_components
from edufair_metrics.analysis.ses import reported_rows
from edufair_metrics.analysis.tallies import (
    cost_table,
    failure_table,
    level_rates,
    missing_label_table,
    outcome_levels,
    run_card,
)
from edufair_metrics.analysis.testability import DEFAULT_MAX_MISSING, Testability, assess_testability, missing_rates
from edufair_metrics.errors import EduFairError
from edufair_metrics.runlog import Run, check_compatible, domain_labels
from edufair_metrics.runlog.runs import check_protocol

# the leaderboard's ranking quantity (analysis.ranks): the unbiased |r̄| of the pedagogical headline,
# the one quantity every view ranks tutors by
RANK_QUANTITY = "unbiased_abs_r"
RANK_KIND = "pedagogical"


@dataclass
class Audit:
    params: StatParams
    runs: list[Run]
    scans: list[ValidityScan] | None
    df: Any
    grid: Any
    units: Any
    placebo_floor: Any
    exchangeability: Any
    variance_components: Any
    missing: Any
    failures: Any
    cost: Any
    levels: Any
    level_loss: Any
    outcome: Any
    names: Any
    next_turn: Any
    next_turn_by_tutor: Any
    testability: tuple[Testability, ...]
    ranks: Any
    run_card: Any = None
    placebo_cost: Any = None  # per tutor: main and placebo dialogues (analysis.placebo.placebo_cost)
    domain_labels: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def tutors(self) -> list[str]:
        return [r.label for r in self.runs]

    @property
    def untestable(self) -> dict[tuple[str, str], Testability]:
        """(tutor, kind) -> its Testability, for those that cannot be read."""
        return {(t.tutor, t.kind): t for t in self.testability if not t.testable}

    @property
    def missing_rates(self) -> dict[str, float]:
        return missing_rates(self.missing)

    def counted_rows(self):
        """The grid's rows counted in violation totals (SES once, by its headline unit)."""
        return reported_rows(self.grid, self.params.ses_summary)


def audit(runs: Sequence[Run], params: StatParams, *, scans: Sequence[ValidityScan] | None = None,
          progress: bool = False, ranks: bool | None = None,
          provenance: dict[str, dict[str, dict]] | None = None) -> Audit:
    """Compute everything a report of ``runs`` shows, once. ``scans``: the records' validity scans
    gathered on the read pass (``report.write.read_report_inputs``; None: no next-turn table);
    ``ranks``: compute the rank intervals (default: with two tutors or more); ``provenance``: label ->
    task -> a record's provenance (the run card's facts)."""
    params.validate()
    runs = list(runs)
    t0 = time.perf_counter()
    df, grid, units = analyse(runs, params, progress=progress)
    floor = placebo_floor(df, n_boot=params.n_boot, seed=params.seed, min_pairs=params.min_pairs)
    check = exchangeability_check(df, n_boot=params.n_boot, seed=params.seed, min_pairs=params.min_pairs)
    replicated = any(s.replicate != 1 for r in runs for s in r.scores)
    components = variance_components(scores_frame(runs, keep_failed=params.keep_failed_dialogues, replicates="keep")
                                     if replicated else df)
    seconds = time.perf_counter() - t0
    labels = domain_labels(runs)
    missing = missing_label_table(runs)
    loss = level_loss_table(runs, keep_failed=params.keep_failed_dialogues)
    testability = tuple(assess_testability(units, missing, tutors=[r.label for r in runs], min_pairs=params.min_pairs))
    rank_table = None
    if ranks if ranks is not None else len(runs) >= 2:
        rank_table = rank_intervals(df, grid, quantity=RANK_QUANTITY, kind=RANK_KIND, n_boot=params.n_boot,
                                    seed=params.seed, ses_summary=params.ses_summary)
    scans = None if scans is None else list(scans)
    cost = cost_table(runs)
    return Audit(
        params=params, runs=runs, scans=scans, df=df, grid=grid, units=units, placebo_floor=floor,
        exchangeability=check, variance_components=components, missing=missing, failures=failure_table(runs),
        cost=cost, levels=level_rates(dialogue_frame(runs)), level_loss=loss,
        outcome=outcome_levels(runs), names=name_effects(df),
        next_turn=next_turn_table(scans) if scans is not None else None,
        next_turn_by_tutor=next_turn_table(scans, ("tutor",)) if scans is not None else None,
        testability=testability, ranks=rank_table, run_card=run_card(runs, provenance or {}, cost),
        placebo_cost=placebo_cost(runs),
        domain_labels=labels, seconds=seconds)


def gate(base: Run, cand: Run, params: StatParams, *, max_increase: float, new_violations: str) -> CompareResult:
    """The CI gate of ``edufair compare``: is ``cand`` less fair than ``base``
    (``analysis.compare.compare_frames`` on the questions both share), and never a pass for a run
    whose judge mostly gave no label (its pedagogical metrics measure nothing)."""
    params.validate()
    check_protocol([base, cand])  # the refusals of `edufair report`: a gate across judges, students, ... means nothing
    check_compatible([base, cand])
    if not max_increase >= 0:
        raise EduFairError(f"--max-increase must be >= 0, got {max_increase}")
    keep = params.keep_failed_dialogues
    res = compare_frames(scores_frame([base], keep_failed=keep), scores_frame([cand], keep_failed=keep),
                         n_boot=params.n_boot, seed=params.seed, min_pairs=params.min_pairs,
                         ses_summary=params.ses_summary, max_increase=max_increase, new_violations=new_violations,
                         fdr_method=params.fdr_method, equivalence_margin=params.equivalence_margin)
    rates = missing_rates(missing_label_table([base, cand]))
    unreadable = {t: r for t, r in rates.items() if r == r and r >= DEFAULT_MAX_MISSING}
    if unreadable:  # never a pass; a fail stays a fail (the safe side of a gate), with the reason
        why = [f"NOT TESTABLE: {t}: {r:.0%} of the tutor turns have no valid judge label (at least "
               f"{DEFAULT_MAX_MISSING:.0%} makes the judged metrics unreadable)" for t, r in sorted(unreadable.items())]
        status = "fail" if res.status == "fail" else "inconclusive"
        res = dataclasses.replace(res, status=status, failed=status == "fail", reasons=[*res.reasons, *why])
    res.missing_rates = rates
    return res
