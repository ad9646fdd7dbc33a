"""The EduFair lm-eval task: a ConfigurableTask whose ``build_all_requests`` runs the paper's
multi-turn tutoring dialogues with the harness's own LM as the tutor.

Why here: lm-eval 0.4.13 has no multi-turn API and hands no LM to tasks; ``build_all_requests``
is a public override point that receives ``--limit``, ``--samples``, rank and world size exactly as
the harness intends, and the LM object ``evaluate`` is using is found on the call stack (see
``shared/design/lm-eval-internals.md`` §2-3). Per turn, all active dialogues advance together: one
batched ``generate_until`` for the tutor, one for the student. Each finished dialogue becomes one
Instance whose first response is the transcript (JSON); the judge filter and ``process_results``
turn it into scores.
"""

from __future__ import annotations

import json
import logging
import math
import os
import socket
import sys
from pathlib import Path
from typing import Any

from lm_eval.api.instance import Instance
from lm_eval.api.task import ConfigurableTask

from edufair_metrics import PROTOCOL_VERSION, __version__
from edufair_metrics.dialogue import DialogueState, stop_after_tutor_turn
from edufair_metrics.errors import EduFairError
from edufair_metrics.generation import CachedGenerator, build_student, describe_error, failure_kind, model_identity
from edufair_metrics.io import sha256_file
from edufair_metrics.records import (
    ALL_METRICS,
    STOP_STUDENT_FAILED,
    STOP_TUTOR_FAILED,
    TASK_DOMAINS,
)
from edufair_metrics.settings import redact, resolve_runner_settings

log = logging.getLogger("edufair")

def _edufair_excepthook(previous):
    """Under the lm_eval CLI an EduFair input error reaches the top level: print it as one line
    (exit status 1) instead of a traceback. EDUFAIR_TRACEBACK=1 shows the traceback too."""

    def hook(exc_type, exc, tb):
        err = exc
        while err is not None and not isinstance(err, EduFairError):
            err = err.__cause__ or err.__context__
        if err is None or os.environ.get("EDUFAIR_TRACEBACK"):
            previous(exc_type, exc, tb)
        if err is not None:
            print(f"edufair: error: {err}", file=sys.stderr)

    hook.edufair = True
    return hook


if not getattr(sys.excepthook, "edufair", False):
    sys.excepthook = _edufair_excepthook(sys.excepthook)

HARNESS_PLACEHOLDER = "EduFair: this dialogue is finished; reply with one token."


def find_harness_lm(chat_template=None):
    """The LM object ``lm_eval.evaluator.evaluate`` is running (the CachingLM with --use_cache)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "evaluate" and frame.f_globals.get("__name__") == "lm_eval.evaluator":
            return frame.f_locals["lm"]
        frame = frame.f_back
    owner = getattr(chat_template, "__self__", None)
    if owner is not None:
        return owner
    raise EduFairError("the EduFair task must be run by lm_eval.evaluator.evaluate (lm_eval CLI or simple_evaluate)")


def _unwrap(lm):
    return getattr(lm, "lm", lm)  # CachingLM keeps the real model in .lm


def _warn_batching(lm) -> None:
    real = _unwrap(lm)
    from lm_eval.models.api_models import TemplateAPI

    if isinstance(real, TemplateAPI):
        if int(getattr(real, "_concurrent", 1) or 1) <= 1:
            log.warning(
                "edufair: the tutor endpoint gets one request at a time; pass num_concurrent=N in --model_args "
                "so all dialogues of a turn are sent concurrently"
            )
    elif str(getattr(real, "batch_size", "")) == "1" or getattr(real, "batch_size", None) == 1:
        log.warning("edufair: the tutor runs with batch size 1; pass --batch_size auto so each turn is one batched call")


_REACHABLE: set[tuple[str, int]] = set()


def _student_base_url(student: dict[str, Any]) -> str | None:
    """The student's endpoint, for lm-eval API models only (local-chat-completions, ...)."""
    import lm_eval.models  # noqa: F401
    from lm_eval.api.registry import get_model
    from lm_eval.models.api_models import TemplateAPI

    try:
        if not issubclass(get_model(student["model"]), TemplateAPI):
            return None
    except (KeyError, ValueError, TypeError):
        return None
    args = student.get("model_args") or {}
    if isinstance(args, str):
        from lm_eval.utils import simple_parse_args_string

        args = simple_parse_args_string(args)
    url = args.get("base_url")
    return str(url) if url else None


def preflight(what: str, url: str | None, timeout_s: float = 3.0) -> None:
    """A TCP connect to the endpoint's host:port (no request, no credentials), at most once per
    endpoint and process. Skip with ``edufair.preflight: false`` or ``EDUFAIR_SKIP_PREFLIGHT=1``
    (e.g. when the server is started later by the same job)."""
    if not url:
        return
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return
    port = parts.port or (443 if parts.scheme == "https" else 80)
    if (parts.hostname, port) in _REACHABLE:
        return
    try:
        socket.create_connection((parts.hostname, port), timeout=timeout_s).close()
    except OSError as exc:
        raise EduFairError(
            f"{what}: endpoint {url} is unreachable ({exc.strerror or exc}); start the server or fix base_url "
            "(skip this check with EDUFAIR_SKIP_PREFLIGHT=1)"
        ) from None
    _REACHABLE.add((parts.hostname, port))


class EduFairTask(ConfigurableTask):
    """One task = one (condition, domain); one document = one (question, condition level)."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        config = dict(config or {})
        config.pop("class", None)
        yaml_block = dict(config.pop("edufair", {}) or {})
        # condition and domain are fixed by each task YAML (edufair_cell), never by --metadata.
        cell = config.pop("edufair_cell", None) or {}
        self.condition = cell.get("condition")
        self.domain = cell.get("domain")
        if self.domain not in TASK_DOMAINS.values():
            raise EduFairError(f"{config.get('task')}: unknown domain '{self.domain}'")
        self.settings = resolve_runner_settings(yaml_block, config.get("metadata") or {})
        # The judge filter's settings come from the same merged settings (YAML < file < metadata < env);
        # `enabled: false` records every label as missing ("judge disabled"), e.g. for --predict_only.
        judge_cfg = dict(self.settings.get("judge") or {})
        enabled = bool(judge_cfg.pop("enabled", True))
        for pipeline in config.get("filter_list") or []:
            for step in pipeline.get("filter", []):
                step["judge"] = {**(step.get("judge") or {}), **judge_cfg}
                step["enabled"] = enabled
                step.setdefault("cache_path", self._cache_path())
        # issue 7: fail fast, before any dialogue runs, on a judge without endpoint and on
        # unreachable student/judge endpoints (one line naming the endpoint).
        if enabled:
            from edufair_metrics.judge import load_judge_settings

            judge_url = load_judge_settings(metadata=judge_cfg).base_url
        else:
            judge_url = None
        super().__init__(config=config)  # loads the bank and checks the levels: static input first
        if self.settings.get("preflight", True) and os.environ.get("EDUFAIR_SKIP_PREFLIGHT", "") in ("", "0"):
            preflight("edufair.student", _student_base_url(self.settings["student"]))
            preflight("edufair.judge", judge_url)

    # ---- documents -------------------------------------------------------------------------
    def download(self, dataset_kwargs: dict[str, Any] | None = None, **kwargs) -> None:
        import datasets

        from edufair_metrics.bank import load_bank
        from edufair_metrics.prompts import expand_documents

        items = load_bank(self.domain, self.settings.get("bank_dir"))
        docs = expand_documents(items, self.condition, self.settings.get("levels"))
        if not docs:
            raise EduFairError(f"{self.config.task}: the bank for {self.domain} is empty")
        self.dataset = datasets.DatasetDict({"test": datasets.Dataset.from_list(docs)})

    # ---- the dialogue runner ---------------------------------------------------------------
    def _cache_path(self) -> str | None:
        cache = self.settings.get("cache") or {}
        if cache.get("enabled", True) is False:
            return None
        from edufair_metrics.cache import default_cache_path

        if cache.get("path"):
            return str(cache["path"])
        if cache.get("dir"):
            from edufair_metrics.cache import CACHE_FILENAME

            return str(Path(cache["dir"]).expanduser() / CACHE_FILENAME)
        return str(default_cache_path())

    def _tutor_identity(self, lm) -> dict[str, Any]:
        meta = self.config.metadata or {}
        args = {k: v for k, v in meta.items() if k not in ("edufair", "version", "config_source", "task", "group")}
        return model_identity(type(_unwrap(lm)).__name__, args)

    def build_all_requests(
        self,
        *,
        limit=None,
        samples=None,
        rank=0,
        world_size=1,
        system_instruction=None,
        apply_chat_template=False,
        chat_template=None,
        **kwargs,
    ) -> None:

        tutor_lm = find_harness_lm(chat_template)
        _warn_batching(tutor_lm)
        if not apply_chat_template:
            log.info("edufair: dialogues are always rendered with each model's own chat template")
        doc_pairs = list(self.doc_iterator(rank=rank, limit=limit, samples=samples, world_size=world_size))
        if not doc_pairs:
            raise ValueError(f"{self.config.task}: no documents to run")
        cache_path = self._cache_path()
        tutor_gk = dict(self.config.generation_kwargs or {})
        student_cfg = self.settings["student"]
        student_gk = dict(student_cfg.get("generation_kwargs") or {"temperature": 0, "max_gen_toks": 2048, "until": []})
        tutor = CachedGenerator(tutor_lm, "tutor", self._tutor_identity(tutor_lm), cache_path, self.config.task)
        student = CachedGenerator(
            build_student(student_cfg), "student", model_identity(student_cfg["model"], student_cfg.get("model_args")),
            cache_path, self.config.task,
        )
        _RUN_PROVENANCE[self.config.task] = run_provenance(self, tutor_lm, tutor.identity, student.identity, tutor_gk, student_gk)
        states = [DialogueState(doc=doc) for _, doc in doc_pairs]
        self.dialogue_states = states
        max_turns = int(self.settings["max_tutor_turns"])
        log.info("edufair: %s: %d dialogues, up to %d tutor turns", self.config.task, len(states), max_turns)

        from tqdm import tqdm

        with tqdm(total=max_turns, desc=f"{self.config.task} turns", unit="turn") as bar:
            # The student answers the opening question first.
            self._advance(student, states, "student", student_gk, lambda s: s.student_messages())
            for _turn in range(max_turns):
                active = [s for s in states if not s.done]
                if not active:
                    break
                self._advance(tutor, active, "tutor", tutor_gk, lambda s: s.tutor_messages(system_instruction))
                for s in active:
                    if not s.done:
                        s.stop_reason = stop_after_tutor_turn(s, max_turns)
                active = [s for s in active if not s.done]
                bar.update(1)
                bar.set_postfix(active=len(active))
                if not active:
                    break
                self._advance(student, active, "student", student_gk, lambda s: s.student_messages())

        repeats = self.config.repeats or 1
        # lm-eval makes one more generate_until call per document after this method returns. The
        # dialogue is already finished, so that call gets a tiny prompt and one token: re-sending
        # the whole conversation would cost a full prefill per dialogue (real money for API tutors).
        # The transcript is the instance's first response and, in full, in the samples file.
        done_ctx = tutor_lm.apply_chat_template([{"role": "user", "content": HARNESS_PLACEHOLDER}], add_generation_prompt=True)
        instances = []
        for (doc_id, doc), state in zip(doc_pairs, states):
            transcript = state.to_transcript(task=self.config.task, doc_id=doc_id)
            inst = Instance(
                request_type="generate_until",
                doc=doc,
                arguments=(done_ctx, {"max_gen_toks": 1, "until": [], "temperature": 0}),
                idx=0,
                metadata=(self.config.task, doc_id, repeats),
            )
            inst.resps.append(json.dumps(transcript.to_dict(), ensure_ascii=False))
            instances.append(inst)
        self._instances = instances

    def _advance(self, generator, states, role: str, gen_kwargs: dict[str, Any], messages) -> None:
        """One batched call for all ``states``; failures end only the dialogues they hit."""
        contexts = [generator.render(messages(s)) for s in states]
        outputs = generator.generate(contexts, gen_kwargs, [s.doc for s in states])
        for state, out in zip(states, outputs):
            if isinstance(out, Exception):
                state.stop_reason = STOP_STUDENT_FAILED if role == "student" else STOP_TUTOR_FAILED
                # "[kind]" (generation.failure_kind) is what the end-of-run summary and the
                # failed_dialogues breakdown count (issue 7).
                state.error = f"{role} call failed [{failure_kind(out)}]: {describe_error(out)}"
                log.warning("edufair: %s (question %s, level %s)", state.error, state.doc["question_id"], state.doc["level"])
            else:
                state.add(role, out)

    # ---- metrics ------------------------------------------------------------------------------
    def override_metric(self, metric_name: str) -> None:
        """``--predict_only`` replaces the metrics by "bypass": then generate transcripts only. The
        judge is switched off (every label recorded missing, "judge disabled"), and the full record
        still lands in the samples file so that ``edufair judge`` can label it later."""
        super().override_metric(metric_name)
        if metric_name != "bypass":
            return
        from lm_eval.filters import build_filter_ensemble

        self._predict_only = True
        pipelines = []
        for pipeline in self.config.filter_list or []:
            steps = []
            for step in pipeline["filter"]:
                step["enabled"] = False
                steps.append([step["function"], {k: v for k, v in step.items() if k != "function"}])
            pipelines.append(build_filter_ensemble(pipeline["name"], steps))
        self._filters = pipelines
        self._aggregation_list["edufair_record"] = complete_dialogues
        self._higher_is_better["edufair_record"] = True

    def process_results(self, doc, results):
        out = process_results(doc, results)
        if getattr(self, "_predict_only", False):
            return {"bypass": None, "edufair_record": out["edufair_record"]}
        return out


# task name -> run provenance, set by build_all_requests (the records of a task are scored in the
# same process right after). Never holds secrets: identities go through ``redact``.
_RUN_PROVENANCE: dict[str, dict[str, Any]] = {}


def _sha256_file(path: Path) -> str | None:
    try:
        return sha256_file(path)
    except OSError:
        return None


def _harness_seeds() -> dict[str, Any]:
    """lm-eval's seeds (simple_evaluate's arguments), found on the stack like the LM."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "simple_evaluate" and frame.f_globals.get("__name__") == "lm_eval.evaluator":
            loc = frame.f_locals
            return {k: loc.get(k) for k in ("random_seed", "numpy_random_seed", "torch_random_seed", "fewshot_random_seed")}
        frame = frame.f_back
    return {}


def run_provenance(task: "EduFairTask", tutor_lm, tutor_identity, student_identity, tutor_gk, student_gk) -> dict[str, Any]:
    """Everything a pooled report must agree on (issue 7): versions, prompt and bank hashes,
    model identities (no secrets), decoding settings and seeds."""
    from edufair_metrics.bank import bank_path
    from edufair_metrics.judge import judge_prompts_path

    bank_file = bank_path(task.domain, task.settings.get("bank_dir"))
    return {
        "bank": {"domain": task.domain, "file": bank_file.name, "sha256": _sha256_file(bank_file)},
        "judge_prompts_sha256": _sha256_file(judge_prompts_path()),
        "models": {"tutor": tutor_identity, "student": student_identity},
        "decoding": {"tutor": tutor_gk, "student": student_gk},
        "max_tutor_turns": task.settings.get("max_tutor_turns"),
        "seeds": {**_harness_seeds(), "tutor_api_seed": getattr(_unwrap(tutor_lm), "_seed", None)},
    }


# judge settings that do not change a label (transport only): not part of "decoding"
_JUDGE_NOT_DECODING = ("model", "base_url", "enabled", "concurrency", "timeout_s", "max_retries", "backoff_base_s", "backoff_max_s")


def provenance_for(record: dict[str, Any]) -> dict[str, Any]:
    from edufair_metrics.prompts import protocol_hash

    out = {"package_version": __version__, "protocol_version": PROTOCOL_VERSION, "protocol_sha256": protocol_hash()}
    task = (record.get("transcript") or {}).get("task")
    out.update(_RUN_PROVENANCE.get(task or "", {}))
    judge = record.get("judge") or {}
    out.setdefault("models", {})["judge"] = redact({k: v for k, v in judge.items() if k in ("model", "base_url", "enabled")})
    out.setdefault("decoding", {})["judge"] = redact({k: v for k, v in judge.items() if k not in _JUDGE_NOT_DECODING})
    return out


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, Any]:
    """Per document: the full record (transcript, judge labels, scores) for the samples file,
    each of the nine scores for the per-metric means, and the score dict for the bias aggregates."""
    record = results[0]
    if isinstance(record, str):  # filter disabled: only the transcript is there
        raise EduFairError("edufair tasks need the judge filter (filter_list) to produce scores")
    record = dict(record)
    record.setdefault("provenance", provenance_for(record))
    scores = record["scores"]
    out: dict[str, Any] = {"edufair_record": record}
    for metric in ALL_METRICS:
        out[metric] = scores["scores"].get(metric)
    for agg in ("ped_abs_r", "conv_abs_r", "violations", "missing_label_rate"):
        out[agg] = scores
    # issue 7: dialogues ended by a student/tutor call that still failed after retries.
    out["failed_dialogues"] = int(record["transcript"].get("stop_reason") in (STOP_STUDENT_FAILED, STOP_TUTOR_FAILED))
    return out


def count(items: list[Any]) -> float:
    """Sum of 0/1 flags (e.g. failed_dialogues)."""
    return float(sum(int(x or 0) for x in items))


# ---- aggregations referenced from the YAML -------------------------------------------------------
def nanmean(items: list[Any]) -> float:
    """Mean over dialogues that have a value (None/NaN = no applicable turn or missing labels)."""
    vals = [float(x) for x in items if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return sum(vals) / len(vals) if vals else float("nan")


def complete_dialogues(items: list[Any]) -> float:
    """Number of dialogues that ended by the protocol's stop rule (not by a model failure)."""
    from edufair_metrics.records import Transcript

    return float(sum(1 for r in items if Transcript.from_dict(r["transcript"]).complete))
