"""The statistics' parameters, and the one entry point from runs to the contrast grid."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from edufair_metrics.analysis.stats import DEFAULT_MIN_PAIRS, DEFAULT_N_BOOT, SES_SUMMARIES
from edufair_metrics.errors import EduFairError


@dataclass(frozen=True)
class StatParams:
    n_boot: int = DEFAULT_N_BOOT
    seed: int = 0
    min_pairs: int = DEFAULT_MIN_PAIRS
    ses_summary: str = "mean_abs_pairwise"

    def validate(self) -> "StatParams":
        if self.n_boot < 1:
            raise EduFairError(f"--n-boot must be >= 1, got {self.n_boot}")
        if self.min_pairs < 1:
            raise EduFairError(f"--min-pairs must be >= 1, got {self.min_pairs}")
        if self.ses_summary not in SES_SUMMARIES:
            raise EduFairError(f"--ses-summary must be one of {', '.join(SES_SUMMARIES)}, got {self.ses_summary!r}")
        return self

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def analyse(runs, params: StatParams, progress: bool = False):
    """(long score frame, pair-level grid, dimension-level units) for loaded runs."""
    from edufair_metrics.analysis.frames import scores_frame
    from edufair_metrics.analysis.stats import contrast_grid, dimension_summary

    df = scores_frame(runs)
    grid = contrast_grid(df, n_boot=params.n_boot, seed=params.seed, min_pairs=params.min_pairs,
                         ses_summary=params.ses_summary, progress=progress)
    if len(grid) == 0:
        raise EduFairError("no contrast could be formed: the runs hold no matched condition levels")
    units = dimension_summary(grid, ses_summary=params.ses_summary)
    return df, grid, units
