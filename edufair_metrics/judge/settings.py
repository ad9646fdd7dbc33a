"""Judge endpoint and decoding settings, and where they come from."""

from __future__ import annotations

import math
import os
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from edufair_metrics.cache import is_secret_name, strip_secrets
from edufair_metrics.errors import EduFairError
from edufair_metrics.judge.parse import JUDGE_JSON_SCHEMA
from edufair_metrics.judge.prompt import load_judge_prompts

STRUCTURED_OUTPUT_FORMS = ("off", "json_object", "json_schema")
# gpt-oss reasoning effort, sent as the request field ``reasoning_effort`` (OpenAI chat completions;
# vLLM's gpt-oss server puts it into the harmony *system* message). Text such as "Reasoning: low"
# inside our system prompt does not set it: vLLM turns that prompt into a developer message.
REASONING_EFFORTS = ("minimal", "low", "medium", "high")


def default_config_path() -> Path:
    """The judge defaults shipped inside the package (a wheel carries them like the checkout)."""
    return Path(__file__).resolve().with_name("defaults.yaml")


@dataclass
class JudgeSettings:
    """Judge endpoint and decoding settings. The API key is NOT a setting: it is read from the
    environment at call time (``judge_api_key``) and never stored."""

    base_url: str | None = None
    model: str = "openai/gpt-oss-120b"
    temperature: float = 0.0
    max_tokens: int = 2048
    concurrency: int = 8
    max_retries: int = 4  # retries after the first attempt (5 attempts in all by default)
    timeout_s: float = 120.0
    backoff_base_s: float = 1.0
    backoff_max_s: float = 30.0
    structured_output: str = "off"  # off | json_object (llama-cpp-python) | json_schema (vLLM/OpenAI)
    # The paper disables chain-of-thought ("Reasoning: low"): sent as the request field
    # ``reasoning_effort``; None sends nothing (models without a reasoning mode).
    reasoning_effort: str | None = "low"
    extra_body: dict[str, Any] = field(default_factory=dict)  # other server-specific request fields
    # Condition-blind judging: the demographic cues of the transcript the judge sees are replaced by
    # placeholders (edufair_metrics/protocol/cues.py). Off by default, as in the paper.
    mask_cues: bool = False

    def __post_init__(self) -> None:
        if self.structured_output is True:
            self.structured_output = "json_object"
        elif self.structured_output in (False, None):
            self.structured_output = "off"
        if isinstance(self.reasoning_effort, str) and self.reasoning_effort.lower() in ("none", "null", "off"):
            self.reasoning_effort = None  # spelled out on a command line or in the environment

    def validate(self, source: str = "judge settings") -> "JudgeSettings":
        def bad(msg: str) -> EduFairError:
            return EduFairError(f"{source}: {msg}")

        if not self.base_url or not isinstance(self.base_url, str):
            raise bad(
                "judge endpoint not set (judge base_url: set EDUFAIR_JUDGE_BASE_URL, "
                "--metadata '{\"edufair\": {\"judge\": {\"base_url\": ...}}}' or a file in EDUFAIR_JUDGE_CONFIG)"
            )
        if not re.match(r"^https?://", self.base_url):
            raise bad(f"judge base_url must start with http:// or https://, got {self.base_url!r}")
        if not self.model or not isinstance(self.model, str):
            raise bad("judge model not set (EDUFAIR_JUDGE_MODEL or judge.model)")
        for name, lo in (("max_tokens", 1), ("concurrency", 1), ("max_retries", 0)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                raise bad(f"judge {name} must be an integer >= {lo}, got {v!r}")
        for name in ("temperature", "timeout_s", "backoff_base_s", "backoff_max_s"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 or not math.isfinite(v):
                raise bad(f"judge {name} must be a number >= 0, got {v!r}")
        if self.timeout_s <= 0:
            raise bad("judge timeout_s must be > 0")
        if self.structured_output not in STRUCTURED_OUTPUT_FORMS:
            raise bad(f"judge structured_output must be one of {', '.join(STRUCTURED_OUTPUT_FORMS)}, got {self.structured_output!r}")
        if self.reasoning_effort is not None and self.reasoning_effort not in REASONING_EFFORTS:
            raise bad(f"judge reasoning_effort must be one of {', '.join(REASONING_EFFORTS)} or null, got {self.reasoning_effort!r}")
        if not isinstance(self.mask_cues, bool):
            raise bad(f"judge mask_cues must be true or false, got {self.mask_cues!r}")
        if not isinstance(self.extra_body, dict):
            raise bad("judge extra_body must be a mapping")
        if "reasoning_effort" in self.extra_body:
            raise bad("judge extra_body must not set reasoning_effort: use the judge setting reasoning_effort")
        secret = [k for k in _walk_keys(self.extra_body) if is_secret_name(k)]
        if secret:
            raise bad(f"judge extra_body contains {secret[0]!r}: API keys come only from the environment")
        return self

    def response_format(self) -> dict[str, Any] | None:
        if self.structured_output == "json_object":
            return {"type": "json_object", "schema": JUDGE_JSON_SCHEMA}
        if self.structured_output == "json_schema":
            return {"type": "json_schema", "json_schema": {"name": "edufair_judge_labels", "schema": JUDGE_JSON_SCHEMA, "strict": True}}
        return None

    def output_identity(self) -> dict[str, Any]:
        """The settings that can change the judge's answer (part of every cache key)."""
        return {
            "model": self.model,
            "temperature": float(self.temperature),
            "max_tokens": int(self.max_tokens),
            "response_format": self.response_format(),
            "reasoning_effort": self.reasoning_effort,
            "extra_body": strip_secrets(self.extra_body),
        }

    def public_dict(self) -> dict[str, Any]:
        """Provenance dump: every setting, no credential (the key's *source* name only)."""
        d = asdict(self)
        d["extra_body"] = strip_secrets(d["extra_body"])
        d["api_key_env"] = judge_api_key_source()
        d["prompt_version"] = load_judge_prompts()["version"]
        if not d["mask_cues"]:
            del d["mask_cues"]  # off (the paper's default) is recorded as absent: older records stay comparable
        return d


def _walk_keys(obj: Any):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield k
            yield from _walk_keys(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _walk_keys(v)


_SETTING_NAMES = {f.name for f in fields(JudgeSettings)}
_ENV_SETTINGS = {
    "EDUFAIR_JUDGE_BASE_URL": ("base_url", str),
    "EDUFAIR_JUDGE_MODEL": ("model", str),
    "EDUFAIR_JUDGE_CONCURRENCY": ("concurrency", int),
    "EDUFAIR_JUDGE_STRUCTURED_OUTPUT": ("structured_output", str),
    "EDUFAIR_JUDGE_MAX_RETRIES": ("max_retries", int),
    "EDUFAIR_JUDGE_TIMEOUT_S": ("timeout_s", float),
    "EDUFAIR_JUDGE_REASONING_EFFORT": ("reasoning_effort", str),
}


def _apply(values: dict[str, Any], src: Mapping[str, Any] | None, source: str) -> None:
    if src is None:
        return
    if not isinstance(src, Mapping):
        raise EduFairError(f"{source}: judge settings must be a mapping, got {type(src).__name__}")
    for k, v in src.items():
        if is_secret_name(k):
            raise EduFairError(f"{source}: '{k}' is not allowed here; the judge API key is read only from EDUFAIR_JUDGE_API_KEY or OPENAI_API_KEY")
        if k not in _SETTING_NAMES:
            raise EduFairError(f"{source}: unknown judge setting '{k}' (known: {', '.join(sorted(_SETTING_NAMES))})")
        if v is None and not (k in _NULLABLE and source != "command line"):
            continue  # None = not given; in a file or metadata, a nullable setting's null is a value
        values[k] = v


_NULLABLE = {"reasoning_effort"}


def load_judge_settings(
    metadata: Mapping[str, Any] | None = None,
    cli: Mapping[str, Any] | None = None,
    config_path: str | os.PathLike | None = None,
    environ: Mapping[str, str] | None = None,
    validate: bool = True,
) -> JudgeSettings:
    """Settings from, in increasing priority: the config file (``config_path``, else
    ``$EDUFAIR_JUDGE_CONFIG``, else the packaged ``judge/defaults.yaml``), the
    ``metadata`` dict (lm-eval ``--metadata`` ``edufair.judge``), environment variables
    (EDUFAIR_JUDGE_BASE_URL, _MODEL, _CONCURRENCY, _STRUCTURED_OUTPUT, _MAX_RETRIES, _TIMEOUT_S,
    _REASONING_EFFORT),
    and explicit command-line values ``cli`` (None values ignored)."""
    import yaml

    env = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    path = Path(config_path) if config_path else (Path(env["EDUFAIR_JUDGE_CONFIG"]) if env.get("EDUFAIR_JUDGE_CONFIG") else default_config_path())
    if path.exists():
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise EduFairError(f"cannot read judge config {path}: {exc}") from exc
        if isinstance(data, dict) and isinstance(data.get("judge"), dict):
            data = data["judge"]
        _apply(values, data, str(path))
    elif config_path or env.get("EDUFAIR_JUDGE_CONFIG"):
        raise EduFairError(f"judge config {path} does not exist")
    _apply(values, metadata, "--metadata edufair.judge")
    for var, (name, typ) in _ENV_SETTINGS.items():
        raw = env.get(var)
        if raw is None or raw == "":
            continue
        try:
            values[name] = typ(raw)
        except ValueError:
            raise EduFairError(f"environment variable {var}={raw!r} is not a valid {typ.__name__}") from None
    _apply(values, cli, "command line")
    settings = JudgeSettings(**values)
    return settings.validate() if validate else settings


JUDGE_KEY_ENV = ("EDUFAIR_JUDGE_API_KEY", "OPENAI_API_KEY")


def judge_api_key_source() -> str | None:
    for var in JUDGE_KEY_ENV:
        if os.environ.get(var):
            return var
    return None


def judge_api_key() -> str:
    """EDUFAIR_JUDGE_API_KEY, else OPENAI_API_KEY, else "EMPTY" (local servers need none)."""
    var = judge_api_key_source()
    return os.environ[var] if var else "EMPTY"
