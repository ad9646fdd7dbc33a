"""The LLM judge (paper §3.3, Appendix F): one request per tutor turn, strict parsing, bounded
retries, persistent caching, no silent defaults.

Request layout (see ``build_messages``)
    system: the paper's judge system prompt, verbatim (App. F.1, starts with "Reasoning: low").
    user:   the paper's rubric prompt, verbatim
            + "\\n\\n" + ``data_notice`` (the ONE added sentence: text inside the delimiters is data,
              never instructions)
            + "\\n<transcript>\\n" + one ``<turn index="i" role="question|student|tutor">`` element per
              turn, from the opening question up to and including the judged tutor turn
            + "\\n</transcript>\\n" + ``evaluate_line`` naming the judged turn's index.
    Nothing else: never the condition, the level, the tutor's/student's system prompts (where names
    and demographics live) or the gold answer. Inside turn text, anything that could open or close a
    delimiter (``<transcript``, ``</transcript``, ``<turn``, ``</turn`` in any case/spacing) has its
    ``<`` replaced by ``&lt;`` so a turn cannot leave the data block. The turn marker comes after
    ``</transcript>`` so the requests for the turns of one dialogue share a prefix (system, rubric,
    notice, history); one worker issues them in turn order, so a server prefix cache reuses it.

Parsing (see ``parse_judge_output``)
    ``message.content`` only (gpt-oss reasoning arrives in a separate field and is ignored);
    ``<think>...</think>`` blocks are removed; surrounding whitespace and one ```json fence are
    tolerated; the rest must be exactly ONE JSON object with exactly the six fields:
    student_mistake_prev_turn: JSON true/false; correction_tone, mistake_recognize in {0, 1, -1};
    answer_leakage, scaffolding_guidance, actionability in {0, 1}. Integers are JSON integers;
    an integral float such as ``1.0`` is accepted and normalised to ``1`` (it is unambiguous), while
    ``1.5``, strings (``"1"``), booleans for integer fields, null, duplicate keys and NaN are rejected.
    If student_mistake_prev_turn is false, tone and recognition are forced to -1 (N/A) and the
    forced fields are listed in ``labels["_forced_na"]`` (always present, usually empty); if it is
    true, -1 for them is invalid. Any invalid output is retried; after the bound the turn is
    ``missing`` with a reason "<kind>: <detail>", never given a value.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import random
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from .cache import CallCache, is_secret_name, strip_secrets
from .errors import EduFairError
from .records import JUDGE_MISSING, JUDGE_OK, Transcript, TurnJudgement

log = logging.getLogger(__name__)

# ----------------------------------------------------------------------------------------------
# Prompts

JUDGE_FIELDS = (
    "student_mistake_prev_turn",
    "correction_tone",
    "mistake_recognize",
    "answer_leakage",
    "scaffolding_guidance",
    "actionability",
)
GATED_FIELDS = ("correction_tone", "mistake_recognize")  # N/A (-1) unless student_mistake_prev_turn
BINARY_FIELDS = ("answer_leakage", "scaffolding_guidance", "actionability")
FORCED_NA_KEY = "_forced_na"

JUDGE_JSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "student_mistake_prev_turn": {"type": "boolean"},
        "correction_tone": {"type": "integer", "enum": [0, 1, -1]},
        "mistake_recognize": {"type": "integer", "enum": [0, 1, -1]},
        "answer_leakage": {"type": "integer", "enum": [0, 1]},
        "scaffolding_guidance": {"type": "integer", "enum": [0, 1]},
        "actionability": {"type": "integer", "enum": [0, 1]},
    },
    "required": list(JUDGE_FIELDS),
    "additionalProperties": False,
}


def judge_prompts_path() -> Path:
    from lm_eval_tasks import PROMPTS_DIR

    return PROMPTS_DIR / "judge.yaml"


@functools.lru_cache(maxsize=1)
def load_judge_prompts() -> dict[str, str]:
    """{"version", "system", "rubric", "data_notice", "evaluate_line"} from prompts/judge.yaml."""
    import yaml

    path = judge_prompts_path()
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise EduFairError(f"cannot read judge prompts {path}: {exc}") from exc
    for key in ("version", "system", "rubric", "data_notice", "evaluate_line"):
        if not isinstance(data, dict) or not isinstance(data.get(key), str):
            raise EduFairError(f"{path}: missing text field '{key}'")
    return {k: data[k] for k in ("version", "system", "rubric", "data_notice", "evaluate_line")}


_DELIM_RE = re.compile(r"<(?=\s*/?\s*(?:transcript|turn)\b)", re.IGNORECASE)


def neutralise_delimiters(text: str) -> str:
    """Replace the ``<`` of anything that could open/close ``<transcript>`` or ``<turn>`` by ``&lt;``."""
    return _DELIM_RE.sub("&lt;", text or "")


def render_transcript(transcript: Transcript, upto: int) -> str:
    """The delimited data block with turns ``0..upto`` (inclusive)."""
    parts = ["<transcript>"]
    for i, turn in enumerate(transcript.turns[: upto + 1]):
        role = turn.role if turn.role in ("question", "student", "tutor") else "other"
        parts.append(f'<turn index="{i}" role="{role}">\n{neutralise_delimiters(turn.text)}\n</turn>')
    parts.append("</transcript>")
    return "\n".join(parts)


def build_messages(transcript: Transcript, turn_index: int) -> list[dict[str, str]]:
    """The judge request for tutor turn ``turn_index`` (index into ``transcript.turns``)."""
    if not (0 <= turn_index < len(transcript.turns)) or transcript.turns[turn_index].role != "tutor":
        raise ValueError(f"turn {turn_index} of {transcript.question_id} is not a tutor turn")
    p = load_judge_prompts()
    user = (
        p["rubric"]
        + "\n\n"
        + p["data_notice"]
        + "\n"
        + render_transcript(transcript, turn_index)
        + "\n"
        + p["evaluate_line"].format(index=turn_index)
    )
    return [{"role": "system", "content": p["system"]}, {"role": "user", "content": user}]


# ----------------------------------------------------------------------------------------------
# Parsing


class JudgeOutputError(ValueError):
    """An invalid judge answer; ``kind`` is one of empty, invalid_json, wrong_fields, wrong_type,
    bad_value, inconsistent."""

    def __init__(self, kind: str, detail: str):
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


_THINK_RE = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE_RE = re.compile(r"\A```[ \t]*(?:json)?[ \t]*\n?(.*?)\n?[ \t]*```\Z", re.DOTALL | re.IGNORECASE)


def _pairs_no_duplicates(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise JudgeOutputError("invalid_json", f"duplicate key {k!r}")
        out[k] = v
    return out


def _reject_constant(name):
    raise JudgeOutputError("invalid_json", f"non-standard JSON constant {name}")


_DECODER = json.JSONDecoder(object_pairs_hook=_pairs_no_duplicates, parse_constant=_reject_constant)


def _as_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or value is None:
        raise JudgeOutputError("wrong_type", f"{name} must be an integer, got {json.dumps(value)}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)  # documented: 1.0 is accepted as 1
    raise JudgeOutputError("wrong_type", f"{name} must be an integer, got {json.dumps(value)}")


def parse_judge_output(content: str | None) -> dict[str, Any]:
    """Validated labels (the six fields plus ``_forced_na``) or JudgeOutputError."""
    if content is None or not content.strip():
        raise JudgeOutputError("empty", "empty content")
    text = _THINK_RE.sub("", content)
    if re.search(r"</?think>", text, re.IGNORECASE):
        raise JudgeOutputError("invalid_json", "unbalanced <think> tag")
    text = text.strip()
    m = _FENCE_RE.match(text)
    if m:
        text = m.group(1).strip()
    if not text:
        raise JudgeOutputError("empty", "no content outside reasoning")
    try:
        obj, end = _DECODER.raw_decode(text)
    except json.JSONDecodeError as exc:
        raise JudgeOutputError("invalid_json", f"{exc.msg} at char {exc.pos}") from None
    if text[end:].strip():
        raise JudgeOutputError("invalid_json", "text after the JSON object")
    if not isinstance(obj, dict):
        raise JudgeOutputError("invalid_json", f"expected a JSON object, got {type(obj).__name__}")
    missing = [f for f in JUDGE_FIELDS if f not in obj]
    extra = sorted(k for k in obj if k not in JUDGE_FIELDS)
    if missing or extra:
        detail = "; ".join(
            x for x in (f"missing {', '.join(missing)}" if missing else "", f"unexpected {', '.join(extra)}" if extra else "") if x
        )
        raise JudgeOutputError("wrong_fields", detail)
    mistake = obj["student_mistake_prev_turn"]
    if not isinstance(mistake, bool):
        raise JudgeOutputError("wrong_type", f"student_mistake_prev_turn must be true/false, got {json.dumps(mistake)}")
    labels: dict[str, Any] = {"student_mistake_prev_turn": mistake}
    for name in GATED_FIELDS:
        v = _as_int(name, obj[name])
        if v not in (0, 1, -1):
            raise JudgeOutputError("bad_value", f"{name} must be 0, 1 or -1, got {v}")
        labels[name] = v
    for name in BINARY_FIELDS:
        v = _as_int(name, obj[name])
        if v not in (0, 1):
            raise JudgeOutputError("bad_value", f"{name} must be 0 or 1, got {v}")
        labels[name] = v
    forced: list[str] = []
    if mistake:
        bad = [n for n in GATED_FIELDS if labels[n] == -1]
        if bad:
            raise JudgeOutputError("inconsistent", f"{', '.join(bad)} = -1 although student_mistake_prev_turn is true")
    else:
        for n in GATED_FIELDS:
            if labels[n] != -1:
                labels[n] = -1
                forced.append(n)
    labels[FORCED_NA_KEY] = forced
    return {k: labels[k] for k in (*JUDGE_FIELDS, FORCED_NA_KEY)}


# ----------------------------------------------------------------------------------------------
# Settings

STRUCTURED_OUTPUT_FORMS = ("off", "json_object", "json_schema")


def default_config_path() -> Path:
    """The judge defaults shipped inside the package (a wheel carries them like the checkout)."""
    return Path(__file__).resolve().with_name("judge_defaults.yaml")


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
    extra_body: dict[str, Any] = field(default_factory=dict)  # e.g. {"reasoning_effort": "low"}

    def __post_init__(self) -> None:
        if self.structured_output is True:
            self.structured_output = "json_object"
        elif self.structured_output in (False, None):
            self.structured_output = "off"

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
        if not isinstance(self.extra_body, dict):
            raise bad("judge extra_body must be a mapping")
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
            "extra_body": strip_secrets(self.extra_body),
        }

    def public_dict(self) -> dict[str, Any]:
        """Provenance dump: every setting, no credential (the key's *source* name only)."""
        d = asdict(self)
        d["extra_body"] = strip_secrets(d["extra_body"])
        d["api_key_env"] = judge_api_key_source()
        d["prompt_version"] = load_judge_prompts()["version"]
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
        if v is None:
            continue
        values[k] = v


def load_judge_settings(
    metadata: Mapping[str, Any] | None = None,
    cli: Mapping[str, Any] | None = None,
    config_path: str | os.PathLike | None = None,
    environ: Mapping[str, str] | None = None,
    validate: bool = True,
) -> JudgeSettings:
    """Settings from, in increasing priority: the config file (``config_path``, else
    ``$EDUFAIR_JUDGE_CONFIG``, else the packaged ``judge_defaults.yaml``), the
    ``metadata`` dict (lm-eval ``--metadata`` ``edufair.judge``), environment variables
    (EDUFAIR_JUDGE_BASE_URL, _MODEL, _CONCURRENCY, _STRUCTURED_OUTPUT, _MAX_RETRIES, _TIMEOUT_S),
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


# ----------------------------------------------------------------------------------------------
# Calling the judge

TRANSPORT_KINDS = ("timeout", "connection", "http_429", "http_5xx", "http_4xx", "bad_body", "client_error")
OUTPUT_KINDS = ("empty", "invalid_json", "wrong_fields", "wrong_type", "bad_value", "inconsistent")
NON_RETRYABLE = ("http_4xx",)


class _CallError(Exception):
    def __init__(self, kind: str, detail: str, raw: str | None = None):
        super().__init__(f"{kind}: {detail}")
        self.kind, self.detail, self.raw = kind, detail, raw


def _classify(exc: Exception) -> _CallError:
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return _CallError("timeout", "request timed out")
    if isinstance(exc, openai.APIConnectionError):
        return _CallError("connection", type(exc.__cause__ or exc).__name__)
    if isinstance(exc, openai.APIStatusError):
        code = exc.status_code
        kind = "http_429" if code == 429 else "http_5xx" if code >= 500 else "http_4xx"
        if code in (408, 409):
            kind = "http_5xx"  # transient by HTTP semantics: retried like a server error
        return _CallError(kind, f"HTTP {code}")
    if isinstance(exc, (openai.APIResponseValidationError, json.JSONDecodeError)):
        return _CallError("bad_body", f"response body is not a valid chat completion ({type(exc).__name__})")
    return _CallError("client_error", f"{type(exc).__name__}")


def summarize_judgements(judgements: list[list[TurnJudgement]]) -> dict[str, Any]:
    """{"turns", "ok", "cached", "missing", "missing_by_kind": {kind: n}}."""
    out: dict[str, Any] = {"turns": 0, "ok": 0, "cached": 0, "missing": 0, "missing_by_kind": {}}
    for dialogue in judgements:
        for j in dialogue:
            out["turns"] += 1
            if j.status == JUDGE_OK:
                out["ok"] += 1
                out["cached"] += int(j.cached)
            else:
                out["missing"] += 1
                kind = (j.reason or "unknown").split(":", 1)[0]
                out["missing_by_kind"][kind] = out["missing_by_kind"].get(kind, 0) + 1
    return out


class _Stats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests = 0
        self.failed_attempts: dict[str, int] = {}

    def request(self) -> None:
        with self.lock:
            self.requests += 1

    def failed(self, kind: str) -> None:
        with self.lock:
            self.failed_attempts[kind] = self.failed_attempts.get(kind, 0) + 1


def _backoff(settings: JudgeSettings, attempt: int) -> float:
    delay = min(settings.backoff_max_s, settings.backoff_base_s * (2 ** (attempt - 1)))
    return random.uniform(delay / 2, delay)  # "equal jitter"


def _call_once(client, settings: JudgeSettings, messages: list[dict[str, str]]) -> tuple[str, str | None]:
    kwargs: dict[str, Any] = {
        "model": settings.model,
        "messages": messages,
        "temperature": settings.temperature,
        "max_tokens": settings.max_tokens,
    }
    rf = settings.response_format()
    if rf is not None:
        kwargs["response_format"] = rf
    if settings.extra_body:
        kwargs["extra_body"] = dict(settings.extra_body)
    try:
        resp = client.chat.completions.create(**kwargs)
    except Exception as exc:  # noqa: BLE001 - classified, retried or reported
        raise _classify(exc) from exc
    choices = getattr(resp, "choices", None)
    if not choices:
        raise _CallError("bad_body", "no choices in the response")
    choice = choices[0]
    message = getattr(choice, "message", None)
    content = getattr(message, "content", None) if message is not None else None
    return content if isinstance(content, str) else "", getattr(choice, "finish_reason", None)


def judge_turn(
    client,
    settings: JudgeSettings,
    transcript: Transcript,
    turn_index: int,
    cache: CallCache | None = None,
    stats: _Stats | None = None,
    sleep=time.sleep,
) -> TurnJudgement:
    """Label one tutor turn: cache, then up to 1 + max_retries attempts with backoff."""
    messages = build_messages(transcript, turn_index)
    key_obj = {"namespace": "judge", **settings.output_identity(), "messages": messages}
    if cache is not None:
        hit = cache.get(key_obj)
        if isinstance(hit, dict) and isinstance(hit.get("content"), str):
            try:
                labels = parse_judge_output(hit["content"])
                return TurnJudgement(turn_index, JUDGE_OK, labels=labels, raw=hit["content"], attempts=0, cached=True)
            except JudgeOutputError:
                pass  # parser changed since: call again
    attempts = 0
    last: _CallError | None = None
    last_raw: str | None = None
    total = 1 + settings.max_retries
    while attempts < total:
        if attempts:
            sleep(_backoff(settings, attempts))
        attempts += 1
        if stats:
            stats.request()
        try:
            content, finish = _call_once(client, settings, messages)
            last_raw = content
            try:
                labels = parse_judge_output(content)
            except JudgeOutputError as exc:
                suffix = f" (finish_reason={finish})" if finish not in (None, "stop") else ""
                raise _CallError(exc.kind, exc.detail + suffix, raw=content) from None
        except _CallError as err:
            last = err
            if stats:
                stats.failed(err.kind)
            if err.kind in NON_RETRYABLE:
                break
            continue
        if cache is not None:
            cache.put(key_obj, {"content": content, "finish_reason": finish})
        return TurnJudgement(turn_index, JUDGE_OK, labels=labels, raw=content, attempts=attempts)
    assert last is not None
    return TurnJudgement(
        turn_index,
        JUDGE_MISSING,
        labels=None,
        reason=f"{last.kind}: {last.detail} (after {attempts} attempt{'s' if attempts != 1 else ''})",
        raw=last_raw,
        attempts=attempts,
    )


def missing_judgements(transcript: Transcript, reason: str) -> list[TurnJudgement]:
    return [TurnJudgement(i, JUDGE_MISSING, reason=reason) for i in transcript.tutor_turn_indices()]


def make_client(settings: JudgeSettings):
    import openai

    return openai.OpenAI(base_url=settings.base_url, api_key=judge_api_key(), max_retries=0, timeout=settings.timeout_s)


def judge_transcripts(
    transcripts: list[Transcript],
    settings: JudgeSettings,
    cache: CallCache | None = None,
    progress: bool = True,
    summary: dict[str, Any] | None = None,
) -> list[list[TurnJudgement]]:
    """One list of TurnJudgement per transcript (one per tutor turn, in turn order).

    Dialogues run concurrently on ``settings.concurrency`` workers; the turns of one dialogue are
    issued in order by one worker (shared prefix). If ``summary`` is a dict it is filled with
    ``summarize_judgements`` plus "requests" (HTTP calls made) and "failed_attempts" by kind."""
    from tqdm.auto import tqdm

    settings.validate()
    client = make_client(settings)
    stats = _Stats()
    n_turns = sum(len(t.tutor_turn_indices()) for t in transcripts)
    bar = tqdm(total=n_turns, desc=f"judge {settings.model}", unit="turn", disable=not progress)
    bar_lock = threading.Lock()

    def work(t: Transcript) -> list[TurnJudgement]:
        out = []
        for i in t.tutor_turn_indices():
            out.append(judge_turn(client, settings, t, i, cache=cache, stats=stats))
            with bar_lock:
                bar.update(1)
        return out

    try:
        with ThreadPoolExecutor(max_workers=settings.concurrency, thread_name_prefix="edufair-judge") as pool:
            results = list(pool.map(work, transcripts))
    finally:
        bar.close()
        try:
            client.close()
        except Exception:  # pragma: no cover
            pass
    if summary is not None:
        summary.update(summarize_judgements(results))
        summary["requests"] = stats.requests
        summary["failed_attempts"] = dict(sorted(stats.failed_attempts.items()))
    return results
