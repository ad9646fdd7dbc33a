"""What EduFair needs from a running lm-eval evaluation that lm-eval does not hand to tasks: the LM
object ``evaluate`` is using, the seeds of ``simple_evaluate``, and a few facts about that LM.

Contract tests: ``tests/lmeval/test_contracts.py``.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any
from urllib.parse import urlsplit

from edufair_metrics.cache import model_identity
from edufair_metrics.errors import EduFairError
from edufair_metrics.lmeval.lm import is_api_model, prompt_text, unwrap

log = logging.getLogger("edufair")


def find_harness_lm(chat_template=None):
    """The LM object ``lm_eval.evaluator.evaluate`` is running.

    First the documented route: under ``--apply_chat_template`` evaluate passes
    ``lm.apply_chat_template`` as ``chat_template``, a bound method whose ``__self__`` is the LM
    (with ``--use_cache``, the model inside lm-eval's CachingLM: tutor calls then skip lm-eval's
    cache, and EduFair's own call cache still stores every turn). Only without it is the LM taken
    from the call stack: the local ``lm`` of ``evaluate``.
    """
    owner = getattr(chat_template, "__self__", None)
    if owner is not None:
        return owner
    stack_lm = _evaluate_lm_on_stack()
    if stack_lm is not None:
        return stack_lm
    raise EduFairError("the EduFair task must be run by lm_eval.evaluator.evaluate (lm_eval CLI or simple_evaluate)")


def _evaluate_lm_on_stack():
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "evaluate" and frame.f_globals.get("__name__") == "lm_eval.evaluator":
            return frame.f_locals.get("lm")
        frame = frame.f_back
    return None


def warn_if_unbatched(lm) -> None:
    real = unwrap(lm)
    if is_api_model(real):
        if int(getattr(real, "_concurrent", 1) or 1) <= 1:
            log.warning(
                "edufair: the tutor endpoint gets one request at a time; pass num_concurrent=N in --model_args "
                "so all dialogues of a turn are sent concurrently"
            )
    elif str(getattr(real, "batch_size", "")) == "1":
        log.warning("edufair: the tutor runs with batch size 1; pass --batch_size auto so each turn is one batched call")


def launched_processes(environ: dict[str, str] | None = None) -> int:
    """How many processes a launcher started for this job (``accelerate launch``, ``torchrun``:
    ``WORLD_SIZE`` next to ``LOCAL_RANK``); 1 without one."""
    env = os.environ if environ is None else environ
    if "LOCAL_RANK" not in env and "TORCHELASTIC_RUN_ID" not in env:
        return 1
    try:
        return max(1, int(env.get("WORLD_SIZE") or 1))
    except ValueError:
        return 1


def _simple_evaluate_arguments() -> dict[str, Any] | None:
    """The local variables of the ``lm_eval.evaluator.simple_evaluate`` call on the stack (its
    arguments), or None outside one."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "simple_evaluate" and frame.f_globals.get("__name__") == "lm_eval.evaluator":
            return frame.f_locals
        frame = frame.f_back
    return None


def harness_seeds() -> dict[str, Any]:
    """lm-eval's seeds: the arguments of ``simple_evaluate`` on the call stack."""
    loc = _simple_evaluate_arguments()
    if loc is None:
        return {}
    return {k: loc.get(k) for k in ("random_seed", "numpy_random_seed", "torch_random_seed", "fewshot_random_seed")}


def logs_samples() -> bool | None:
    """Whether the running evaluation keeps the samples (``--log_samples``), where the records go;
    None when the task is not built by ``simple_evaluate``."""
    loc = _simple_evaluate_arguments()
    return None if loc is None else bool(loc.get("log_samples"))


def api_seed(lm) -> Any:
    """The ``seed`` an API model sends with each request (TemplateAPI keeps it privately)."""
    return getattr(unwrap(lm), "_seed", None)


def install_excepthook() -> None:
    """Under the lm_eval CLI an EduFair input error reaches the top level: print it as one line
    (exit status 1) instead of a traceback. ``EDUFAIR_TRACEBACK=1`` shows the traceback too.
    Installed once per process, when the first EduFair task is built."""
    if getattr(sys.excepthook, "edufair", False):
        return
    previous = sys.excepthook

    def hook(exc_type, exc, tb):
        err = exc
        while err is not None and not isinstance(err, EduFairError):
            err = err.__cause__ or err.__context__
        if err is None or os.environ.get("EDUFAIR_TRACEBACK"):
            previous(exc_type, exc, tb)
        if err is not None:
            print(f"edufair: error: {err}", file=sys.stderr)

    hook.edufair = True
    sys.excepthook = hook


# The answer given to lm-eval's own request of a finished EduFair dialogue (it is never read: the
# transcript is the instance's first response).
PLACEHOLDER_ANSWER = ""


def answer_placeholders_locally(lm, placeholder_prompt: str) -> None:
    """After ``build_all_requests`` returns, lm-eval sends one ``generate_until`` per document to
    the harness LM. For EduFair documents that request carries only a placeholder prompt: answer
    it here, without any model call, and pass every other request (other tasks in the same run)
    through. Installed once per LM object; safe to call for several tasks."""
    prompts = getattr(lm, "_edufair_placeholder_prompts", None)
    if prompts is not None:
        prompts.add(placeholder_prompt)
        return
    prompts = {placeholder_prompt}
    original = lm.generate_until

    def generate_until(requests, *args, **kwargs):
        local = [prompt_text(r.args[0]) in prompts for r in requests]
        if not any(local):
            return original(requests, *args, **kwargs)
        rest = [r for r, is_local in zip(requests, local) if not is_local]
        answers = iter(original(rest, *args, **kwargs) if rest else [])
        return [PLACEHOLDER_ANSWER if is_local else next(answers) for is_local in local]

    lm.generate_until = generate_until
    lm._edufair_placeholder_prompts = prompts


_LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1", "[::1]", "0.0.0.0")


def tutor_identity(lm, metadata_args: dict[str, Any] | None) -> tuple[dict[str, Any] | None, str]:
    """What determines the tutor's answers, taken from the LM object itself, with the task
    metadata only as a fallback: ``(identity or None, source)`` with source ``"model"``,
    ``"metadata"`` or ``"none"``.

    The metadata holds the model arguments only under the lm_eval CLI; with
    ``simple_evaluate(model=<LM object>)`` or a custom TaskManager it holds none of them, and two
    different tutors would share cache keys. With no identity at all the caller must not cache.
    """
    real = unwrap(lm)
    facts = _identity_facts(real)
    if facts:
        return model_identity(type(real).__name__, facts), "model"
    if metadata_args:
        return model_identity(type(real).__name__, metadata_args), "metadata"
    return None, "none"


def _identity_facts(real) -> dict[str, Any]:
    """Model-defining facts of lm-eval's API models, vLLM and HFLM (no network call: HFLM's own
    ``get_model_info`` asks the Hub for the model's sha), else a custom LM's ``get_model_info()``."""
    if is_api_model(real):
        model = getattr(real, "model", None)
        if not model:
            return {}
        return {"model": str(model), "endpoint": _endpoint_identity(getattr(real, "base_url", None))}
    vllm_args = getattr(real, "model_args", None)
    if isinstance(vllm_args, dict) and vllm_args.get("model"):  # lm-eval's VLLM
        keep = ("model", "revision", "dtype", "tokenizer", "tokenizer_revision", "quantization", "max_model_len")
        facts = {k: _plain(vllm_args.get(k)) for k in keep if vllm_args.get(k) is not None}
        lora = getattr(real, "lora_request", None)
        if lora is not None:
            facts["lora"] = str(getattr(lora, "lora_path", None) or getattr(lora, "lora_local_path", None) or lora)
        return facts
    model = getattr(real, "_model", None)
    if model is not None and hasattr(real, "pretrained"):  # lm-eval's HFLM
        pretrained = real.pretrained
        name = pretrained if isinstance(pretrained, str) else getattr(getattr(model, "config", None), "_name_or_path", "")
        facts = {"pretrained": str(name or ""), "class": type(model).__name__,
                 "dtype": str(getattr(model, "dtype", "")),
                 "parameters": int(sum(p.numel() for p in model.parameters())) if hasattr(model, "parameters") else -1}
        for attr in ("revision", "peft", "delta"):
            value = getattr(real, attr, None)
            if value:
                facts[attr] = str(value)
        return facts if facts["pretrained"] else {}
    info = getattr(real, "get_model_info", None)  # lm-eval's optional per-model info hook
    if callable(info):
        try:
            facts = info()
        except Exception:  # noqa: BLE001 - a custom LM's hook failing means "no identity", not a crash
            return {}
        if isinstance(facts, dict) and facts:
            return {str(k): _plain(v) for k, v in facts.items()}
    return {}


def _endpoint_identity(base_url: str | None) -> str | None:
    """The endpoint as part of a tutor's identity: scheme, host and path. A loopback server's port
    is left out (``edufair demo`` picks a free port each run, and the cache must still hit)."""
    if not base_url:
        return None
    parts = urlsplit(str(base_url))
    host = (parts.hostname or "").lower()
    netloc = "loopback" if host in _LOOPBACK_HOSTS else parts.netloc.lower()
    return f"{parts.scheme}://{netloc}{parts.path.rstrip('/')}"


def _plain(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool)) else str(value)


def evaluation_tracker() -> Any:
    """The EvaluationTracker that ``simple_evaluate`` received (the lm_eval CLI always passes
    one), or None: it writes the results and samples files."""
    return (_simple_evaluate_arguments() or {}).get("evaluation_tracker")


def evaluation_output_path() -> str | None:
    """``--output_path`` of the running evaluation: the ``output_path`` of the EvaluationTracker
    that ``simple_evaluate`` received (the lm_eval CLI always passes one); None without it."""
    path = getattr(evaluation_tracker(), "output_path", None)
    return str(path) if path else None
