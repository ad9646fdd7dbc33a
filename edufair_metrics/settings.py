"""Run settings for the EduFair runner: the task YAML's ``edufair:`` block, overridden by an
optional settings file, then ``--metadata '{"edufair": {...}}'``, then environment variables.

API keys are never settings: they come from the environment only (see ``secret_env``).
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import yaml

from edufair_metrics.cache import is_secret_name, strip_secrets
from edufair_metrics.errors import EduFairError

RUNNER_KEYS = {"preflight", "max_tutor_turns", "levels", "student", "judge", "cache", "render_check", "config", "bank_dir"}


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


def _reject_secrets(obj: Any, where: str) -> None:
    if isinstance(obj, dict):
        for k, v in obj.items():
            # cache.is_secret_name, not SECRET_KEY_PATTERN: the latter also matches lm-eval's own
            # `tokenized_requests` model arg (issue 7); over-redaction is harmless, rejection is not.
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


def resolve_runner_settings(yaml_block: dict[str, Any], metadata: dict[str, Any] | None) -> dict[str, Any]:
    """YAML defaults < settings file (``edufair.config``) < --metadata < environment."""
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
