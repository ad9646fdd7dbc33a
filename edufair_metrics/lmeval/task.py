"""The EduFair lm-eval task: a ConfigurableTask that adapts lm-eval's task API to the harness-free
:func:`edufair_metrics.run.run_task`.

lm-eval 0.4.13 has no multi-turn API and hands no LM to tasks; ``build_all_requests`` is a public
override point that receives ``--limit``, ``--samples``, rank and world size exactly as the harness
intends. There the task finds the harness LM (the tutor), builds the student through lm-eval's
registry and runs its documents with ``run_task`` (dialogues, judge, records). Each document's
instance carries a short reference to its record as its response; lm-eval's ``take_first`` filter
passes it on, and ``process_results`` turns the record into the task's metrics. The record itself
reaches the samples file once, as the value of the ``complete_dialogues`` metric (whose table row
counts the dialogues that ended by the stop rule).
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from itertools import islice
from typing import Any

import datasets
from lm_eval.api.instance import Instance
from lm_eval.api.task import ConfigurableTask

from edufair_metrics.analysis.judge_validity import degenerate_judge_in
from edufair_metrics.errors import EduFairError, Interrupted
from edufair_metrics.judge.run import format_missing_summary
from edufair_metrics.lmeval import plugin_discovery, print_notices_once, quiet_request_bars
from edufair_metrics.lmeval.aggregations import (
    PARAMETERISED,
    ScoresRef,
    agg_call_counts,
    complete_dialogues,
    summed_call_counts,
)
from edufair_metrics.lmeval.harness import (
    answer_placeholders_locally,
    api_seed,
    evaluation_output_path,
    evaluation_tracker,
    find_harness_lm,
    harness_seeds,
    install_excepthook,
    launched_processes,
    logs_samples,
    tutor_identity,
    warn_if_unbatched,
)
from edufair_metrics.lmeval.lm import batch_size_of, is_api_model, is_auto_batch, is_hflm_class, prompt_text, unwrap
from edufair_metrics.lmeval.models import HarnessModel, build_student, endpoint_of, identity, model_class, parse_model_args
from edufair_metrics.lmeval.outputs import guard_output_files
from edufair_metrics.preflight import check_output_path, check_reachable, openai_key_exposure, preflight_enabled
from edufair_metrics.provenance import package_provenance
from edufair_metrics.records import ALL_METRICS, RECORD_KEY, TASK_DOMAINS, DialogueRecord, nan_to_none
from edufair_metrics.run import RoleModel, TaskSpec, run_task, task_documents
from edufair_metrics.run.documents import process_part, question_blocks
from edufair_metrics.runlog.rewrite import RecordWriter
from edufair_metrics.settings import resolve_runner_settings

log = logging.getLogger("edufair")

HARNESS_PLACEHOLDER = "EduFair: this dialogue is finished; reply with one token."
# An instance's response: a reference to its document's record (kept by the task object), so that
# the dialogue is written once to the samples file (as the complete_dialogues metric), not again in
# lm-eval's resps and filtered_resps.
RECORD_REF = "edufair-record:{task}:{doc_id}"
# What the samples file holds in each of the score aggregations' fields: a reference to the scores
# of the same line's record (``complete_dialogues.scores``), written once (aggregations.ScoresRef).
SCORES_REF = "edufair-scores:{task}:{doc_id}"

# task metadata keys that lm-eval adds and that are not tutor model arguments
_NOT_MODEL_ARGS = ("edufair", "version", "config_source", "task", "group", "edufair_calls", "edufair_provenance")
# the per-document metrics the headline aggregations read (each gets the dialogue's scores)
_SCORE_AGGREGATES = ("ped_abs_r", "conv_abs_r", "violations", "ped_excess_abs_r", "violations_fdr", "flagged_units",
                     "certified_units", "inconclusive_units", "ped_unbiased_abs_r", "missing_label_rate")


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
        # the resolved judge (a judge without endpoint already failed); None with `enabled: false`:
        # every label is recorded missing (judge_disabled)
        self.judge_settings = self.settings.judge if self.settings.judge_enabled else None
        self._predict_only = False
        self._records: dict[int, DialogueRecord] = {}
        self._call_counts: dict[str, dict[str, Any]] = {}
        self._calls_reported = False
        # this process's records as the samples file stores them: the run header in full on its first line
        self._record_writer = RecordWriter()
        # the metrics come from this class's process_results; a set config key keeps lm-eval from
        # looking the metric names up in its registry (and the Hub's `evaluate`)
        config["process_results"] = "process_results"
        super().__init__(config=config)  # loads the bank and checks the levels: static input first
        # aggregated with this task's config at hand: the per-role counts go into configs.<task>.metadata
        self._aggregation_list["failed_call_attempts"] = self.aggregate_call_counts
        # the headline aggregations with this task's statistics (edufair.statistics: margin, B, ...)
        stat_params = self.settings.statistics.params()
        for name, fn in list(self._aggregation_list.items()):
            if fn in PARAMETERISED:
                self._aggregation_list[name] = functools.partial(fn, params=stat_params)
        check_output_path(evaluation_output_path())  # before any dialogue: results must be savable
        guard_output_files(evaluation_tracker())  # and a file that could not be written whole never looks complete
        if logs_samples() is False:
            log.warning("edufair: %s: lm-eval runs without --log_samples, so the dialogue records (transcripts, judge "
                        "labels, scores) will not be saved; `edufair report`, `judge` and `view` read them from the "
                        "samples files: add --log_samples (with --output_path)", config.get("task"))
        student = self.settings.student
        student_url = endpoint_of(student.model, student.model_args)  # also: is the student model known?
        if preflight_enabled(self.settings.preflight):
            check_reachable("edufair.student", student_url)
            check_reachable("edufair.judge", self.judge_settings.base_url if self.judge_settings else None)

    # ---- documents -------------------------------------------------------------------------
    def download(self, dataset_kwargs: dict[str, Any] | None = None, **kwargs) -> None:
        found = task_documents(str(self.config.task), self.condition, self.domain, self.settings)
        self._sample_provenance = found.sample
        self._bank_file = found.bank_file
        self._protocol_provenance = found.protocol
        self.dataset = datasets.DatasetDict({"test": datasets.Dataset.from_list(found.documents)})

    def run_docs(self, *, limit=None, samples=None, shard: bool = True) -> list[tuple[int, dict[str, Any]]]:
        """The ``(doc_id, document)`` pairs this run covers, before the split over processes:
        lm-eval's ``--samples`` (numbered as lm-eval numbers them) or ``--limit``, then this run's
        ``edufair.shard`` of the questions (``shard``: apply it)."""
        if samples:
            pairs = list(enumerate(x for i, x in enumerate(self.eval_docs) if i in samples))
        else:
            pairs = list(islice(enumerate(self.eval_docs), int(limit) if limit else None))
        if shard and self.settings.shard is not None:
            return self.settings.shard.select(pairs)
        return pairs

    def doc_iterator(self, *, rank: int = 0, limit=None, world_size: int = 1, samples=None):
        """lm-eval's documents of process ``rank``: contiguous blocks of whole questions (all levels
        of a question on one process, so its pairs and identical requests stay together), instead of
        lm-eval's round-robin over documents, which would spread a question's levels over the
        processes. Used for the requests and again by lm-eval for the metrics, alike."""
        docs = self.run_docs(limit=limit, samples=samples)
        if int(world_size) <= 1:
            return iter(docs)
        return iter(process_part(question_blocks(docs), int(rank), int(world_size)))

    def check_parallelism(self, tutor_lm, *, world_size: int, limit=None, samples=None) -> None:
        """Refuse, before any dialogue and alike on every process (each decides from the same
        facts), what would hang, crash or silently repeat the job under several processes; warn
        about vLLM's data parallelism."""
        task = self.config.task
        real = unwrap(tutor_lm)
        kind = type(real).__name__
        world_size = int(world_size)
        procs = launched_processes()
        if procs > world_size:
            raise EduFairError(
                f"{task}: lm_eval runs in {procs} processes (accelerate launch / torchrun), but lm-eval splits the "
                f"documents over processes only for --model hf with one device per process; this {kind} tutor would "
                "run the whole task in every process. Run ONE lm_eval process (API tutor: raise num_concurrent; "
                "vLLM: tensor_parallel_size), or split the questions over runs with edufair.shard")
        if int(getattr(real, "data_parallel_size", 1) or 1) > 1:
            log.warning("edufair: %s: vLLM data_parallel_size=%s rebuilds every replica's engine (and shuts Ray down) on "
                        "each generate_until call, i.e. on every turn: 10-20 model loads per task. Serve the tutor with "
                        "`vllm serve --data-parallel-size N` (or N replicas) and use --model local-chat-completions "
                        "instead, or data_parallel_size=1 with tensor_parallel_size", task,
                        getattr(real, "data_parallel_size", None))
        student = self.settings.student
        student_args = parse_model_args(student.model_args)
        if int(student_args.get("data_parallel_size", 1) or 1) > 1:
            log.warning("edufair: %s: the in-process student has data_parallel_size=%s, which rebuilds its engines on "
                        "every call; serve the student with `vllm serve` instead", task, student_args["data_parallel_size"])
        if world_size <= 1:
            return
        tutor_bs = batch_size_of(tutor_lm)
        if is_auto_batch(tutor_bs):
            raise EduFairError(
                f"{task}: --batch_size {tutor_bs} with {world_size} processes hangs: HFLM measures the batch size with "
                "a collective across the processes on every call, and the processes make different numbers of tutor "
                "calls (dialogues stop at different turns). Pass a fixed --batch_size (e.g. 32)")
        if is_hflm_class(model_class(student.model)) and is_auto_batch(student.batch_size):
            raise EduFairError(
                f"{task}: the in-process hf student's batch size {student.batch_size} with {world_size} processes "
                "hangs (a collective on every call, and the processes make different numbers of calls); set a fixed "
                "edufair.student.batch_size (e.g. 32)")
        questions = len(question_blocks(self.run_docs(limit=limit, samples=samples)))
        if questions < world_size:
            raise EduFairError(
                f"{task}: {questions} question(s) for {world_size} processes: each process needs at least one whole "
                f"question (all its levels); raise --limit to at least {world_size} questions' documents or use "
                "fewer processes")

    def _shard_provenance(self, limit, samples) -> dict[str, Any] | None:
        """This run's shard, with the shards that hold none of the run's questions (all of them,
        before the split), so that pooling checks completeness against the question set."""
        if self.settings.shard is None:
            return None
        questions = {d["question_id"] for _, d in self.run_docs(limit=limit, samples=samples, shard=False)}
        return self.settings.shard.provenance(questions)

    # ---- the dialogues ---------------------------------------------------------------------
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
        self.check_parallelism(tutor_lm, world_size=world_size, limit=limit, samples=samples)
        warn_if_unbatched(tutor_lm)
        student_cfg = self.settings.student
        student_url = endpoint_of(student_cfg.model, student_cfg.model_args)
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
            shard = self.settings.shard
            if shard is not None:
                n = len(question_blocks(self.run_docs(limit=limit, samples=samples, shard=False)))
                raise EduFairError(f"{self.config.task}: {shard} holds none of this run's {n} question(s): nothing to "
                                   "run here, and nothing is missing without it (the other shards' records name it "
                                   "empty, and edufair report pools them without it)")
            raise EduFairError(f"{self.config.task}: no documents to run")
        meta = self.config.metadata or {}
        tutor_id, tutor_id_source = tutor_identity(tutor_lm, {k: v for k, v in meta.items() if k not in _NOT_MODEL_ARGS})
        if tutor_id is None:
            log.warning("edufair: %s: the tutor (%s) has no identity EduFair can read (no model name, path or "
                        "model_args): its turns are not cached, so that another tutor can never receive them",
                        self.config.task, type(unwrap(tutor_lm)).__name__)
        spec = TaskSpec(
            name=str(self.config.task), condition=self.condition, domain=self.domain,
            tutor_gen_kwargs=dict(self.config.generation_kwargs or {}), system_instruction=system_instruction,
            seeds={**harness_seeds(), "tutor_api_seed": api_seed(tutor_lm)},
            sample=getattr(self, "_sample_provenance", None), bank_file=getattr(self, "_bank_file", None),
            execution={"world_size": int(world_size), "tutor_batch_size": batch_size_of(tutor_lm),
                       "shard": self._shard_provenance(limit, samples)},
            protocol=getattr(self, "_protocol_provenance", None),
        )
        tutor = RoleModel(HarnessModel(tutor_lm), tutor_id, tutor_id_source, kind=type(unwrap(tutor_lm)).__name__)
        student = RoleModel(HarnessModel(build_student(student_cfg.to_dict())),
                            identity(student_cfg.model, student_cfg.model_args))
        judge = None if self._predict_only else self.judge_settings
        cache = self.settings.cache.open()
        if cache is not None:
            print(f"edufair: {self.config.task}: call cache {cache.path}", file=sys.stderr, flush=True)
        try:
            # one quiet block around the whole run: with the overlap, calls of two threads would
            # otherwise restore lm-eval's per-call bars while the other call still runs
            with quiet_request_bars():
                result = run_task(spec, self.settings, [doc for _, doc in doc_pairs], tutor=tutor, student=student,
                                  judge=judge, cache=cache, doc_ids=[doc_id for doc_id, _ in doc_pairs])
        except Interrupted as exc:
            exit_interrupted(exc)
        finally:
            if cache is not None:
                cache.close()
        print(format_missing_summary(spec.name, result.judge_summary["by_level"], result.judge_summary),
              file=sys.stderr, flush=True)
        if judge is not None:
            for why in degenerate_judge_in(result.records):
                log.warning("edufair: %s: degenerate judge: %s", spec.name, why)
        self._records = {r.transcript.doc_id: r for r in result.records}
        self._call_counts = result.call_counts
        self._calls_reported = False
        # this process's records as the samples file stores them: the run header in full on its first line
        self._record_writer = RecordWriter()

        repeats = self.config.repeats or 1
        # lm-eval makes one more generate_until call per document after this method returns. The
        # dialogue is already finished: that request carries a placeholder prompt and is answered
        # locally, without a model call (no cost, nothing to fail, nothing re-sent on a resume).
        done_ctx = tutor_lm.apply_chat_template([{"role": "user", "content": HARNESS_PLACEHOLDER}], add_generation_prompt=True)
        answer_placeholders_locally(tutor_lm, prompt_text(done_ctx))
        instances = []
        for doc_id, doc in doc_pairs:
            inst = Instance(
                request_type="generate_until",
                doc=doc,
                arguments=(done_ctx, {"max_gen_toks": 1, "until": [], "temperature": 0}),
                idx=0,
                metadata=(self.config.task, doc_id, repeats),
            )
            inst.resps.append(RECORD_REF.format(task=self.config.task, doc_id=doc_id))
            instances.append(inst)
        self._instances = instances

    # ---- metrics ------------------------------------------------------------------------------
    def override_metric(self, metric_name: str) -> None:
        """``--predict_only`` replaces the metrics by "bypass": then generate transcripts only. The
        judge is off (every label recorded missing, judge_disabled), and the full record still lands
        in the samples file so that ``edufair judge`` can label it later."""
        super().override_metric(metric_name)
        if metric_name != "bypass":
            return
        self._predict_only = True
        self._aggregation_list[RECORD_KEY] = complete_dialogues
        self._higher_is_better[RECORD_KEY] = None  # a count: neither direction is better

    def record_of(self, response: Any) -> DialogueRecord:
        """The record an instance's (filtered) response refers to."""
        if isinstance(response, str) and response.startswith("edufair-record:"):
            doc_id = int(response.rsplit(":", 1)[1])
            if doc_id in self._records:
                return self._records[doc_id]
        raise EduFairError(f"{self.config.task}: the response {str(response)[:60]!r} is not one of this task's dialogue "
                           "records (the task's filter must pass the first response on: take_first)")

    def process_results(self, doc, results):
        """Per document: the full record for the samples file, each metric's value for its mean,
        the scores for the bias aggregates, and (on the first document of each rank) the rank's
        call counts, which ``aggregate_call_counts`` sums over ranks."""
        record = self.record_of(results[0])
        if self._predict_only:
            return {"bypass": None, RECORD_KEY: self._record_writer.to_dict(record)}
        out: dict[str, Any] = {RECORD_KEY: self._record_writer.to_dict(record)}
        for metric in ALL_METRICS:
            out[metric] = nan_to_none(record.scores.scores.get(metric))
        # one object for the ten score aggregations; the samples line stores it as a short reference
        ref = ScoresRef(SCORES_REF.format(task=self.config.task, doc_id=record.transcript.doc_id), out[RECORD_KEY]["scores"])
        for agg in _SCORE_AGGREGATES:
            out[agg] = ref
        out["failed_call_attempts"] = None if self._calls_reported else dict(self._call_counts)
        self._calls_reported = True
        # dialogues ended by a failed call (left out of the paired statistics by default)
        out["failed_dialogues"] = int(record.scores.failed)
        return out

    def aggregate_call_counts(self, items: list[Any]) -> float:
        """The ``failed_call_attempts`` metric (:func:`edufair_metrics.lmeval.aggregations.agg_call_counts`),
        and the per-role counts summed over ranks written into this task's config, which lm-eval
        dumps into the results file right after the aggregations: ``configs.<task>.metadata.edufair_calls``;
        beside it ``edufair_provenance`` (:func:`results_provenance`)."""
        if isinstance(self.config.metadata, dict):
            self.config.metadata["edufair_calls"] = summed_call_counts(items)
            self.config.metadata["edufair_provenance"] = results_provenance()
        return agg_call_counts(items)


def exit_interrupted(exc: Interrupted) -> None:
    """The first Ctrl-C of a run: one line, exit status 130, no traceback, and no wait for the
    calls in flight (every answer that arrived is already committed to the call cache, one
    transaction each; lm-eval would otherwise print its traceback and the interpreter would wait
    for the worker threads' requests). The cache is left open: worker threads may be inside a
    statement on their connections, and closing those under them crashed the process (SIGSEGV
    instead of 130); a committed WAL transaction survives ``os._exit``, an open one rolls back."""
    print(f"\nedufair: {exc.line()}", file=sys.stderr, flush=True)
    sys.stdout.flush()
    os._exit(130)


def results_provenance() -> dict[str, Any]:
    """What the results file says about EduFair itself (``configs.<task>.metadata.edufair_provenance``):
    its version, the lm-eval plugin entry points the installed distribution declares, and which of
    those groups the running lm-eval reads (``plugin_discovery``: with ``lm_eval.tasks`` read, the
    tasks were found without ``--include_path``)."""
    return {**package_provenance(), "lm_eval_reads": plugin_discovery()}
