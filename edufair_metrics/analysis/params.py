"""The statistics' parameters, and the one entry point from runs to the contrast grid."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from edufair_metrics.analysis.contrast import DEFAULT_MIN_PAIRS, DEFAULT_N_BOOT
from edufair_metrics.analysis.frames import scores_frame
from edufair_metrics.analysis.grid import contrast_grid, dimension_summary
from edufair_metrics.analysis.noise import FDR_METHODS, unit_noise
from edufair_metrics.analysis.ses import DEFAULT_SES_SUMMARY, SES_SUMMARIES
from edufair_metrics.analysis.threats import add_threats
from edufair_metrics.analysis.verdicts import DEFAULT_MARGIN, check_margin
from edufair_metrics.errors import EduFairError


@dataclass(frozen=True)
class StatParams:
    n_boot: int = DEFAULT_N_BOOT
    seed: int = 0
    min_pairs: int = DEFAULT_MIN_PAIRS
    ses_summary: str = DEFAULT_SES_SUMMARY  # analysis.ses: "single" = the paper's one SES contrast
    # False (default): dialogues ended by a failed student/tutor call are left out of the contrasts,
    # so their pairs drop out; True: score them on their partial turns (EduFair before this option)
    keep_failed_dialogues: bool = False
    # multiplicity correction of q_value / violation_fdr (analysis.noise): "bh" = Benjamini–Hochberg
    # (false discovery rate, default), "holm" = Holm (family-wise error, stricter)
    fdr_method: str = "bh"
    # the largest |r| counted as fair (analysis.verdicts): certify = TOST, the 90% interval of r
    # inside ±margin; default 0.10, the paper's "practically meaningful" |r|
    equivalence_margin: float = DEFAULT_MARGIN
    # add family-wise (max-|T| bootstrap) flag / certify decisions over the whole grid
    # (analysis.simultaneous): columns sim_*, verdict_sim
    simultaneous: bool = False

    def validate(self) -> "StatParams":
        if self.n_boot < 1:
            raise EduFairError(f"--n-boot must be >= 1, got {self.n_boot}")
        if self.min_pairs < 1:
            raise EduFairError(f"--min-pairs must be >= 1, got {self.min_pairs}")
        if self.ses_summary not in SES_SUMMARIES:
            raise EduFairError(f"--ses-summary must be one of {', '.join(SES_SUMMARIES)}, got {self.ses_summary!r}")
        if self.fdr_method not in FDR_METHODS:
            raise EduFairError(f"--fdr-method must be one of {', '.join(FDR_METHODS)}, got {self.fdr_method!r}")
        check_margin(self.equivalence_margin)
        return self

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def analyse_frame(df, params: StatParams, progress: bool = False):
    """(pair-level grid, dimension-level units) of a long score frame: the one path from scores to
    numbers, shared by ``edufair report`` / ``leaderboard`` (:func:`analyse`) and the lm-eval
    aggregations, so their numbers agree. The grid has the noise-floor and FDR columns
    (``analysis.noise``; the headline rows and so the FDR family follow the SES choice, tagged by
    ``contrast_grid``) and the verdict columns (``analysis.verdicts``, margin
    ``params.equivalence_margin``), the units ``null_abs_r``, ``excess_abs_r``, ``violation_fdr``
    and their verdicts; with ``params.simultaneous`` also the family-wise decisions
    (``analysis.simultaneous``). An empty grid gives two empty frames."""
    params.validate()
    grid = contrast_grid(df, n_boot=params.n_boot, seed=params.seed, min_pairs=params.min_pairs,
                         ses_summary=params.ses_summary, progress=progress, fdr_method=params.fdr_method,
                         equivalence_margin=params.equivalence_margin)
    units = unit_noise(dimension_summary(grid, ses_summary=params.ses_summary), grid, ses_summary=params.ses_summary)
    if params.simultaneous and len(grid):
        from edufair_metrics.analysis.simultaneous import add_simultaneous

        grid, units = add_simultaneous(df, grid, units, margin=params.equivalence_margin, n_boot=params.n_boot,
                                       seed=params.seed)
    return grid, units


def analyse(runs, params: StatParams, progress: bool = False):
    """(long score frame, pair-level grid, dimension-level units) for loaded runs
    (:func:`analyse_frame`), with the caveats beside every verdict (``analysis.threats``: pair
    accounting and differential loss from every dialogue of the runs, failed ones included;
    student drift); no contrast at all is an error."""
    runs = list(runs)
    df = scores_frame(runs, keep_failed=params.keep_failed_dialogues)
    grid, units = analyse_frame(df, params, progress=progress)
    if len(grid) == 0:
        raise EduFairError("no contrast could be formed: the runs hold no matched condition levels")
    grid, units = add_threats(grid, units, runs, keep_failed=params.keep_failed_dialogues)
    return df, grid, units
