"""EduFair's settings: one model (:class:`RunnerSettings`, with the judge's
:class:`~edufair_metrics.judge.settings.JudgeSettings` and the :class:`~edufair_metrics.cache.CachePolicy`)
and ONE precedence order for every key, lowest first:

1. built-in defaults (the dataclasses; for the judge, the packaged ``judge/defaults.yaml``, or the
   file named by ``EDUFAIR_JUDGE_CONFIG`` / ``edufair judge --judge-config``);
2. the task YAML's ``edufair:`` block (``lm_eval_tasks/edufair/_edufair_template_yaml``);
3. a settings file: ``--metadata '{"edufair": {"config": "FILE"}}'``;
4. ``--metadata '{"edufair": {...}}'``;
5. environment variables (``EDUFAIR_STUDENT_BASE_URL``, ``EDUFAIR_STUDENT_MODEL``,
   ``EDUFAIR_JUDGE_*``, ``EDUFAIR_CACHE_DIR``);
6. command-line flags (``edufair judge``'s ``--judge-*``, ``--cache``).

API keys are never settings: they come from the environment only, and a key-like entry in any
layer is an error.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from edufair_metrics.cache import is_secret_name, strip_secrets
from edufair_metrics.errors import EduFairError

RUNNER_KEYS = {"preflight", "max_tutor_turns", "levels", "student", "judge", "cache", "config", "bank_dir", "sample", "placebo", "overlap"}


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in (override or {}).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


# A copy with every credential-looking key removed (for provenance, logs and cache keys).
redact = strip_secrets


def load_settings_file(path: str | os.PathLike) -> dict[str, Any]:
    p = Path(path).expanduser()
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise EduFairError(f"cannot read settings file {p}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise EduFairError(f"{p}: invalid YAML ({exc})") from exc
    if not isinstance(data, dict):
        raise EduFairError(f"{p}: settings file must hold a mapping")
    data = data.get("edufair", data)
    _reject_secrets(data, str(p))
    return data


def reject_secrets_in_task_metadata(metadata: dict[str, Any] | None) -> None:
    """lm-eval copies the whole ``--metadata`` (and, under its CLI, every ``--model_args`` entry)
    into each task's config, and from there into ``results_*.json``: a key-like entry anywhere in
    it, not only in the ``edufair`` block, would be written to disk. Credentials belong in the
    environment (EDUFAIR_JUDGE_API_KEY, HF_TOKEN, ...)."""
    _reject_secrets(metadata or {}, "task metadata (--metadata / --model_args, copied into results files)")


def _reject_secrets(obj: Any, where: str) -> None:
    if isinstance(obj, dict):
        for k, v in obj.items():
            # cache.is_secret_name, not lm-eval's SECRET_KEY_PATTERN: the latter also matches lm-eval's
            # own `tokenized_requests` model arg; over-redaction is harmless, rejection is not.
            if is_secret_name(str(k)) and v not in (None, "", "EMPTY") and not isinstance(v, (bool, int, float)):
                raise EduFairError(
                    f"{where}: '{k}' looks like a secret; API keys come from environment variables only"
                )
            _reject_secrets(v, where)


def validate_runner_settings(settings: dict[str, Any], where: str) -> dict[str, Any]:
    unknown = sorted(set(settings) - RUNNER_KEYS)
    if unknown:
        raise EduFairError(f"{where}: unknown edufair setting(s) {', '.join(unknown)} (known: {', '.join(sorted(RUNNER_KEYS))})")
    t = settings.get("max_tutor_turns")
    if not isinstance(t, int) or isinstance(t, bool) or t < 1:
        raise EduFairError(f"{where}: max_tutor_turns must be a positive integer, got {t!r}")
    student = settings.get("student") or {}
    if not isinstance(student, dict) or not student.get("model"):
        raise EduFairError(f"{where}: edufair.student.model is missing (an lm-eval model name, e.g. local-chat-completions)")
    if not isinstance(student.get("model_args", {}), (dict, str)):
        raise EduFairError(f"{where}: edufair.student.model_args must be a mapping or 'k=v,...' string")
    levels = settings.get("levels")
    if levels is not None and not (isinstance(levels, list) and all(isinstance(x, str) for x in levels)):
        raise EduFairError(f"{where}: edufair.levels must be a list of level names")
    if levels == []:
        raise EduFairError(f"{where}: edufair.levels is empty; name at least one level, or leave it out (null) for all levels")
    from edufair_metrics.question_sample import QuestionSample

    QuestionSample.from_setting(settings.get("sample"), f"{where}: edufair.sample")
    if not isinstance(settings.get("overlap", True), bool):
        raise EduFairError(f"{where}: edufair.overlap must be true or false, got {settings['overlap']!r}")
    from edufair_metrics.placebo import PlaceboReplicate

    PlaceboReplicate.from_setting(settings.get("placebo"), f"{where}: edufair.placebo")
    return settings


def env_overrides() -> dict[str, Any]:
    """Endpoint overrides from the environment (handy in CI and on clusters)."""
    out: dict[str, Any] = {}
    student_args: dict[str, Any] = {}
    if os.environ.get("EDUFAIR_STUDENT_BASE_URL"):
        student_args["base_url"] = os.environ["EDUFAIR_STUDENT_BASE_URL"]
    if os.environ.get("EDUFAIR_STUDENT_MODEL"):
        student_args["model"] = os.environ["EDUFAIR_STUDENT_MODEL"]
    if student_args:
        out["student"] = {"model_args": student_args}
    return out


def merge_layer(settings: dict[str, Any], layer: dict[str, Any]) -> dict[str, Any]:
    """deep_merge, except that a layer naming a student model brings that model's own arguments:
    the default student's endpoint arguments must not leak into, say, an in-process vLLM student."""
    student = layer.get("student") if isinstance(layer, dict) else None
    if isinstance(student, dict) and "model" in student:
        settings = copy.deepcopy(settings)
        settings.setdefault("student", {})["model_args"] = {}
    return deep_merge(settings, layer)


# The paper's student decoding (§4): greedy, 2048 new tokens, no stop strings.
DEFAULT_STUDENT_GEN_KWARGS: dict[str, Any] = {"temperature": 0, "max_gen_toks": 2048, "until": []}


@dataclass(frozen=True)
class StudentSettings:
    """The simulated student: any lm-eval model, built through lm-eval's registry."""

    model: str
    model_args: dict[str, Any] | str = field(default_factory=dict)
    batch_size: Any = "auto"
    generation_kwargs: dict[str, Any] = field(default_factory=lambda: dict(DEFAULT_STUDENT_GEN_KWARGS))

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "model_args": self.model_args, "batch_size": self.batch_size,
                "generation_kwargs": dict(self.generation_kwargs)}


@dataclass(frozen=True)
class RunnerSettings:
    """Everything the dialogue runner and the judge filter of one task are configured with."""

    max_tutor_turns: int
    student: StudentSettings
    levels: tuple[str, ...] | None = None
    bank_dir: str | None = None
    preflight: bool = True
    # overlap one cohort's tutor call with the other's student call (dialogue/loop.py); results are
    # the same either way, false only trades speed for one call at a time
    overlap: bool = True
    judge: dict[str, Any] = field(default_factory=dict)  # layers 2-4 of the judge's settings
    judge_enabled: bool = True
    cache: Any = None  # CachePolicy; the judge's settings: judge.settings.load_judge_settings(metadata=judge)
    sample: Any = None  # question_sample.QuestionSample: the paper's fixed stratified subsample, or None
    placebo: Any = None  # placebo.PlaceboReplicate: one level run again with independent sampling, or None


def resolve_runner_settings(yaml_block: dict[str, Any], metadata: dict[str, Any] | None) -> RunnerSettings:
    """Layers 2-5 of the precedence order (task YAML < settings file < --metadata < environment)."""
    from edufair_metrics.cache import CachePolicy
    from edufair_metrics.placebo import PlaceboReplicate
    from edufair_metrics.question_sample import QuestionSample

    merged = _merged_runner_settings(yaml_block, metadata)
    student = dict(merged["student"])
    judge = dict(merged.get("judge") or {})
    enabled = judge.pop("enabled", True)
    levels = merged.get("levels")
    return RunnerSettings(
        max_tutor_turns=merged["max_tutor_turns"],
        student=StudentSettings(
            model=student["model"],
            model_args=student.get("model_args") or {},
            batch_size=student.get("batch_size", "auto"),
            generation_kwargs=dict(student.get("generation_kwargs") or DEFAULT_STUDENT_GEN_KWARGS),
        ),
        levels=tuple(levels) if levels is not None else None,
        bank_dir=merged.get("bank_dir"),
        preflight=bool(merged.get("preflight", True)),
        overlap=merged.get("overlap", True),
        judge=judge,
        judge_enabled=bool(enabled),
        cache=CachePolicy.from_settings(merged.get("cache")),
        sample=QuestionSample.from_setting(merged.get("sample")),
        placebo=PlaceboReplicate.from_setting(merged.get("placebo")),
    )


def _merged_runner_settings(yaml_block: dict[str, Any], metadata: dict[str, Any] | None) -> dict[str, Any]:
    meta_block = (metadata or {}).get("edufair") or {}
    if isinstance(meta_block, str):
        raise EduFairError("--metadata: 'edufair' must be a JSON object, e.g. --metadata '{\"edufair\": {\"max_tutor_turns\": 3}}'")
    if not isinstance(meta_block, dict):
        raise EduFairError(f"--metadata: 'edufair' must be a JSON object, got {type(meta_block).__name__}")
    _reject_secrets(meta_block, "--metadata")
    settings = copy.deepcopy(yaml_block)
    config_file = meta_block.get("config") or yaml_block.get("config")
    if config_file:
        settings = merge_layer(settings, load_settings_file(config_file))
    settings = merge_layer(settings, {k: v for k, v in meta_block.items() if k != "config"})
    settings = merge_layer(settings, env_overrides())
    settings.pop("config", None)
    return validate_runner_settings(settings, "edufair settings")
