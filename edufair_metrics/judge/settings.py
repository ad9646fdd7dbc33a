"""The judge's settings block (``edufair.judge``): endpoint, decoding, retries, and the API key's
lookup. Where the values come from (packaged defaults, task YAML, settings file, ``--metadata``,
``EDUFAIR_JUDGE_*``, ``edufair judge`` flags) is decided by the one precedence chain in
``edufair_metrics/settings/``; the judge stage itself only receives a resolved
:class:`JudgeSettings`."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, ClassVar, Literal, Mapping

from pydantic import Field, field_validator

from edufair_metrics.errors import EduFairError
from edufair_metrics.judge.parse import JUDGE_JSON_SCHEMA
from edufair_metrics.judge.prompt import load_judge_prompts
from edufair_metrics.schema import SettingsModel
from edufair_metrics.secrets import is_secret_name, strip_secrets, walk_keys

STRUCTURED_OUTPUT_FORMS = ("off", "json_object", "json_schema")
# gpt-oss reasoning effort, sent as the request field ``reasoning_effort`` (OpenAI chat completions;
# vLLM's gpt-oss server puts it into the harmony *system* message). Text such as "Reasoning: low"
# inside our system prompt does not set it: vLLM turns that prompt into a developer message.
REASONING_EFFORTS = ("minimal", "low", "medium", "high")

# The judge's environment variables: variable -> (setting, type). Read by the settings chain.
JUDGE_ENV: dict[str, tuple[str, type]] = {
    "EDUFAIR_JUDGE_BASE_URL": ("base_url", str),
    "EDUFAIR_JUDGE_MODEL": ("model", str),
    "EDUFAIR_JUDGE_CONCURRENCY": ("concurrency", int),
    "EDUFAIR_JUDGE_STRUCTURED_OUTPUT": ("structured_output", str),
    "EDUFAIR_JUDGE_MAX_RETRIES": ("max_retries", int),
    "EDUFAIR_JUDGE_TIMEOUT_S": ("timeout_s", float),
    "EDUFAIR_JUDGE_REASONING_EFFORT": ("reasoning_effort", str),
}
# settings whose null in a file or --metadata is a value (send nothing), not "not given"
NULLABLE = frozenset({"reasoning_effort"})


def default_config_path() -> Path:
    """The judge defaults shipped inside the package (a wheel carries them like the checkout)."""
    return Path(__file__).resolve().with_name("defaults.yaml")


_NONE_WORDS = ("none", "null", "off")


class JudgeSettings(SettingsModel):
    """Judge endpoint and decoding settings. The API key is NOT a setting: it is read from the
    environment at call time (``judge_api_key``) and never stored."""

    PATH: ClassVar[str] = "edufair.judge"
    EXPECTED: ClassVar[str] = "a mapping of judge settings (base_url, model, ...)"

    # false: no judge call, every label recorded missing (judge_disabled), e.g. with --predict_only
    enabled: bool = True
    base_url: str | None = Field(None, json_schema_extra={"expected": "an http:// or https:// URL"})
    model: str = Field("openai/gpt-oss-120b", min_length=1)
    temperature: float = Field(0.0, ge=0, allow_inf_nan=False)
    max_tokens: int = Field(2048, ge=1)
    concurrency: int = Field(8, ge=1)
    max_retries: int = Field(4, ge=0)  # retries after the first attempt (5 attempts in all by default)
    timeout_s: float = Field(120.0, gt=0, allow_inf_nan=False)
    backoff_base_s: float = Field(1.0, ge=0, allow_inf_nan=False)
    backoff_max_s: float = Field(30.0, ge=0, allow_inf_nan=False)
    # off | json_object (llama-cpp-python) | json_schema (vLLM/OpenAI)
    structured_output: Literal["off", "json_object", "json_schema"] = "off"
    # The paper disables chain-of-thought ("Reasoning: low"): sent as the request field
    # ``reasoning_effort``; None sends nothing (models without a reasoning mode).
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = "low"
    extra_body: dict[str, Any] = Field(default_factory=dict)  # other server-specific request fields
    # Condition-blind judging: the demographic cues of the transcript the judge sees are replaced by
    # placeholders (edufair_metrics/protocol/cues.py). Off by default, as in the paper.
    mask_cues: bool = False

    @field_validator("structured_output", mode="before")
    @classmethod
    def _structured_output_words(cls, v: Any) -> Any:
        if v is True:
            return "json_object"
        return "off" if v in (False, None) else v

    @field_validator("reasoning_effort", mode="before")
    @classmethod
    def _reasoning_effort_words(cls, v: Any) -> Any:
        # spelled out on a command line or in the environment
        return None if isinstance(v, str) and v.lower() in _NONE_WORDS else v

    @field_validator("base_url")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        if v is not None and not re.match(r"^https?://", v):
            raise ValueError(f"must start with http:// or https://, got {v!r}")
        return v

    @field_validator("extra_body")
    @classmethod
    def _extra_body(cls, v: dict[str, Any]) -> dict[str, Any]:
        if "reasoning_effort" in v:
            raise ValueError("must not set reasoning_effort: use the judge setting reasoning_effort")
        secret = [k for k in walk_keys(v) if is_secret_name(k)]
        if secret:
            raise ValueError(f"contains {secret[0]!r}: API keys come only from the environment")
        return v

    def require_endpoint(self, source: str = "judge settings") -> "JudgeSettings":
        """The judge can be called: an endpoint is set (checked only when the judge is enabled:
        a run with ``judge.enabled: false`` needs none)."""
        if not self.base_url:
            raise EduFairError(
                f"{source}: judge endpoint not set (edufair.judge.base_url: set EDUFAIR_JUDGE_BASE_URL, "
                "--metadata '{\"edufair\": {\"judge\": {\"base_url\": ...}}}' or a file in EDUFAIR_JUDGE_CONFIG)"
            )
        return self

    @classmethod
    def from_resolved(cls, data: Mapping[str, Any] | "JudgeSettings" | None, source: str = "judge settings") -> "JudgeSettings":
        """Resolved settings handed on as plain data (the judge filter's ``judge`` argument, see
        :meth:`to_setting`): validated as they are, with no other layer applied; missing keys take
        the built-in defaults."""
        if isinstance(data, JudgeSettings):
            settings = data
        else:
            settings = cls.from_setting({} if data is None else data, path="edufair.judge", source=source)
        return settings.require_endpoint(source)

    def to_setting(self) -> dict[str, Any]:
        """The plain data of these settings (travels in lm-eval filter arguments)."""
        return self.model_dump()

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
        d = self.model_dump()
        del d["enabled"]  # a record of a disabled judge is {"enabled": False} (judge/run.py)
        d["extra_body"] = strip_secrets(d["extra_body"])
        d["api_key_env"] = judge_api_key_source()
        d["prompt_version"] = load_judge_prompts()["version"]
        if not d["mask_cues"]:
            del d["mask_cues"]  # off (the paper's default) is recorded as absent: older records stay comparable
        return d


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
