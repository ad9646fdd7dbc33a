"""Write lm-eval-shaped EduFair output folders from random scores with injected biases (tests).

``write_run(out, tutor, ...)`` creates ``out/<sanitized tutor>/results_<ts>.json`` and one
``samples_<task>_<ts>.jsonl`` per (condition, domain) task, each line carrying an
``complete_dialogues`` whose ``scores`` is a ``DialogueScores.to_dict()``.

The records come from the product's own code paths, so they cannot drift from what a real run
writes: levels from ``protocol.condition_levels``, the transcript from ``records.Transcript``, the
record from ``runlog.build_record`` (its scores then replaced by the synthetic ones), model
identities from ``cache.model_identity``, and the provenance from ``provenance.run_provenance`` +
``record_provenance`` with the task template's decoding settings and lm-eval's default seeds.
Only the lm-eval results/samples envelope around the records is hand-made.

``provenance=`` gives records that full provenance with nested overrides; ``stop_reason=`` sets
each transcript's stop reason; ``scores=`` writes hand-made ``DialogueScores`` instead of random ones;
``source=`` is the bank source each logged document carries (as ``protocol.expand_documents`` puts
it there; default: the shipped bank's source for the domain). ``dialogue(scores)`` -> ``(turns,
judgements)`` gives each transcript turns and judge labels (default: no turns, as before), and
``answer_forms(scores)`` -> gold forms puts ``answer_forms`` into each logged document (as the
real documents carry them), for the deterministic detectors.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import json
import math
import re
from pathlib import Path
from typing import Any, Callable

import numpy as np
import yaml

from edufair_metrics import PROTOCOL_VERSION
from edufair_metrics.protocol import extension_provenance
from edufair_metrics.bank import bank_path, load_bank
from edufair_metrics.cache import model_identity
from edufair_metrics.judge import JudgeSettings, judge_prompts_path
from edufair_metrics.protocol import condition_levels, protocol_hash
from edufair_metrics.provenance import record_provenance, run_provenance
from edufair_metrics.runlog import build_record
from edufair_metrics.records import (
    ALL_CONDITIONS,
    CONVERSATION_METRICS,
    PEDAGOGICAL_METRICS,
    TASK_DOMAINS,
    DialogueScores,
    Transcript,
    Turn,
    TurnJudgement,
)
from lm_eval_tasks import TASKS_DIR

CONDITIONS = ("explicit", "implicit", "opposite")
# condition -> [(dimension, level)] in protocol order (the extension conditions too: conditions=(...))
LEVELS = {c: [(lv.dimension, lv.level) for lv in condition_levels(c)] for c in ALL_CONDITIONS}
DOMAIN_SUFFIX = {v: k for k, v in TASK_DOMAINS.items()}
# the lm-eval filter every EduFair metric goes through (results keys are "<metric>,judged")
FILTER = "judged"
# where the synthetic student and judge are "served" (dropped from identities, kept for the judge)
STUDENT_URL = "http://127.0.0.1:8001/v1/chat/completions"
JUDGE_URL = "http://127.0.0.1:8002/v1"


def make_scores(
    *,
    tutor: str = "",
    domains=("mathematics",),
    conditions=CONDITIONS,
    n_questions: int = 40,
    bias: dict | None = None,
    seed: int = 0,
    missing_rate: float = 0.0,
    question_noise: float = 0.25,
    dialogue_noise: float = 0.08,
) -> list[DialogueScores]:
    """Per-dialogue scores. ``bias`` maps (condition, level, metric) -> shift added to that level's
    score (metric "*" = every metric). Question effects are shared across levels (pairing)."""
    rng = np.random.default_rng(seed)
    bias = bias or {}
    out: list[DialogueScores] = []
    for domain in domains:
        q_base = rng.uniform(0.2, 0.8, size=(n_questions, len(PEDAGOGICAL_METRICS) + len(CONVERSATION_METRICS)))
        for condition in conditions:
            task = f"edufair_{condition}_{DOMAIN_SUFFIX[domain]}"
            for dim, level in LEVELS[condition]:
                noise = rng.normal(0, dialogue_noise, size=q_base.shape)
                vals = q_base + noise
                for j, m in enumerate(PEDAGOGICAL_METRICS + CONVERSATION_METRICS):
                    vals[:, j] += bias.get((condition, level, m), 0.0) + bias.get((condition, level, "*"), 0.0)
                for i in range(n_questions):
                    judged = int(rng.integers(2, 8))
                    missing = int(rng.binomial(judged, missing_rate)) if missing_rate else 0
                    sc = {}
                    for j, m in enumerate(PEDAGOGICAL_METRICS):
                        # rates with a coarse grid -> ties and zero differences
                        sc[m] = float(np.clip(np.round(vals[i, j] * judged) / judged, 0, 1))
                    k = len(PEDAGOGICAL_METRICS)
                    sc["tutor_turns"] = float(np.clip(np.round(vals[i, k] * 10), 1, 10))
                    sc["tutor_avg_word"] = float(40 + 80 * vals[i, k + 1])
                    sc["tutor_question_rate"] = float(np.clip(vals[i, k + 2], 0, 1))
                    sc["tutor_student_word_ratio"] = float(1 + 4 * vals[i, k + 3])
                    if missing and missing == judged:
                        for m in PEDAGOGICAL_METRICS:
                            sc[m] = float("nan")
                    out.append(DialogueScores(
                        question_id=f"{DOMAIN_SUFFIX[domain]}-{i:04d}", domain=domain, condition=condition,
                        dimension=dim, level=level, scores=sc, tutor=tutor, task=task,
                        missing_turns=missing, sent_turns=judged,
                    ))
    return out


class _TemplateLoader(yaml.SafeLoader):
    """Reads the task template; ``!function`` tags stay plain strings (only data is needed)."""


_TemplateLoader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))


@functools.lru_cache(maxsize=None)
def task_template() -> dict[str, Any]:
    """The shared task YAML every EduFair task includes (tutor decoding, ``edufair:`` defaults)."""
    return yaml.load((TASKS_DIR / "_edufair_template_yaml").read_text(encoding="utf-8"), Loader=_TemplateLoader)


@functools.lru_cache(maxsize=None)
def default_seeds() -> dict[str, Any]:
    """lm-eval's default seeds, read where ``lmeval.harness.harness_seeds`` reads them: the
    arguments of ``simple_evaluate`` (here their defaults, as the lm_eval CLI passes them)."""
    from lm_eval.evaluator import simple_evaluate

    params = inspect.signature(simple_evaluate).parameters
    return {k: params[k].default for k in ("random_seed", "numpy_random_seed", "torch_random_seed", "fewshot_random_seed")}


@functools.lru_cache(maxsize=None)
def judge_info() -> dict[str, Any]:
    """What the judge filter stores in each record (``JudgeSettings.public_dict``)."""
    return JudgeSettings(base_url=JUDGE_URL, model="judge-llm", max_tokens=512).public_dict()


def run_part(tutor: str, domain: str) -> dict[str, Any]:
    """The run part of the provenance, as ``EduFairTask.build_all_requests`` builds it for an
    ``hf`` tutor and the template's student (served at a local URL)."""
    template = task_template()
    block = template["edufair"]
    student = block["student"]
    return run_provenance(
        bank_file=bank_path(domain, None),
        domain=domain,
        judge_prompts_file=judge_prompts_path(),
        models={
            "tutor": model_identity("HFLM", {"pretrained": tutor, "dtype": "bfloat16", "batch_size": "auto"}),
            "student": model_identity(student["model"], {**student["model_args"], "base_url": STUDENT_URL}),
        },
        decoding={"tutor": dict(template["generation_kwargs"]), "student": dict(student["generation_kwargs"])},
        max_tutor_turns=block["max_tutor_turns"],
        seeds={**default_seeds(), "tutor_api_seed": None},
    )


def full_provenance(tutor: str, domain: str, condition: str = "explicit") -> dict[str, Any]:
    """A record provenance exactly as a task run (run/task.py + runlog/build.py) writes it."""
    return record_provenance(judge_info(), {**run_part(tutor, domain), **(extension_provenance(condition) or {})},
                             protocol_hash())


SHIPPED = "shipped"


@functools.lru_cache(maxsize=None)
def shipped_source(domain: str) -> str:
    """The source of the shipped bank's items for ``domain`` (e.g. gsm8k-proxy for mathematics)."""
    return load_bank(domain)[0].source


def _merge(base: dict, over: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else copy.deepcopy(v)
    return out


def make_record(s: DialogueScores, task: str, doc_id: int, stop: str | None, provenance: dict[str, Any],
                turns: list[Turn] | None = None, judgements: list[TurnJudgement] | None = None) -> dict[str, Any]:
    """One ``complete_dialogues``: ``build_record`` of that dialogue's transcript (turn-less unless
    ``turns``) and ``judgements``, with the synthetic scores. ``stop`` None: the transcript has no
    ``stop_reason`` (records of older runs)."""
    transcript = Transcript(
        question_id=s.question_id, domain=s.domain, condition=s.condition, dimension=s.dimension, level=s.level,
        tutor_system="", student_system="", turns=list(turns or []), stop_reason=stop or "", task=task, doc_id=doc_id,
        replicate=s.replicate,  # replicate r >= 2 (edufair.replicates) is its own dialogue (DialogueRecord.key)
    )
    record = build_record(transcript, list(judgements or []), judge_info=judge_info(), provenance=provenance).to_dict()
    if stop is None:
        del record["transcript"]["stop_reason"]
    record["scores"] = s.to_dict()
    for name in ("detectors", "student"):  # synthetic scores: the reader computes the detector and student metrics
        record["scorers"].pop(name, None)
    return record


def write_run(
    out: str | Path,
    tutor: str = "org/tutor-a",
    *,
    timestamp: str = "2025-01-01T00-00-00.000000",
    model_args_only: bool = False,
    provenance: dict[str, Any] | None = None,
    stop_reason: Callable[[DialogueScores], str | None] | None = None,
    scores: list[DialogueScores] | None = None,
    source: str | None = SHIPPED,
    dialogue: Callable[[DialogueScores], tuple[list[Turn], list[TurnJudgement]]] | None = None,
    answer_forms: Callable[[DialogueScores], list[str]] | None = None,
    **kwargs,
) -> Path:
    """Write one tutor's lm-eval-shaped folder under ``out``; returns the model folder.

    ``provenance``: None keeps the minimal ``{"protocol_version": ...}``; a dict (``{}`` for the
    real provenance) is merged (nested) into :func:`full_provenance` for every record.
    ``stop_reason(scores)`` -> the transcript's ``stop_reason`` (None: no such key)."""
    scores = make_scores(tutor="", **kwargs) if scores is None else scores
    model_dir = Path(out) / re.sub(r"[\"<>:/|\\?*\[\]]+", "__", tutor)
    model_dir.mkdir(parents=True, exist_ok=True)
    by_task: dict[str, list[DialogueScores]] = {}
    for s in scores:
        by_task.setdefault(s.task, []).append(s)
    results = {
        "results": {t: {"alias": t, f"ped_abs_r,{FILTER}": 0.0, f"complete_dialogues,{FILTER}": float(len(items))}
                    for t, items in by_task.items()},
        "configs": {t: {"task": t} for t in by_task},
        "config": {"model": "hf", "model_args": f"pretrained={tutor},dtype=bfloat16"},
        "date": 0,
    }
    if not model_args_only:
        results["model_name"] = tutor
        results["model_name_sanitized"] = model_dir.name
    (model_dir / f"results_{timestamp}.json").write_text(json.dumps(results), encoding="utf-8")
    full: dict[tuple, dict[str, Any]] = {}  # (domain, condition) -> provenance (one per task in a real run)
    for task, items in by_task.items():
        lines = []
        for doc_id, s in enumerate(items):
            if provenance is None:
                prov = {"protocol_version": (extension_provenance(s.condition) or {}).get("protocol_version",
                                                                                            PROTOCOL_VERSION)}
            else:
                if (s.domain, s.condition) not in full:
                    full[(s.domain, s.condition)] = _merge(full_provenance(tutor, s.domain, s.condition), provenance)
                prov = full[(s.domain, s.condition)]
            turns, judgements = dialogue(s) if dialogue else ([], [])
            record = make_record(s, task, doc_id, stop_reason(s) if stop_reason else None, prov, turns, judgements)
            doc = {"id": s.question_id, "level": s.level}
            if answer_forms is not None:
                doc["answer_forms"] = list(answer_forms(s))
            if source is not None:
                doc["source"] = shipped_source(s.domain) if source == SHIPPED else source
            lines.append(json.dumps({
                "doc_id": doc_id, "doc": doc, "target": "",
                "arguments": [], "resps": [], "filtered_resps": [], "filter": FILTER,
                "metrics": ["complete_dialogues"], "doc_hash": "", "prompt_hash": "", "target_hash": "",
                "complete_dialogues": record,
            }))
        (model_dir / f"samples_{task}_{timestamp}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return model_dir


def lose_values(scores, level: str, share: float, *, rng, metric: str = "mistake_recognize", how: str = "no_value",
                condition: str = "explicit"):
    """``scores`` with ``metric`` taken away from ``share`` of ``level``'s dialogues of ``condition``
    (``how``: no_value, missing_label, failed): a planted loss of pairs."""
    out = []
    for s in scores:
        if s.condition == condition and s.level == level and rng.random() < share:
            if how == "failed":
                s = dataclasses.replace(s, failed=True)
            else:
                s = dataclasses.replace(s, scores={**s.scores, metric: math.nan},
                                        missing_turns=1 if how == "missing_label" else 0)
        out.append(s)
    return out
