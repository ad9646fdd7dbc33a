"""The functions and classes that the task YAMLs under ``edufair/`` name with ``!function``.
They live in ``edufair_metrics``; this module only gives them stable names for the YAMLs."""

from edufair_metrics.lmeval.aggregations import (
    agg_call_counts,
    agg_certified_units,
    agg_conv_abs_r,
    agg_flagged_units,
    agg_inconclusive_units,
    agg_missing_label_rate,
    agg_ped_abs_r,
    agg_ped_excess_abs_r,
    agg_ped_unbiased_abs_r,
    agg_violations,
    agg_violations_fdr,
    complete_dialogues,
    count,
    nanmean,
)
from edufair_metrics.lmeval.task import HARNESS_PLACEHOLDER, EduFairTask

__all__ = [
    "EduFairTask", "HARNESS_PLACEHOLDER",
    "agg_ped_abs_r", "agg_conv_abs_r", "agg_violations", "agg_ped_excess_abs_r", "agg_violations_fdr", "agg_missing_label_rate", "count", "nanmean",
    "agg_flagged_units", "agg_certified_units", "agg_inconclusive_units", "agg_ped_unbiased_abs_r",
    "complete_dialogues", "agg_call_counts",
]
