"""The one place where EduFair relies on lm-evaluation-harness internals (beyond its documented
``LM``/``Task``/``Filter`` API). Each assumption has a contract test in ``tests/lmeval/`` that fails
loudly when an lm-eval upgrade breaks it."""

from __future__ import annotations

import importlib.util
import logging
import sys

import yaml
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from edufair_metrics.errors import EduFairError

# lm-eval modules that draw a progress bar inside every generate_until call. TemplateAPI ignores
# its own ``disable_tqdm`` argument for its "Requesting API" bars, and CachingLM draws "Checking
# cached requests": with one call per dialogue turn these stack up into dozens of bars.
_BAR_MODULES = (
    "lm_eval.models.api_models",
    "lm_eval.api.model",
    "lm_eval.models.huggingface",
    "lm_eval.models.vllm_causallms",
)
_BAR_NAMES = ("tqdm", "tqdm_asyncio")


def _silenced(bar_cls):
    class Quiet(bar_cls):  # type: ignore[misc, valid-type]
        def __init__(self, *args, **kwargs):
            kwargs["disable"] = True
            super().__init__(*args, **kwargs)

    Quiet.__name__ = Quiet.__qualname__ = f"Quiet{bar_cls.__name__}"
    Quiet.edufair_quiet = True
    return Quiet


@contextmanager
def quiet_request_bars() -> Iterator[None]:
    """Within the block, lm-eval's per-call progress bars are not drawn; EduFair shows one bar per
    stage instead (dialogue turns, judging). lm-eval's logging is left as it is."""
    patched = []
    for name in _BAR_MODULES:
        module = sys.modules.get(name)
        if module is None:
            continue
        for attr in _BAR_NAMES:
            bar = getattr(module, attr, None)
            if isinstance(bar, type) and not getattr(bar, "edufair_quiet", False):
                patched.append((module, attr, bar))
                setattr(module, attr, _silenced(bar))
    try:
        yield
    finally:
        for module, attr, bar in reversed(patched):
            setattr(module, attr, bar)


# lm-eval notices logged at every generate_until call: EduFair makes one call per dialogue turn, so
# each would print thousands of times in a full run and break the progress bar's line. Each is
# let through once per process (the run); every other lm-eval message is left alone.
# logger name -> message texts (the exact format string lm-eval logs)
ONCE_PER_RUN_NOTICES: dict[str, tuple[str, ...]] = {
    "lm_eval.models.api_models": (
        "Tokenized requests are disabled. Context + generation length is not checked.",
        # asked for every request of a chat endpoint without a tokenizer (eos_string is not cached)
        "Cannot determine EOS string to pass to stop sequence. Manually set by passing `eos_string` to model_args.",
    ),
}


class _OncePerRun(logging.Filter):
    def __init__(self, messages: tuple[str, ...]) -> None:
        super().__init__()
        self.messages = frozenset(messages)
        self.seen: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.msg if isinstance(record.msg, str) else None
        if msg not in self.messages:
            return True
        if msg in self.seen:
            return False
        self.seen.add(msg)
        return True


def print_notices_once() -> None:
    """Install (once per process) the filters that let each of ``ONCE_PER_RUN_NOTICES`` through once."""
    for name, messages in ONCE_PER_RUN_NOTICES.items():
        logger = logging.getLogger(name)
        if not any(isinstance(f, _OncePerRun) for f in logger.filters):
            logger.addFilter(_OncePerRun(messages))


def tasks_path() -> Path:
    """The task YAML folder to pass as ``lm_eval --include_path``. Found without importing
    ``lm_eval_tasks``, which depends on this package and not the other way round."""
    spec = importlib.util.find_spec("lm_eval_tasks")
    if spec is None or not spec.submodule_search_locations:
        raise EduFairError("the lm_eval_tasks package is not installed next to edufair_metrics; reinstall edufair")
    return Path(list(spec.submodule_search_locations)[0]).resolve() / "edufair"


class _TagLoader(yaml.SafeLoader):
    """Reads lm-eval task YAMLs without resolving their ``!function`` tags (they read as None)."""


_TagLoader.add_multi_constructor("!", lambda loader, suffix, node: None)


def template_settings() -> dict:
    """The ``edufair:`` block of the shared task template (``_edufair_template_yaml``): the lowest
    settings layer of a task, for commands that run the student outside a task (``edufair posttest``)."""
    data = yaml.load((tasks_path() / "_edufair_template_yaml").read_text(encoding="utf-8"), Loader=_TagLoader) or {}
    block = data.get("edufair") if isinstance(data, dict) else None
    return dict(block) if isinstance(block, dict) else {}


def task_names() -> dict[str, str]:
    """Every name ``lm_eval --tasks`` accepts from EduFair's task folder: task, group and tag names,
    each with what it is ("task", "group of ...", "tag of ..."). Read from the YAMLs as lm-eval
    indexes them (``!function`` tags are not resolved)."""
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    names: dict[str, str] = {}
    tags: dict[str, list[str]] = {}
    for path in sorted(tasks_path().glob("*.yaml")):
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=Loader) or {}
        if "group" in data:
            names[data["group"]] = "group of " + ", ".join(str(t) for t in data.get("task") or [])
        elif "task" in data:
            names[data["task"]] = "task"
            for tag in data.get("tag") or []:
                tags.setdefault(tag, []).append(data["task"])
    for tag, members in tags.items():
        names.setdefault(tag, "tag of " + ", ".join(members))
    return dict(sorted(names.items()))


def plugin_discovery() -> dict[str, bool]:
    """Which of lm-eval's plugin entry-point groups the installed lm-eval reads: ``lm_eval.tasks``
    (its TaskManager scans the folders they name: ``lm_eval.tasks.manager.discover_plugin_task_paths``,
    lm-eval's open PR #4015) and ``lm_eval.metrics`` / ``lm_eval.aggregations`` (its registry loads
    them: ``lm_eval.api.registry.load_plugins``, lm-eval PR #4014). lm-eval 0.4.13 reads none."""
    import importlib

    def has(module: str, name: str) -> bool:
        try:
            return hasattr(importlib.import_module(module), name)
        except ImportError:
            return False

    registry = has("lm_eval.api.registry", "load_plugins")
    return {"lm_eval.tasks": has("lm_eval.tasks.manager", "discover_plugin_task_paths"),
            "lm_eval.metrics": registry, "lm_eval.aggregations": registry}
