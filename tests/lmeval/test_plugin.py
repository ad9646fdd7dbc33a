"""EduFair as an lm-eval plugin: the entry points setup.cfg declares (``lm_eval.tasks`` in the form of
lm-eval's open PR #4015; ``lm_eval.metrics`` / ``lm_eval.aggregations`` as merged in PR #4014) are in
the installed metadata and resolve to the right objects, and lm-eval 0.4.13, which reads none of
them, still runs EduFair through ``--include_path`` (the other tests do that throughout). The
installed wheel's metadata is checked in tests/wheel/test_wheel.py."""

from __future__ import annotations

import configparser
import importlib
import importlib.metadata as md
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from edufair_metrics.lmeval import plugin_discovery
from edufair_metrics.lmeval.plugin import AGGREGATIONS, METRICS, entry_points

REPO = Path(__file__).resolve().parents[2]
GROUPS = ("lm_eval.tasks", "lm_eval.metrics", "lm_eval.aggregations")


@pytest.fixture(scope="module")
def metadata(tmp_path_factory):
    """The distribution metadata setuptools makes from setup.cfg (what ``pip install -e .`` installs),
    built into a folder of its own: the shared environment's install is left alone."""
    base = tmp_path_factory.mktemp("egg")
    subprocess.run([sys.executable, "-c", "from setuptools import setup; setup()", "-q", "egg_info", "--egg-base", str(base)],
                   cwd=REPO, check=True, capture_output=True)
    (info,) = base.glob("*.egg-info")
    return base, md.PathDistribution(info)


def test_setup_cfg_declares_what_the_plugin_module_lists():
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg", encoding="utf-8")
    declared = {}
    for group in GROUPS:
        lines = [ln.strip() for ln in cfg["options.entry_points"][group].splitlines() if ln.strip()]
        declared[group] = dict(tuple(x.strip() for x in ln.split("=", 1)) for ln in lines)
    assert declared == entry_points()


def test_metrics_follow_the_task_yaml():
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))
    template = yaml.load((REPO / "lm_eval_tasks" / "edufair" / "_edufair_template_yaml").read_text(), Loader=Loader)
    yaml_metrics = {m["metric"]: (m["aggregation"].rsplit(".", 1)[1], m["higher_is_better"]) for m in template["metric_list"]}
    assert list(yaml_metrics) == list(METRICS)
    for name, (alias, higher) in METRICS.items():
        assert AGGREGATIONS[alias].__name__ == yaml_metrics[name][0] and higher == yaml_metrics[name][1], name


def test_installed_metadata_declares_the_entry_points_and_they_resolve(metadata, monkeypatch):
    base, dist = metadata
    assert {ep.group for ep in dist.entry_points} >= set(GROUPS)
    monkeypatch.syspath_prepend(str(base))  # as if installed: entry_points() reads this metadata first
    found = {g: {ep.name: ep for ep in md.entry_points(group=g)} for g in GROUPS}
    assert {g: {n: ep.value for n, ep in eps.items()} for g, eps in found.items()} == entry_points()
    from edufair_metrics.lmeval import aggregations as agg

    assert found["lm_eval.aggregations"]["edufair_ped_abs_r"].load() is agg.agg_ped_abs_r
    plugin = importlib.import_module("edufair_metrics.lmeval.plugin")
    for name in METRICS:
        fn = found["lm_eval.metrics"][name].load()
        # lm-eval upgrades its placeholder when module:name of the decorated function equals the value
        assert fn is getattr(plugin, name) and f"{fn.__module__}:{fn.__name__}" == found["lm_eval.metrics"][name].value
    # importing the plugin module registered them in lm-eval's registry, with direction and aggregation
    from lm_eval.api.registry import get_aggregation, get_metric, get_metric_aggregation, is_higher_better

    assert get_metric("ped_abs_r") is plugin.ped_abs_r and get_metric_aggregation("ped_abs_r") is agg.agg_ped_abs_r
    assert is_higher_better("ped_abs_r") is False and is_higher_better("mistake_recognize") is True
    assert get_aggregation("edufair_nanmean") is agg.nanmean
    # lm_eval.tasks: a package, resolved to its folder, which holds the task YAMLs (searched recursively)
    (tasks,) = found["lm_eval.tasks"].values()
    folder = Path(list(importlib.util.find_spec(tasks.value).submodule_search_locations)[0])
    assert (folder / "edufair" / "edufair_explicit_physics.yaml").is_file()
    from lm_eval.tasks import TaskManager

    assert "edufair_explicit_physics" in TaskManager(include_path=str(folder), include_defaults=False).all_tasks


def test_lm_eval_0_4_13_ignores_the_entry_points(metadata, monkeypatch):
    base, _ = metadata
    monkeypatch.syspath_prepend(str(base))
    from lm_eval.tasks import TaskManager

    assert plugin_discovery() == {"lm_eval.tasks": False, "lm_eval.metrics": False, "lm_eval.aggregations": False}
    assert not [t for t in TaskManager(include_defaults=False).all_tasks if t.startswith("edufair")]
    from lm_eval_tasks import tasks_path

    assert "edufair_explicit_physics" in TaskManager(include_path=str(tasks_path()), include_defaults=False).all_tasks


def test_package_provenance_names_the_version_and_the_declared_entries(metadata, monkeypatch):
    from edufair_metrics import __version__
    from edufair_metrics.provenance import package_provenance

    base, _ = metadata
    monkeypatch.syspath_prepend(str(base))
    prov = package_provenance()
    assert prov["version"] == __version__ and prov["distribution"] == __version__
    assert prov["entry_points"]["lm_eval.tasks"] == {"edufair": "lm_eval_tasks"}
    assert set(prov["entry_points"]["lm_eval.metrics"]) == set(METRICS)
