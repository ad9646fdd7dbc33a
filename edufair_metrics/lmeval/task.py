"""The EduFair lm-eval task: a ConfigurableTask whose ``build_all_requests`` runs the paper's
multi-turn tutoring dialogues with the harness's own LM as the tutor, and the judge filter.

lm-eval 0.4.13 has no multi-turn API and hands no LM to tasks; ``build_all_requests`` is a public
override point that receives ``--limit``, ``--samples``, rank and world size exactly as the harness
intends. Each finished dialogue becomes one Instance whose first response is the transcript (JSON);
the judge filter and ``process_results`` turn it into scores.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any, Iterable

from lm_eval.api.filter import Filter
from lm_eval.api.instance import Instance
from lm_eval.api.task import ConfigurableTask

from edufair_metrics.cache import CachePolicy
from edufair_metrics.dialogue import DialogueState
from edufair_metrics.dialogue.generation import CachedGenerator
from edufair_metrics.dialogue.loop import run_dialogues
from edufair_metrics.errors import EduFairError
from edufair_metrics.lmeval import print_notices_once, quiet_request_bars
from edufair_metrics.lmeval.harness import (
    answer_placeholders_locally,
    api_seed,
    evaluation_output_path,
    find_harness_lm,
    harness_seeds,
    install_excepthook,
    is_api_model,
    tutor_identity,
    unwrap,
    warn_if_unbatched,
)
from edufair_metrics.lmeval.models import HarnessModel, build_student, endpoint_of, identity, prompt_text
from edufair_metrics.preflight import check_output_path, check_reachable, openai_key_exposure, preflight_enabled
from edufair_metrics.protocol import protocol_hash
from edufair_metrics.provenance import record_provenance, run_provenance
from edufair_metrics.records import ALL_METRICS, STOP_STUDENT_FAILED, STOP_TUTOR_FAILED, TASK_DOMAINS
from edufair_metrics.settings import resolve_runner_settings

log = logging.getLogger("edufair")

HARNESS_PLACEHOLDER = "EduFair: this dialogue is finished; reply with one token."

# task name -> run provenance, set by build_all_requests (the records of a task are scored in the
# same process right after). Never holds secrets: identities are stripped of credentials.
_RUN_PROVENANCE: dict[str, dict[str, Any]] = {}
# task name -> per-role call counts (failures.CallCounts dicts) of this process: the tutor and
# student ones set by build_all_requests, the judge's by JudgeFilter. Reported by the
# `edufair_calls` metric and written into the task's config, so that retried and absorbed failures
# are visible in results_*.json.
_CALL_COUNTS: dict[str, dict[str, dict[str, Any]]] = {}
# task name -> the task object of this process (its config receives the per-role call counts)
_TASKS: dict[str, "EduFairTask"] = {}

# task metadata keys that lm-eval adds and that are not tutor model arguments
_NOT_MODEL_ARGS = ("edufair", "version", "config_source", "task", "group", "edufair_calls")


class EduFairTask(ConfigurableTask):
    """One task = one (condition, domain); one document = one (question, condition level)."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        install_excepthook()
        print_notices_once()
        config = dict(config or {})
        config.pop("class", None)
        yaml_block = dict(config.pop("edufair", {}) or {})
        # condition and domain are fixed by each task YAML (edufair_cell), never by --metadata.
        cell = config.pop("edufair_cell", None) or {}
        self.condition = cell.get("condition")
        self.domain = cell.get("domain")
        if self.domain not in TASK_DOMAINS.values():
            raise EduFairError(f"{config.get('task')}: unknown domain '{self.domain}'")
        # Settings are resolved ONCE (edufair_metrics/settings: the whole precedence chain, the
        # judge's included; secrets and near misses of `edufair` in the metadata are errors).
        self.settings = resolve_runner_settings(yaml_block, config.get("metadata") or {})
        # The judge filter gets the resolved judge settings as plain data (not re-resolved there);
        # `enabled: false` records every label as missing (judge_disabled), e.g. for --predict_only.
        for pipeline in config.get("filter_list") or []:
            for step in pipeline.get("filter", []):
                step["judge"] = self.settings.judge.to_setting()
                step["enabled"] = self.settings.judge_enabled
                step["cache"] = self.settings.cache.to_setting()
        # Fail fast, before any dialogue runs, on unreachable student/judge endpoints (one line
        # naming the endpoint); a judge without endpoint already failed in resolve_runner_settings.
        judge_url = self.settings.judge.base_url if self.settings.judge_enabled else None
        super().__init__(config=config)  # loads the bank and checks the levels: static input first
        check_output_path(evaluation_output_path())  # before any dialogue: results must be savable
        student = self.settings.student
        student_url = endpoint_of(student.model, student.model_args)  # also: is the student model known?
        if preflight_enabled(self.settings.preflight):
            check_reachable("edufair.student", student_url)
            check_reachable("edufair.judge", judge_url)

    # ---- documents -------------------------------------------------------------------------
    def download(self, dataset_kwargs: dict[str, Any] | None = None, **kwargs) -> None:
        import datasets

        from edufair_metrics.bank import load_bank
        from edufair_metrics.protocol import expand_documents

        items = load_bank(self.domain, self.settings.bank_dir)
        self._sample_provenance = None
        if self.settings.sample is not None:
            # the paper's fixed stratified subsample: the same questions for every tutor and condition
            selected = self.settings.sample.select(items)
            self._sample_provenance = self.settings.sample.provenance(items, selected)
            items = selected
        levels = list(self.settings.levels) if self.settings.levels is not None else None
        docs = expand_documents(items, self.condition, levels)
        if self.settings.placebo is not None:  # one level again, independent tutor sampling
            docs = self.settings.placebo.expand(docs, str(self.config.task))
        if not docs:
            raise EduFairError(f"{self.config.task}: the bank for {self.domain} is empty")
        self.dataset = datasets.DatasetDict({"test": datasets.Dataset.from_list(docs)})

    # ---- the dialogue runner ---------------------------------------------------------------
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
        warn_if_unbatched(tutor_lm)
        student_url = endpoint_of(self.settings.student.model, self.settings.student.model_args)
        exposed = openai_key_exposure({"tutor": getattr(unwrap(tutor_lm), "base_url", None) if is_api_model(tutor_lm) else None,
                                       "student": student_url})
        if exposed:
            log.warning("edufair: OPENAI_API_KEY is set, and lm-eval sends it to the %s endpoint(s) and prints it in its "
                        "HTTP error messages; give the judge its key in EDUFAIR_JUDGE_API_KEY and unset OPENAI_API_KEY "
                        "unless those endpoints need it", " and ".join(exposed))
        if not apply_chat_template:
            log.info("edufair: dialogues are always rendered with each model's own chat template")
        doc_pairs = list(self.doc_iterator(rank=rank, limit=limit, samples=samples, world_size=world_size))
        if not doc_pairs:
            raise ValueError(f"{self.config.task}: no documents to run")
        tutor_gk = dict(self.config.generation_kwargs or {})
        student_cfg = self.settings.student
        student_gk = dict(student_cfg.generation_kwargs)
        meta = self.config.metadata or {}
        tutor_id, tutor_id_source = tutor_identity(tutor_lm, {k: v for k, v in meta.items() if k not in _NOT_MODEL_ARGS})
        student_id = identity(student_cfg.model, student_cfg.model_args)
        cache = self.settings.cache.open()
        tutor_cache = cache
        if cache is not None and tutor_id is None:
            tutor_cache = None
            log.warning("edufair: %s: the tutor (%s) has no identity EduFair can read (no model name, path or "
                        "model_args): its turns are not cached, so that another tutor can never receive them",
                        self.config.task, type(unwrap(tutor_lm)).__name__)
        tutor_id = tutor_id or {"kind": type(unwrap(tutor_lm)).__name__, "model_args": {}}
        tutor = CachedGenerator(HarnessModel(tutor_lm), "tutor", tutor_id, tutor_cache)
        student = CachedGenerator(HarnessModel(build_student(student_cfg.to_dict())), "student", student_id, cache)
        for generator in (tutor, student):
            generator.model.counts = generator.counts  # HTTP attempts, incl. lm-eval's silent retries

        from edufair_metrics.bank import bank_path
        from edufair_metrics.judge.prompt import judge_prompts_path

        _RUN_PROVENANCE[self.config.task] = run_provenance(
            bank_file=bank_path(self.domain, self.settings.bank_dir),
            domain=self.domain,
            judge_prompts_file=judge_prompts_path(),
            models={"tutor": {**tutor_id, "identity_source": tutor_id_source}, "student": student_id},
            decoding={"tutor": tutor_gk, "student": student_gk},
            max_tutor_turns=self.settings.max_tutor_turns,
            seeds={**harness_seeds(), "tutor_api_seed": api_seed(tutor_lm)},
            sample=getattr(self, "_sample_provenance", None),
        )
        states = [DialogueState(doc=doc) for _, doc in doc_pairs]
        max_turns = self.settings.max_tutor_turns
        log.info("edufair: %s: %d dialogues, up to %d tutor turns", self.config.task, len(states), max_turns)
        try:
            # one quiet block around the whole loop: with the overlap, calls of two threads would
            # otherwise restore lm-eval's per-call bars while the other call still runs
            with quiet_request_bars():
                run_dialogues(tutor, student, states, max_tutor_turns=max_turns, tutor_gen_kwargs=tutor_gk,
                              student_gen_kwargs=student_gk, system_instruction=system_instruction,
                              label=self.config.task, overlap=self.settings.overlap)
        finally:
            if cache is not None:
                cache.close()
            _TASKS[self.config.task] = self
            _CALL_COUNTS.setdefault(self.config.task, {}).update(
                {"tutor": tutor.counts.to_dict(), "student": student.counts.to_dict()})

        repeats = self.config.repeats or 1
        # lm-eval makes one more generate_until call per document after this method returns. The
        # dialogue is already finished: that request carries a placeholder prompt and is answered
        # locally, without a model call (no cost, nothing to fail, nothing re-sent on a resume).
        # The transcript is the instance's first response and, in full, in the samples file.
        done_ctx = tutor_lm.apply_chat_template([{"role": "user", "content": HARNESS_PLACEHOLDER}], add_generation_prompt=True)
        answer_placeholders_locally(tutor_lm, prompt_text(done_ctx))
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

    # ---- metrics ------------------------------------------------------------------------------
    def override_metric(self, metric_name: str) -> None:
        """``--predict_only`` replaces the metrics by "bypass": then generate transcripts only. The
        judge is switched off (every label recorded missing, judge_disabled), and the full record
        still lands in the samples file so that ``edufair judge`` can label it later."""
        super().override_metric(metric_name)
        if metric_name != "bypass":
            return
        from lm_eval.filters import build_filter_ensemble

        from edufair_metrics.analysis.aggregations import complete_dialogues

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


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, Any]:
    """Per document: the full record (transcript, judge labels, scores) for the samples file,
    each of the nine scores for the per-metric means, and the score dict for the bias aggregates."""
    record = results[0]
    if isinstance(record, str):  # filter disabled: only the transcript is there
        raise EduFairError("edufair tasks need the judge filter (filter_list) to produce scores")
    record = dict(record)
    task = (record.get("transcript") or {}).get("task") or ""
    record.setdefault("provenance", record_provenance(record, _RUN_PROVENANCE.get(task), protocol_hash()))
    scores = record["scores"]
    out: dict[str, Any] = {"edufair_record": record}
    for metric in ALL_METRICS:
        out[metric] = scores["scores"].get(metric)
    for agg in ("ped_abs_r", "conv_abs_r", "violations", "ped_excess_abs_r", "violations_fdr", "missing_label_rate"):
        out[agg] = scores
    out["edufair_calls"] = task  # aggregated once per task: agg_call_counts
    # dialogues ended by a failed call (left out of the paired statistics by default)
    out["failed_dialogues"] = int(bool(scores.get("failed")) or record["transcript"].get("stop_reason") in (STOP_STUDENT_FAILED, STOP_TUTOR_FAILED))
    return out


# Failures EduFair finds in an answer lm-eval returned as a success (an HTTP attempt that "worked")
_ANSWER_KINDS = ("empty_output", "empty_visible_turn")


def failed_attempts(counts: dict[str, Any]) -> int:
    """Every failed attempt of one role: for an API model each failed HTTP attempt (lm-eval's own
    retries included) plus each answer that arrived empty; else each failed send (the judge's
    sends are its HTTP requests)."""
    sends = counts.get("failed_attempts_by_kind") or {}
    if int(counts.get("http_attempts") or 0) > 0:
        http = sum(int(v) for v in (counts.get("http_failed_by_kind") or {}).values())
        return http + sum(int(sends.get(k, 0)) for k in _ANSWER_KINDS)
    return sum(int(v) for v in sends.values())


def agg_call_counts(items: list[Any]) -> float:
    """The ``edufair_calls`` metric: failed model-call attempts of the task, all roles, including
    those a retry recovered (0 = the endpoints never failed). lm-eval's results hold scalars, so
    the per-role counts (requests, cached, coalesced, distinct, sends, retried, recovered, failed
    by kind, HTTP attempts) go into the task's config in the same results_*.json:
    ``configs.<task>.metadata.edufair_calls`` (written before lm-eval dumps the config, which it
    does right after the aggregations); `edufair report` shows them in failures.md. The items are
    the task's name. Under lm-eval's rank/world-size sharding only rank 0's counts are here."""
    tasks = sorted({str(x) for x in items if x})
    total = 0
    for task in tasks:
        per_role = dict(_CALL_COUNTS.get(task, {}))
        total += sum(failed_attempts(c) for c in per_role.values())
        owner = _TASKS.get(task)
        if owner is not None and isinstance(owner.config.metadata, dict):
            owner.config.metadata["edufair_calls"] = per_role
    return float(total)


class JudgeFilter(Filter):
    """lm-eval filter that judges every transcript of a task in one concurrent batch and attaches
    per-dialogue scores.

    YAML (the task injects the resolved ``edufair.judge`` settings and the cache policy)::

        filter_list:
          - name: judged
            filter:
              - function: !function lm_eval_tasks.task.JudgeFilter
                judge: {base_url: ..., model: ...}   # resolved JudgeSettings (to_setting()); missing keys: built-in defaults
                enabled: true                          # false: every tutor turn missing (judge_disabled)
                cache: {enabled: true, path: null}     # CachePolicy

    ``apply(resps, docs)``: ``resps[i][0]`` is the JSON string (or dict) of ``Transcript.to_dict()``;
    later elements are harness placeholders and are ignored. Returns one record per document
    (see ``edufair_metrics.judge.run.build_record``). Failed dialogues are judged and scored on the
    turns they have and flagged ``incomplete``. A summary of missing turns per level goes to stderr.
    """

    def __init__(self, judge: dict[str, Any] | None = None, enabled: bool = True, cache: dict[str, Any] | None = None,
                 progress: bool = True, **kwargs) -> None:
        super().__init__(**kwargs)
        if judge is not None and not isinstance(judge, dict):
            raise EduFairError(f"JudgeFilter: 'judge' must be a mapping of judge settings, got {type(judge).__name__}")
        self.judge = judge
        self.enabled = bool(enabled)
        self.cache = CachePolicy.from_settings(cache)
        self.progress = progress
        self.last_summary: dict[str, Any] | None = None

    def apply(self, resps: Iterable, docs: list[dict]) -> list[dict[str, Any]]:
        from edufair_metrics.judge.run import format_missing_summary, judge_records, transcript_from_resp

        resps = list(resps)
        transcripts = [transcript_from_resp(r, f"document {i}") for i, r in enumerate(resps)]
        summary: dict[str, Any] = {}
        records = judge_records(transcripts, judge=self.judge, enabled=self.enabled, cache=self.cache,
                                progress=self.progress, summary=summary)
        self.last_summary = summary
        task = next((t.task for t in transcripts if t.task), "")
        if summary.get("calls"):
            _CALL_COUNTS.setdefault(task, {})["judge"] = dict(summary["calls"])
        print(format_missing_summary(task, summary["by_level"], summary), file=sys.stderr, flush=True)
        return records
