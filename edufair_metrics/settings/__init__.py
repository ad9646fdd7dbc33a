"""EduFair's settings: ONE precedence chain (``chain``) for every key of runner, student, judge
and cache, resolved once per task into :class:`RunnerSettings` (``models``), whose blocks are the
models of the stages that use them (``bank/sample.QuestionSample``,
``protocol/placebo.PlaceboReplicate``, ``judge/settings.JudgeSettings``, ``cache.CachePolicy``).

This package sits above the core stages (like ``lmeval`` and ``cli``): it may import every stage,
and no stage imports it; a stage receives resolved models. API keys are never settings (see
``edufair_metrics/secrets.py``).
"""

from edufair_metrics.settings.chain import (
    Layer,
    Merged,
    check_metadata_keys,
    env_layers,
    judge_config_path,
    load_cache_policy,
    load_judge_settings,
    load_settings_file,
    merge_layers,
    resolve_runner_settings,
    settings_layers,
)
from edufair_metrics.settings.models import DEFAULT_STUDENT_GEN_KWARGS, RunnerSettings, StudentSettings

__all__ = [
    "DEFAULT_STUDENT_GEN_KWARGS", "Layer", "Merged", "RunnerSettings", "StudentSettings", "check_metadata_keys",
    "env_layers", "judge_config_path", "load_cache_policy", "load_judge_settings", "load_settings_file", "merge_layers",
    "resolve_runner_settings", "settings_layers",
]
