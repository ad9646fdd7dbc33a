"""What EduFair needs from a running lm-eval evaluation that lm-eval does not hand to tasks: the LM
object ``evaluate`` is using, the seeds of ``simple_evaluate``, and a few facts about that LM.

Contract tests: ``tests/lmeval/test_contracts.py``.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from edufair_metrics.errors import EduFairError

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


def unwrap(lm):
    """The model inside lm-eval's CachingLM (``--use_cache``), or ``lm`` itself."""
    from lm_eval.api.model import CachingLM

    return lm.lm if isinstance(lm, CachingLM) else lm


def is_api_model(lm) -> bool:
    from lm_eval.models.api_models import TemplateAPI

    return isinstance(unwrap(lm), TemplateAPI)


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


def harness_seeds() -> dict[str, Any]:
    """lm-eval's seeds: the arguments of ``simple_evaluate`` on the call stack."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "simple_evaluate" and frame.f_globals.get("__name__") == "lm_eval.evaluator":
            loc = frame.f_locals
            return {k: loc.get(k) for k in ("random_seed", "numpy_random_seed", "torch_random_seed", "fewshot_random_seed")}
        frame = frame.f_back
    return {}


def api_seed(lm) -> Any:
    """The ``seed`` an API model sends with each request (TemplateAPI keeps it privately)."""
    return getattr(unwrap(lm), "_seed", None)


def install_excepthook() -> None:
    """Under the lm_eval CLI an EduFair input error reaches the top level: print it as one line
    (exit status 1) instead of a traceback. ``EDUFAIR_TRACEBACK=1`` shows the traceback too.
    Installed once per process, when the first EduFair task is built."""
    import os

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
    from edufair_metrics.lmeval.models import prompt_text

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
