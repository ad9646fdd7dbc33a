"""The composed settings model of one EduFair task: :class:`RunnerSettings` (with the simulated
student's :class:`StudentSettings`). Every other block is the model of the stage that uses it:
``bank/sample.QuestionSample``, ``bank/shard.Shard``, ``protocol/placebo.PlaceboReplicate``,
``protocol/names.NamesDraw``,
``judge/settings.JudgeSettings``, ``cache.CachePolicy``."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field, field_validator, model_validator

from edufair_metrics.analysis.contrast import DEFAULT_MIN_PAIRS, DEFAULT_N_BOOT
from edufair_metrics.analysis.noise import DEFAULT_FDR_METHOD, FDR_METHODS
from edufair_metrics.analysis.params import StatParams
from edufair_metrics.analysis.ses import DEFAULT_SES_SUMMARY, SES_SUMMARIES
from edufair_metrics.analysis.verdicts import DEFAULT_MARGIN
from edufair_metrics.bank.sample import QuestionSample
from edufair_metrics.bank.shard import Shard
from edufair_metrics.cache import CachePolicy
from edufair_metrics.judge.settings import JudgeSettings
from edufair_metrics.protocol.names import NamesDraw
from edufair_metrics.protocol.placebo import PlaceboReplicate
from edufair_metrics.schema import SettingsModel

# The paper's student decoding (§4): greedy, 2048 new tokens, no stop strings.
DEFAULT_STUDENT_GEN_KWARGS: dict[str, Any] = {"temperature": 0, "max_gen_toks": 2048, "until": []}


class StudentSettings(SettingsModel):
    """The simulated student: any lm-eval model, built through lm-eval's registry."""

    PATH: ClassVar[str] = "edufair.student"
    EXPECTED: ClassVar[str] = "a mapping like {model: local-chat-completions, model_args: {...}}"

    model: str = Field(min_length=1, description="an lm-eval model name, e.g. local-chat-completions")
    model_args: dict[str, Any] | str = Field(default_factory=dict, json_schema_extra={"expected": "a mapping or 'k=v,...' string"})
    batch_size: Any = "auto"
    generation_kwargs: dict[str, Any] = Field(default_factory=lambda: dict(DEFAULT_STUDENT_GEN_KWARGS))

    @field_validator("model_args", mode="before")
    @classmethod
    def _no_args(cls, v: Any) -> Any:
        return {} if v is None else v

    @field_validator("generation_kwargs", mode="before")
    @classmethod
    def _paper_decoding(cls, v: Any) -> Any:
        return dict(DEFAULT_STUDENT_GEN_KWARGS) if v is None or v == {} else v

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "model_args": self.model_args, "batch_size": self.batch_size,
                "generation_kwargs": dict(self.generation_kwargs)}


class StatisticsSettings(SettingsModel):
    """The statistics of the task's lm-eval aggregations (its headline rows in lm-eval's table):
    the same parameters, defaults and rules as ``edufair report`` (``analysis.params.StatParams``),
    so the two agree when given the same values."""

    PATH: ClassVar[str] = "edufair.statistics"

    n_boot: int = Field(DEFAULT_N_BOOT, ge=1)
    seed: int = 0
    min_pairs: int = Field(DEFAULT_MIN_PAIRS, ge=1)
    ses_summary: str = Field(DEFAULT_SES_SUMMARY, json_schema_extra={"expected": "one of " + ", ".join(SES_SUMMARIES)})
    keep_failed_dialogues: bool = False
    fdr_method: str = Field(DEFAULT_FDR_METHOD, json_schema_extra={"expected": "one of " + ", ".join(FDR_METHODS)})
    equivalence_margin: float = Field(DEFAULT_MARGIN, gt=0, lt=1)

    @field_validator("ses_summary", "fdr_method")
    @classmethod
    def _one_of(cls, v: str, info) -> str:
        choices = SES_SUMMARIES if info.field_name == "ses_summary" else FDR_METHODS
        if v not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}, got {v!r}")
        return v

    def params(self) -> StatParams:
        return StatParams(n_boot=self.n_boot, seed=self.seed, min_pairs=self.min_pairs, ses_summary=self.ses_summary,
                          keep_failed_dialogues=self.keep_failed_dialogues, fdr_method=self.fdr_method,
                          equivalence_margin=float(self.equivalence_margin)).validate()


class RunnerSettings(SettingsModel):
    """Everything the dialogue runner and the judge filter of one task are configured with: the
    ``edufair`` block, fully resolved (``settings.resolve_runner_settings``)."""

    EXPECTED: ClassVar[str] = "a mapping of edufair settings"

    max_tutor_turns: int = Field(10, ge=1)  # T_max (paper §3.2)
    levels: tuple[str, ...] | None = Field(None, json_schema_extra={"expected": "a list of level names"})
    bank_dir: str | None = None
    preflight: bool = True
    # overlap one cohort's tutor call with the other's student call (dialogue/loop.py); results are
    # the same either way, false only trades speed for one call at a time
    overlap: bool = True
    sample: QuestionSample | None = None  # the paper's fixed stratified subsample, or None
    placebo: PlaceboReplicate | None = None  # one level run again with independent sampling, or None
    shard: Shard | None = None  # this run's part of the task's questions (k runs pooled by the report), or None
    # the names tasks (edufair_implicit_names_*): k names per gender x ethnicity cell and the draw's
    # seed; None: the defaults of protocol-extensions.yaml. An error on any other task.
    names: NamesDraw | None = None
    # outcome fairness (an extension): after each finished dialogue the same student answers the
    # question once more, alone (one student call per dialogue; dialogue/posttest.py)
    posttest: bool = False
    # replicate dialogues (protocol/replicates.py): k tutor sampling seeds per question x level; 1 = the
    # paper's protocol (today's documents, byte for byte)
    replicates: int = Field(1, json_schema_extra={"expected": "a whole number >= 1"})
    student: StudentSettings = Field(description="the simulated student: {model: ..., model_args: {...}}")
    judge: JudgeSettings = Field(default_factory=JudgeSettings)
    cache: CachePolicy = Field(default_factory=CachePolicy)
    statistics: StatisticsSettings = Field(default_factory=StatisticsSettings)

    @model_validator(mode="before")
    @classmethod
    def _blocks(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = dict(data)
            if data.get("student") is None:
                data["student"] = {}  # so that the error names edufair.student.model
            for key in ("judge", "cache", "statistics"):
                if key in data and data[key] is None:
                    del data[key]
        return data

    @field_validator("replicates", mode="before")
    @classmethod
    def _replicates(cls, v: Any) -> Any:
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"must be a whole number >= 1 (dialogues per question and level), got {v!r}")
        return v

    @model_validator(mode="after")
    def _replicates_without_placebo(self) -> "RunnerSettings":
        if self.replicates > 1 and self.placebo is not None:
            raise ValueError(f"replicates: {self.replicates} with a placebo replicate: the replicates measure the "
                             "within-question noise themselves; drop edufair.placebo (or set replicates: 1)")
        return self

    @field_validator("levels", mode="before")
    @classmethod
    def _levels(cls, v: Any) -> Any:
        if v is None:
            return None
        if not isinstance(v, (list, tuple)) or not all(isinstance(x, str) for x in v):
            raise ValueError(f"must be a list of level names, got {v!r}")
        if not v:
            raise ValueError("is empty; name at least one level, or leave it out (null) for all levels")
        return tuple(v)

    @property
    def judge_enabled(self) -> bool:
        """``judge.enabled: false`` records every label as missing (judge_disabled)."""
        return self.judge.enabled
