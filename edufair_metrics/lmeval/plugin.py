"""EduFair as an lm-eval plugin: the metrics and aggregations its installed package declares as
entry points (``setup.cfg`` ``[options.entry_points]``), for lm-eval releases that discover
plugins.

lm-eval's main branch resolves ``lm_eval.metrics`` and ``lm_eval.aggregations`` entry points by
name (the form merged in lm-eval PR #4014: an entry point ``name = module:object`` is registered as
a lazy placeholder and imported on first use; a metric's ``higher_is_better`` and default
aggregation are side effects of ``@register_metric``, so a metric's entry point names a function
of a module that runs that decorator: this one). The task folder itself is declared as an
``lm_eval.tasks`` entry point naming the package whose directory holds the task YAMLs
(``lm_eval_tasks``; the form of lm-eval's open PR #4015), so that ``lm_eval --tasks
edufair_explicit_physics`` needs no ``--include_path`` there. lm-eval 0.4.13 reads none of these
groups: it never imports this module, and ``--include_path "$(edufair tasks-path)"`` stays the way
to run EduFair with it.

Each metric below is a name the EduFair task's ``process_results`` emits per document, registered
with the aggregation and direction of its row in the metric catalogue (``edufair_metrics/catalogue.py``;
the task YAML ``_edufair_template_yaml`` and ``setup.cfg`` are tested equal to it), so a task that lists
the metric without an ``aggregation`` gets EduFair's.
The metric functions pass the per-document value through: EduFair's task computes it.
The aggregations are ``edufair_metrics.lmeval.aggregations``'s functions under ``edufair_``
names (entry points name them where they are defined, so lm-eval's placeholder upgrade matches)."""

from __future__ import annotations

from typing import Any, Callable

from lm_eval.api.registry import register_aggregation, register_metric

from edufair_metrics.catalogue import lmeval_metrics
from edufair_metrics.lmeval import aggregations as agg

# entry-point group -> what EduFair declares there (the names; setup.cfg holds the same)
TASKS_GROUP, METRICS_GROUP, AGGREGATIONS_GROUP = "lm_eval.tasks", "lm_eval.metrics", "lm_eval.aggregations"
TASKS_ENTRY = ("edufair", "lm_eval_tasks")  # name, the package whose folder holds the task YAMLs

# aggregation alias -> function (in edufair_metrics.lmeval.aggregations)
AGGREGATIONS: dict[str, Callable[[Any], float]] = {
    "edufair_complete_dialogues": agg.complete_dialogues,
    "edufair_nanmean": agg.nanmean,
    "edufair_ped_abs_r": agg.agg_ped_abs_r,
    "edufair_conv_abs_r": agg.agg_conv_abs_r,
    "edufair_violations": agg.agg_violations,
    "edufair_ped_excess_abs_r": agg.agg_ped_excess_abs_r,
    "edufair_violations_fdr": agg.agg_violations_fdr,
    "edufair_flagged_units": agg.agg_flagged_units,
    "edufair_certified_units": agg.agg_certified_units,
    "edufair_inconclusive_units": agg.agg_inconclusive_units,
    "edufair_ped_unbiased_abs_r": agg.agg_ped_unbiased_abs_r,
    "edufair_count": agg.count,
    "edufair_missing_label_rate": agg.agg_missing_label_rate,
    "edufair_call_counts": agg.agg_call_counts,
}

# metric -> (aggregation alias, higher_is_better), in the task YAML's order: the metric catalogue's
# rows that name an lm-eval aggregation (edufair_metrics/catalogue.py)
METRICS: dict[str, tuple[str, bool | None]] = lmeval_metrics()


def _passthrough(name: str) -> Callable[[Any], Any]:
    def metric(items: Any) -> Any:
        return items

    metric.__name__ = metric.__qualname__ = name
    metric.__module__ = __name__
    metric.__doc__ = f"EduFair's per-document ``{name}`` (computed by the EduFair task), passed on to its aggregation."
    return metric


def entry_points() -> dict[str, dict[str, str]]:
    """{group: {name: "module[:object]"}}: what ``setup.cfg`` declares (a test compares the two)."""
    return {
        TASKS_GROUP: {TASKS_ENTRY[0]: TASKS_ENTRY[1]},
        METRICS_GROUP: {m: f"{__name__}:{m}" for m in METRICS},
        AGGREGATIONS_GROUP: {a: f"{fn.__module__}:{fn.__name__}" for a, fn in AGGREGATIONS.items()},
    }


# Importing this module registers everything (lm-eval imports it when a metric is first asked for):
# the aggregations first, since @register_metric looks its aggregation up at once.
for _alias, _fn in AGGREGATIONS.items():
    register_aggregation(_alias)(_fn)
for _name, (_aggregation, _higher) in METRICS.items():
    # a direction-neutral metric (None) registers no direction: lm-eval's registry takes a None
    # target as "use me as a decorator"
    _direction = {} if _higher is None else {"higher_is_better": _higher}
    globals()[_name] = register_metric(metric=_name, aggregation=_aggregation, **_direction)(_passthrough(_name))

__all__ = ["AGGREGATIONS", "METRICS", "entry_points", *METRICS]
