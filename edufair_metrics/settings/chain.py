"""The ONE precedence chain of EduFair's settings, for runner, student, judge and cache keys alike,
lowest first:

1. built-in defaults: the models' own defaults; for the judge, the packaged
   ``judge/defaults.yaml``, or the file named by ``EDUFAIR_JUDGE_CONFIG`` / ``--judge-config``;
2. the task YAML's ``edufair:`` block (``lm_eval_tasks/edufair/_edufair_template_yaml``);
3. a settings file: ``--metadata '{"edufair": {"config": "FILE"}}'`` (or ``config:`` in the YAML);
4. ``--metadata '{"edufair": {...}}'``;
5. environment variables (``EDUFAIR_STUDENT_BASE_URL``, ``EDUFAIR_STUDENT_MODEL``,
   ``EDUFAIR_JUDGE_*``, ``EDUFAIR_CACHE_DIR``), one layer per variable;
6. command-line flags (``edufair judge``'s ``--judge-*``, ``--cache``).

:func:`settings_layers` lists the layers (each a tree shaped like the ``edufair`` block, with the
name of its source); :func:`merge_layers` merges them, remembering which layer set each value;
the models then validate the merged tree once. Each layer is checked on its own first: a key-like
entry (secrets) or an unknown key anywhere in it is an error naming that layer, the block and the
closest known key; a bad value is an error naming the layer that set it.

Merge rules: mappings merge key by key, anything else replaces. A layer naming a student
``model`` brings that model's own ``model_args`` (the default student's endpoint arguments must not
leak into, say, an in-process vLLM student). In the ``judge`` block, null means "not given"
(except ``reasoning_effort: null``, which sends nothing); a null ``student``, ``judge`` or
``cache`` block means "not given"; other nulls are values (``levels: null`` = all levels).
"""

from __future__ import annotations

import copy
import difflib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from edufair_metrics.cache import CachePolicy
from edufair_metrics.errors import EduFairError
from edufair_metrics.io import read_yaml
from edufair_metrics.judge.settings import JUDGE_ENV, NULLABLE, JudgeSettings, default_config_path
from edufair_metrics.schema import check_keys
from edufair_metrics.secrets import reject_secrets, reject_secrets_in_task_metadata
from edufair_metrics.settings.models import RunnerSettings

CONFIG_KEY = "config"  # names a settings file; allowed in the task YAML and --metadata
# keys that lm-eval or EduFair itself put at the top of a task's metadata next to `edufair`
_OWN_METADATA_KEYS = frozenset({"edufair_calls"})
_BLOCKS = ("student", "judge", "cache")
_OFF_WORDS = ("off", "none", "false", "no", "disabled")

KeyPath = tuple[str, ...]


@dataclass(frozen=True)
class Layer:
    """One source of settings: a tree shaped like the ``edufair`` block, and where it came from."""

    source: str
    data: dict[str, Any]


@dataclass
class Merged:
    """The merged tree and, per path, the source of the layer that last set it."""

    data: dict[str, Any]
    origins: dict[KeyPath, str]

    def source_of(self, path: KeyPath, default: str = "edufair settings") -> str:
        for n in range(len(path), 0, -1):
            if path[:n] in self.origins:
                return self.origins[path[:n]]
        return default

    def sourcer(self, prefix: KeyPath = ()):
        return lambda names: self.source_of(prefix + tuple(names))


def _set_origin(origins: dict[KeyPath, str], path: KeyPath, source: str) -> None:
    for p in [p for p in origins if p[: len(path)] == path]:
        del origins[p]
    origins[path] = source


def _merge_into(base: dict[str, Any], data: Mapping[str, Any], source: str, origins: dict[KeyPath, str], prefix: KeyPath = ()) -> None:
    for key, value in data.items():
        path = prefix + (key,)
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge_into(base[key], value, source, origins, path)
        else:
            base[key] = copy.deepcopy(value)
            _set_origin(origins, path, source)


def merge_layers(layers: list[Layer]) -> Merged:
    """Merge ``layers`` (lowest first), remembering which layer set each value. Mappings merge key
    by key, anything else replaces; a layer naming a student ``model`` first drops the
    ``model_args`` merged so far (that model brings its own)."""
    data: dict[str, Any] = {}
    origins: dict[KeyPath, str] = {}
    for layer in layers:
        student = layer.data.get("student")
        if isinstance(student, dict) and "model" in student and isinstance(data.get("student"), dict):
            data["student"]["model_args"] = {}
            _set_origin(origins, ("student", "model_args"), layer.source)
        _merge_into(data, layer.data, layer.source, origins)
    return Merged(data, origins)


def _clean(data: Mapping[str, Any], *, cli: bool = False) -> dict[str, Any]:
    """A layer without its "not given" entries: null blocks, null judge settings (except
    ``reasoning_effort`` outside the command line), and every null on the command line."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if value is None and (cli or key in _BLOCKS):
            continue
        if key == "judge" and isinstance(value, dict):
            value = {k: v for k, v in value.items() if v is not None or (k in NULLABLE and not cli)}
        elif cli and isinstance(value, dict):
            value = {k: v for k, v in value.items() if v is not None}
        out[key] = value
    return out


def _layer(source: str, data: Any, *, cli: bool = False, allow_config: bool = False) -> Layer:
    if not isinstance(data, Mapping):
        raise EduFairError(f"{source}: settings must be a mapping, got {type(data).__name__}")
    data = dict(data)
    if allow_config:
        data.pop(CONFIG_KEY, None)
    elif CONFIG_KEY in data:
        raise EduFairError(f"{source}: '{CONFIG_KEY}' (a settings file) can be named only in the task YAML or --metadata")
    reject_secrets(data, source)
    data = _clean(data, cli=cli)
    check_keys(RunnerSettings, data, "edufair", source)
    return Layer(source, data)


def judge_config_path(config_path: str | os.PathLike | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """The judge's lowest layer: ``config_path`` (``--judge-config``), else ``$EDUFAIR_JUDGE_CONFIG``,
    else the packaged ``judge/defaults.yaml``."""
    env = os.environ if environ is None else environ
    if config_path:
        return Path(config_path).expanduser()
    if env.get("EDUFAIR_JUDGE_CONFIG"):
        return Path(env["EDUFAIR_JUDGE_CONFIG"]).expanduser()
    return default_config_path()


def _judge_defaults_layer(config_path: str | os.PathLike | None, environ: Mapping[str, str]) -> Layer:
    path = judge_config_path(config_path, environ)
    data = read_yaml(path, "judge config")
    if data is None:
        data = {}
    if isinstance(data, dict) and isinstance(data.get("judge"), dict):
        data = data["judge"]
    if not isinstance(data, dict):
        raise EduFairError(f"judge config {path}: must hold a mapping of judge settings (judge: {{...}})")
    return _layer(f"judge config {path}", {"judge": data})


def load_settings_file(path: str | os.PathLike) -> dict[str, Any]:
    """A settings file (YAML): the ``edufair`` block itself, or a mapping holding it under ``edufair``."""
    p = Path(path).expanduser()
    data = read_yaml(p, "settings file")
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise EduFairError(f"{p}: settings file must hold a mapping")
    return data["edufair"] if isinstance(data.get("edufair"), dict) else data


def _student_env_layers(environ: Mapping[str, str]) -> list[Layer]:
    out = []
    for var, key in (("EDUFAIR_STUDENT_BASE_URL", "base_url"), ("EDUFAIR_STUDENT_MODEL", "model")):
        if environ.get(var):
            out.append(Layer(f"environment variable {var}", {"student": {"model_args": {key: environ[var]}}}))
    return out


def _judge_env_layers(environ: Mapping[str, str]) -> list[Layer]:
    out = []
    for var, (name, typ) in JUDGE_ENV.items():
        raw = environ.get(var)
        if raw is None or raw == "":
            continue
        try:
            value = typ(raw)
        except ValueError:
            raise EduFairError(f"environment variable {var}={raw!r} is not a valid {typ.__name__}") from None
        out.append(Layer(f"environment variable {var}", {"judge": {name: value}}))
    return out


def _cache_env_layers(environ: Mapping[str, str]) -> list[Layer]:
    if environ.get("EDUFAIR_CACHE_DIR"):
        return [Layer("environment variable EDUFAIR_CACHE_DIR", {"cache": {"dir": environ["EDUFAIR_CACHE_DIR"]}})]
    return []


def env_layers(environ: Mapping[str, str] | None = None) -> list[Layer]:
    """One layer per environment variable that is set (handy in CI and on clusters)."""
    env = os.environ if environ is None else environ
    return _student_env_layers(env) + _judge_env_layers(env) + _cache_env_layers(env)


def _cli_layer(cli: Mapping[str, Any] | None) -> list[Layer]:
    if not cli:
        return []
    data = dict(cli)
    cache = data.get("cache")
    if isinstance(cache, (str, os.PathLike)):  # --cache PATH | off
        text = str(cache).strip()
        data["cache"] = {"enabled": False} if text.lower() in _OFF_WORDS else ({"path": text} if text else None)
    return [_layer("command line", data, cli=True)]


def _near_edufair(key: str) -> bool:
    norm = key.lower().strip(" _-.")
    return norm == "edufair" or difflib.SequenceMatcher(None, norm, "edufair").ratio() >= 0.8


def check_metadata_keys(metadata: Mapping[str, Any] | None) -> None:
    """lm-eval puts its own keys at the top of the task metadata (``version``, ``config_source``,
    and under its CLI every ``--model_args`` entry), so other keys are fine; but a near miss of
    ``edufair`` (``edufiar``, ``edufair_``, ``EduFair``) would silently drop the whole block."""
    for key in metadata or {}:
        if isinstance(key, str) and key != "edufair" and key not in _OWN_METADATA_KEYS and _near_edufair(key):
            raise EduFairError(f"--metadata: unknown key '{key}' (did you mean 'edufair'?); EduFair reads its settings "
                               "only from the 'edufair' block")


def _metadata_block(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    block = (metadata or {}).get("edufair") or {}
    if isinstance(block, str):
        raise EduFairError("--metadata: 'edufair' must be a JSON object, e.g. --metadata '{\"edufair\": {\"max_tutor_turns\": 3}}'")
    if not isinstance(block, dict):
        raise EduFairError(f"--metadata: 'edufair' must be a JSON object, got {type(block).__name__}")
    return block


def settings_layers(
    yaml_block: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
    *,
    cli: Mapping[str, Any] | None = None,
    judge_config: str | os.PathLike | None = None,
    environ: Mapping[str, str] | None = None,
) -> list[Layer]:
    """Every layer of the chain, lowest first (see the module docstring). ``metadata`` is the task
    metadata (``--metadata``, holding the ``edufair`` block); ``cli`` a tree like the ``edufair``
    block (``{"judge": {...}, "cache": "off"}``) whose nulls mean "flag not given"."""
    env = os.environ if environ is None else environ
    yaml_block = dict(yaml_block or {})
    meta_block = _metadata_block(metadata)
    layers = [_judge_defaults_layer(judge_config, env), _layer("task YAML (edufair:)", yaml_block, allow_config=True)]
    config_file = meta_block.get(CONFIG_KEY) or yaml_block.get(CONFIG_KEY)
    if config_file:
        p = Path(str(config_file)).expanduser()
        layers.append(_layer(f"settings file {p}", load_settings_file(p)))
    layers.append(_layer("--metadata", meta_block, allow_config=True))
    layers.extend(env_layers(env))
    layers.extend(_cli_layer(cli))
    return layers


def _judge(merged: Merged, *, require_endpoint: bool = True) -> JudgeSettings:
    """The judge block of the merged tree: validated when the judge is enabled (a run with
    ``judge.enabled: false`` needs no endpoint; its keys were checked layer by layer)."""
    block = merged.data.get("judge")
    if isinstance(block, dict) and block.get("enabled", True) is False:
        return JudgeSettings.model_construct(**block)
    settings = JudgeSettings.from_setting({} if block is None else block, path="edufair.judge", source=merged.sourcer(("judge",)))
    if require_endpoint and settings.enabled:
        settings.require_endpoint(merged.source_of(("judge", "base_url")))
    return settings


def _cache(merged: Merged, environ: Mapping[str, str]) -> CachePolicy:
    block = CachePolicy.from_setting(merged.data.get("cache") or {}, path="edufair.cache", source=merged.sourcer(("cache",)))
    return block.resolved(environ)  # EDUFAIR_CACHE_DIR is already in the chain (as cache.dir)


def resolve_runner_settings(
    yaml_block: Mapping[str, Any] | None,
    metadata: Mapping[str, Any] | None,
    *,
    cli: Mapping[str, Any] | None = None,
    judge_config: str | os.PathLike | None = None,
    environ: Mapping[str, str] | None = None,
) -> RunnerSettings:
    """The task's fully resolved settings, once: the whole chain (judge defaults < task YAML <
    settings file < ``--metadata`` < environment < command line), validated by the models. The
    task metadata is checked first: no key-like entry anywhere, no near miss of ``edufair``."""
    env = os.environ if environ is None else environ
    reject_secrets_in_task_metadata(dict(metadata or {}))
    check_metadata_keys(metadata)
    merged = merge_layers(settings_layers(yaml_block, metadata, cli=cli, judge_config=judge_config, environ=env))
    data = {k: v for k, v in merged.data.items() if k not in ("judge", "cache")}
    data["judge"] = _judge(merged)
    data["cache"] = _cache(merged, env)
    return RunnerSettings.from_setting(data, path="edufair", source=merged.sourcer())


def load_judge_settings(
    metadata: Mapping[str, Any] | None = None,
    cli: Mapping[str, Any] | None = None,
    config_path: str | os.PathLike | None = None,
    environ: Mapping[str, str] | None = None,
    validate: bool = True,
) -> JudgeSettings:
    """The judge's settings through the same chain with the runner layers empty: the judge config
    (``config_path``, else ``$EDUFAIR_JUDGE_CONFIG``, else the packaged defaults) < ``metadata``
    (an ``edufair.judge`` block) < ``EDUFAIR_JUDGE_*`` < ``cli`` (``--judge-*`` flags; None = not
    given). ``validate=False`` skips only the endpoint check."""
    meta = None if metadata is None else {"edufair": {"judge": metadata}}
    if metadata is not None and not isinstance(metadata, Mapping):
        raise EduFairError(f"--metadata edufair.judge must be a mapping of judge settings, got {type(metadata).__name__}")
    merged = merge_layers(settings_layers({}, meta, cli={"judge": dict(cli or {})}, judge_config=config_path, environ=environ))
    return _judge(merged, require_endpoint=validate)


def load_cache_policy(cli: str | os.PathLike | Mapping[str, Any] | None = None,
                      environ: Mapping[str, str] | None = None) -> CachePolicy:
    """The call cache's policy through the same chain with the runner layers empty (for
    ``edufair judge``, ``judge-human`` and ``cache``): ``EDUFAIR_CACHE_DIR`` < ``--cache``."""
    env = os.environ if environ is None else environ
    merged = merge_layers(_cache_env_layers(env) + _cli_layer({"cache": cli}))
    return _cache(merged, env)
