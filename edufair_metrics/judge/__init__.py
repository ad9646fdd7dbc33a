"""Stage 3, the LLM judge: the Appendix F prompt (``prompt``), strict parsing of its answer
(``parse``), the judge's settings block (``settings``; resolved by ``edufair_metrics.settings``), the client with retries (``client``), judging whole
transcripts (``run``) and human-labelled responses (``human``). Records are built from the judgements
in ``edufair_metrics.runlog``."""

from edufair_metrics.judge.client import judge_turn, make_client
from edufair_metrics.judge.parse import (
    BINARY_FIELDS,
    FORCED_NA_KEY,
    GATED_FIELDS,
    JUDGE_FIELDS,
    JUDGE_JSON_SCHEMA,
    JudgeOutputError,
    parse_judge_output,
)
from edufair_metrics.judge.prompt import build_messages, judge_prompts_path, load_judge_prompts, neutralise_delimiters, render_transcript
from edufair_metrics.judge.run import judge_transcripts, missing_judgements, summarize_judgements
from edufair_metrics.judge.settings import JudgeSettings, default_config_path, judge_api_key

__all__ = [
    "BINARY_FIELDS", "FORCED_NA_KEY", "GATED_FIELDS", "JUDGE_FIELDS", "JUDGE_JSON_SCHEMA", "JudgeOutputError",
    "JudgeSettings", "build_messages", "default_config_path", "judge_api_key", "judge_prompts_path",
    "judge_transcripts", "judge_turn", "load_judge_prompts", "make_client", "missing_judgements",
    "neutralise_delimiters", "parse_judge_output", "render_transcript", "summarize_judgements",
]
