"""The built wheel works like the editable checkout: build it, install it (with its dependencies)
into a fresh virtual environment outside the checkout, and use it from a folder that is not the
repository. Slow (about 2 minutes: a wheel build, a venv, ``lm_eval ls tasks``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from edufair_metrics.lmeval.plugin import METRICS

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 900) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def package_index_unreachable(env: dict[str, str], where: Path) -> str | None:
    """Why pip cannot fetch packages here (None when it can): building the wheel needs setuptools
    from an index (build isolation) and installing it needs its dependencies. Asked once with a
    small download (no retries), so an offline machine skips these tests with the reason instead
    of failing in the middle of a build."""
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--retries", "0", "--timeout", "15",
                           "-q", "-d", str(where), "setuptools"], env=env, capture_output=True, text=True, timeout=300)
    if proc.returncode == 0:
        return None
    last = [ln for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip()][-1:] or [f"exit {proc.returncode}"]
    return f"no package index reachable by pip (offline?): {last[0].strip()[:200]}"


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    root = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EDUFAIR_", "PYTHONPATH", "VIRTUAL_ENV"))}
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    offline = package_index_unreachable(env, root / "probe")
    if offline:
        pytest.skip(offline)
    dist = root / "dist"
    # Build from a copy of the source files: setuptools reuses a stale build/ folder in the checkout.
    src = root / "src"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info", "results",
                                                             "__pycache__", ".pytest_cache", "tests"))
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(src)], cwd=root, env=env)
    (wheel,) = dist.glob("edufair-*.whl")
    target = root / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(target)
    bin_dir = target / "bin"
    _run([str(bin_dir / "python"), "-m", "pip", "install", "-q", str(wheel)], cwd=root, env=env)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    work = root / "elsewhere"
    work.mkdir()
    return {"wheel": wheel, "bin": bin_dir, "env": env, "cwd": work, "site": target}


def test_wheel_carries_the_runtime_files(installed):
    names = set(zipfile.ZipFile(installed["wheel"]).namelist())
    for required in (
        "edufair_metrics/judge/defaults.yaml",
        "lm_eval_tasks/task.py",
        "lm_eval_tasks/edufair/_edufair_template_yaml",
        "lm_eval_tasks/edufair/edufair_explicit_physics.yaml",
        "edufair_metrics/protocol/data/protocol.yaml",
        "edufair_metrics/protocol/data/judge.yaml",
        "edufair_metrics/protocol/data/names.json",
        "edufair_metrics/protocol/data/names-LICENSE",
        "edufair_metrics/bank/data/physics.jsonl",
        "edufair_metrics/bank/data/chemistry.jsonl",
        "edufair_metrics/bank/data/mathematics.jsonl",
        "edufair_metrics/bank/data/manifest.json",
        "edufair_metrics/bank/data/LICENSE-SciQ.txt",
        "edufair_metrics/bank/data/LICENSE-GSM8K.txt",
        "edufair_metrics/report/html/assets/index.html",
        "edufair_metrics/report/html/assets/viewer.js",
        "edufair_metrics/report/html/assets/viewer.css",
    ):
        assert required in names, required
    assert not any(n.startswith("tests/") for n in names)


def test_tasks_path_points_into_the_installed_package(installed):
    out = _run([str(installed["bin"] / "edufair"), "tasks-path"], installed["cwd"], installed["env"]).strip()
    path = Path(out)
    assert path.is_dir() and str(installed["site"]) in str(path.resolve()), out
    assert str(REPO) not in out


def test_lm_eval_lists_the_tasks_from_the_wheel(installed):
    tasks = _run([str(installed["bin"] / "edufair"), "tasks-path"], installed["cwd"], installed["env"]).strip()
    out = _run([str(installed["bin"] / "lm_eval"), "ls", "tasks", "--include_path", tasks], installed["cwd"], installed["env"])
    for task in ("edufair_explicit_physics", "edufair_implicit_math", "edufair_opposite_chemistry"):
        assert task in out, task


def test_default_judge_settings_and_data_load_from_the_wheel(installed):
    code = (
        "import edufair_metrics, lm_eval_tasks\n"
        "from edufair_metrics.judge import load_judge_prompts\n"
        "from edufair_metrics.settings import load_judge_settings\n"
        "from edufair_metrics.bank import load_bank\n"
        "from edufair_metrics.protocol import load_protocol\n"
        "s = load_judge_settings()\n"
        "print(s.base_url, s.model)\n"
        "print(len(load_bank('physics')), len(load_bank('chemistry')), len(load_bank('mathematics')))\n"
        "print(bool(load_judge_prompts()['system']), bool(load_protocol()))\n"
        "print(edufair_metrics.__file__)\n"
    )
    lines = _run([str(installed["bin"] / "python"), "-c", code], installed["cwd"], installed["env"]).splitlines()
    assert lines[0] == "http://localhost:8000/v1 openai/gpt-oss-120b"
    counts = [int(x) for x in lines[1].split()]
    assert all(n > 0 for n in counts), counts
    assert lines[2] == "True True"
    assert str(installed["site"]) in lines[3]


def test_the_installed_wheel_declares_the_lm_eval_plugin_entry_points(installed):
    """The entry points lm-eval releases with plugin discovery read are in the installed metadata and
    resolve to the installed objects; lm-eval 0.4.13 (installed here) ignores them, so its task list
    without --include_path has no EduFair task."""
    code = (
        "import importlib.metadata as md, importlib.util\n"
        "eps = {g: {e.name: e for e in md.entry_points(group=g)} for g in ('lm_eval.tasks', 'lm_eval.metrics', 'lm_eval.aggregations')}\n"
        "print(eps['lm_eval.tasks']['edufair'].value)\n"
        "print(importlib.util.find_spec('lm_eval_tasks').submodule_search_locations[0])\n"
        "from edufair_metrics.lmeval import aggregations as agg\n"
        "print(eps['lm_eval.aggregations']['edufair_ped_abs_r'].load() is agg.agg_ped_abs_r)\n"
        "m = eps['lm_eval.metrics']['ped_abs_r'].load()\n"
        "from lm_eval.api.registry import get_metric_aggregation\n"
        "print(get_metric_aggregation('ped_abs_r') is agg.agg_ped_abs_r, len(eps['lm_eval.metrics']))\n"
    )
    lines = _run([str(installed["bin"] / "python"), "-c", code], installed["cwd"], installed["env"]).splitlines()
    assert lines[0] == "lm_eval_tasks" and str(installed["site"]) in lines[1]
    assert lines[2] == "True" and lines[3] == f"True {len(METRICS)}"
    out = _run([str(installed["bin"] / "lm_eval"), "ls", "tasks"], installed["cwd"], installed["env"])
    assert "edufair_explicit_physics" not in out
