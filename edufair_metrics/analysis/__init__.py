"""Paired statistics: Wilcoxon/rank-biserial contrasts with bootstrap CIs, the contrast grid, and the
baseline-vs-candidate comparison (lm-eval's aggregations of them live in ``edufair_metrics.lmeval``).

Modules, by what they hold:

* ``contrast``: one paired contrast (:func:`paired_contrast`, :func:`friedman_contrast`, rank-biserial r
  and its bootstrap) and its definitions;
* ``engine``: the batched numbers of many contrasts (``paired_rows``: Pratt ranks, Wilcoxon p,
  bootstrap counts, the sign-flip null) and the shared numeric conventions (``round_diffs``,
  ``percentile_ci``);
* ``cells``: the one pairing: question × level matrices of the score frame and ``pair_differences``;
* ``grid``: :func:`contrast_grid`, :func:`dimension_summary`, :func:`headline`;
* ``noise`` (noise floor, FDR), ``power``, ``ranks`` (rank intervals), ``ses`` (the SES headline
  choice), ``compare`` (:func:`compare_frames`, the CI gate), ``params`` (``StatParams``, ``analyse``),
  ``placebo``, ``agreement`` / ``human_agreement`` / ``judge_validity``, ``frames``;
* ``verdicts`` (flag / certify / inconclusive / insufficient per row, unit and headline; the effect
  size unbiased at any n), ``turns`` (the turn-level test of pedagogical rows), ``simultaneous``
  (max-|T| bootstrap bounds over the whole grid).

The names below are the package's stable public API (``from edufair_metrics.analysis import
contrast_grid``). They are loaded on first use, so importing the package (or any one of its
modules) imports no other module of it, nor pandas or scipy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# public name -> module of the package that defines it
_EXPORTS = {
    "PairedContrast": "contrast",
    "FriedmanContrast": "contrast",
    "paired_contrast": "contrast",
    "friedman_contrast": "contrast",
    "rank_biserial": "contrast",
    "bootstrap_rank_biserial": "contrast",
    "MEANINGFUL_R": "contrast",
    "DEFAULT_MIN_PAIRS": "contrast",
    "DEFAULT_N_BOOT": "contrast",
    "CellMatrix": "cells",
    "cell_matrices": "cells",
    "pair_differences": "cells",
    "GRID_COLUMNS": "grid",
    "LONG_COLUMNS": "grid",
    "contrast_grid": "grid",
    "dimension_summary": "grid",
    "headline": "grid",
    "metric_kind": "grid",
    "unit_noise": "noise",
    "noise_headline": "noise",
    "power_table": "power",
    "rank_intervals": "ranks",
    "SES_SUMMARIES": "ses",
    "CompareResult": "compare",
    "compare_frames": "compare",
    "StatParams": "params",
    "DEFAULT_MARGIN": "verdicts",
    "VERDICTS": "verdicts",
    "verdict_headline": "verdicts",
    "simultaneous_bounds": "simultaneous",
    "analyse": "params",
    "analyse_frame": "params",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # for type checkers and IDEs; at run time the names load lazily (__getattr__)
    from edufair_metrics.analysis.cells import CellMatrix, cell_matrices, pair_differences
    from edufair_metrics.analysis.compare import CompareResult, compare_frames
    from edufair_metrics.analysis.contrast import (
        DEFAULT_MIN_PAIRS,
        DEFAULT_N_BOOT,
        MEANINGFUL_R,
        FriedmanContrast,
        PairedContrast,
        bootstrap_rank_biserial,
        friedman_contrast,
        paired_contrast,
        rank_biserial,
    )
    from edufair_metrics.analysis.grid import (
        GRID_COLUMNS,
        LONG_COLUMNS,
        contrast_grid,
        dimension_summary,
        headline,
        metric_kind,
    )
    from edufair_metrics.analysis.noise import noise_headline, unit_noise
    from edufair_metrics.analysis.params import StatParams, analyse, analyse_frame
    from edufair_metrics.analysis.power import power_table
    from edufair_metrics.analysis.ranks import rank_intervals
    from edufair_metrics.analysis.ses import SES_SUMMARIES
    from edufair_metrics.analysis.simultaneous import simultaneous_bounds
    from edufair_metrics.analysis.verdicts import DEFAULT_MARGIN, VERDICTS, verdict_headline


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:  # AttributeError lets ``from edufair_metrics.analysis import <submodule>`` import it
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
