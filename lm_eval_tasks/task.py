"""The functions and classes that the task YAMLs under ``edufair/`` name with ``!function``.
They live in ``edufair_metrics``; this module only gives them stable names for the YAMLs."""

from edufair_metrics.analysis.aggregations import (
    agg_conv_abs_r,
    agg_missing_label_rate,
    agg_ped_abs_r,
    agg_ped_excess_abs_r,
    agg_violations,
    agg_violations_fdr,
    complete_dialogues,
    count,
    nanmean,
)
from edufair_metrics.lmeval.task import HARNESS_PLACEHOLDER, EduFairTask, JudgeFilter, agg_call_counts, process_results

__all__ = [
    "EduFairTask", "JudgeFilter", "process_results", "HARNESS_PLACEHOLDER",
    "agg_ped_abs_r", "agg_conv_abs_r", "agg_violations", "agg_ped_excess_abs_r", "agg_violations_fdr", "agg_missing_label_rate", "count", "nanmean",
    "complete_dialogues", "agg_call_counts",
]
