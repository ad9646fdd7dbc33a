"""The metric catalogue (edufair_metrics/catalogue.py) is the one list of metrics: every other place
that names metrics reads it or equals it (the task YAML's metric_list, setup.cfg, the grid's kinds,
the tables, the leaderboard, the viewer), and a metric the catalogue cannot place is an error."""

from __future__ import annotations

import configparser
import dataclasses
import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from edufair_metrics import catalogue, records
from edufair_metrics.analysis.grid import metric_kind
from edufair_metrics.errors import EduFairError

REPO = Path(__file__).resolve().parents[1]


def _template():
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))
    return yaml.load((REPO / "lm_eval_tasks" / "edufair" / "_edufair_template_yaml").read_text(), Loader=Loader)


def test_records_metric_tuples_are_the_catalogues():
    assert records.PEDAGOGICAL_METRICS == catalogue.names("pedagogical")
    assert records.CONVERSATION_METRICS == catalogue.names("conversation")
    assert records.DETECTOR_METRICS == catalogue.names("detector")
    assert records.STUDENT_METRICS == catalogue.names("student")
    assert records.OUTCOME_METRICS == catalogue.names("outcome")
    assert records.JUDGE_FIELD_FOR_METRIC["step_scaffolded"] == "scaffolding_guidance"


def test_every_score_metric_has_the_grids_kind():
    for m in catalogue.CATALOGUE:
        if m.kind != "task":
            assert metric_kind(m.name) == m.kind, m.name


def test_the_task_yaml_metric_list_equals_the_catalogue():
    from edufair_metrics.lmeval.plugin import AGGREGATIONS, METRICS

    listed = [(m["metric"], m["aggregation"].rsplit(".", 1)[1], m["higher_is_better"]) for m in _template()["metric_list"]]
    expected = [(name, AGGREGATIONS[alias].__name__, higher) for name, (alias, higher) in catalogue.lmeval_metrics().items()]
    assert listed == expected
    assert METRICS == catalogue.lmeval_metrics()


def test_setup_cfg_declares_every_catalogue_metric_lm_eval_aggregates():
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg", encoding="utf-8")
    lines = [ln.strip() for ln in cfg["options.entry_points"]["lm_eval.metrics"].splitlines() if ln.strip()]
    declared = [ln.split("=", 1)[0].strip() for ln in lines]
    assert declared == list(catalogue.lmeval_metrics())


def test_tables_and_leaderboard_read_the_catalogue():
    from edufair_metrics.report import leaderboard, tables, write

    scores = [m for m in catalogue.CATALOGUE if m.kind != "task"]
    assert tables.SHORT_NAMES == {m.name: m.short for m in scores}
    assert tables.DIRECTION == {m.name: m.arrow for m in scores}
    grouped = [name for _, ms in tables.FUNCTION_GROUPS for name in ms]
    assert grouped == list(records.PEDAGOGICAL_METRICS + records.CONVERSATION_METRICS)
    # one list of headline kinds: the summary's and the leaderboard's (the leaderboard lacked outcome)
    assert leaderboard.KINDS == write.HEADLINE_KINDS == catalogue.headline_kinds()
    assert ("outcome", "out") in leaderboard.KINDS


def test_the_viewer_names_metrics_only_through_the_page_data():
    js = (REPO / "edufair_metrics" / "report" / "html" / "assets" / "viewer.js").read_text(encoding="utf-8")
    for m in catalogue.CATALOGUE:
        if m.kind != "task":
            assert f'"{m.display}"' not in js, m.name
    for _kind, (_short, title) in catalogue.KINDS.items():
        assert f'"{title}"' not in js


def test_a_metric_without_a_function_group_is_an_error():
    bad = dataclasses.replace(catalogue.metric("actionability"), name="new_metric", group=None)
    with pytest.raises(EduFairError, match="new_metric has no function group"):
        catalogue.check_catalogue(catalogue.CATALOGUE + (bad,))
    with pytest.raises(EduFairError, match="listed twice"):
        catalogue.check_catalogue(catalogue.CATALOGUE + (catalogue.metric("actionability"),))
    with pytest.raises(EduFairError, match="not in the metric catalogue"):
        catalogue.metric("no_such_metric")


def test_table6_refuses_a_pedagogical_metric_it_cannot_place():
    """Table 6 used to drop a pedagogical metric missing from its function groups without a word."""
    from edufair_metrics.report.tables import table6_metric

    rows = []
    for metric in (*records.PEDAGOGICAL_METRICS, "new_metric"):
        rows.append({"tutor": "t", "domain": "physics", "condition": "explicit", "dimension": "gender",
                     "contrast": "Gender", "metric": metric, "metric_kind": "pedagogical", "headline": True,
                     "abs_r": 0.1, "n_pairs_min": 20, "sufficient": True, "null_abs_r": math.nan})
    units = pd.DataFrame(rows)
    with pytest.raises(EduFairError, match="new_metric"):
        table6_metric(units)
    assert table6_metric(units[units["metric"] != "new_metric"]) is not None
