"""Write lm-eval-shaped EduFair output folders from random scores with injected biases (tests).

``write_run(out, tutor, ...)`` creates ``out/<sanitized tutor>/results_<ts>.json`` and one
``samples_<task>_<ts>.jsonl`` per (condition, domain) task, each line carrying an
``edufair_record`` whose ``scores`` is a ``DialogueScores.to_dict()``.

``provenance=`` gives records the full provenance shape of ``lm_eval_tasks/task.py``
(``provenance_for`` + ``run_provenance``) with nested overrides; ``stop_reason=`` sets each
transcript's stop reason; ``scores=`` writes hand-made ``DialogueScores`` instead of random ones.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any, Callable

import numpy as np

from edufair_metrics.records import CONVERSATION_METRICS, PEDAGOGICAL_METRICS, TASK_DOMAINS, DialogueScores

LEVELS = {
    "explicit": [("gender", "female"), ("gender", "male"), ("immigration", "native_born"), ("immigration", "immigrant"),
                 ("language", "english"), ("language", "other_language"), ("ses", "low_income"),
                 ("ses", "middle_class"), ("ses", "high_income")],
    "implicit": [("name", "michael"), ("name", "jessica"), ("name", "wei"), ("name", "ji_yoon")],
    "opposite": [("gender_match", "s_female_t_female"), ("gender_match", "s_female_t_male"),
                 ("gender_match", "s_male_t_female"), ("gender_match", "s_male_t_male")],
}
DOMAIN_SUFFIX = {v: k for k, v in TASK_DOMAINS.items()}


def make_scores(
    *,
    tutor: str = "",
    domains=("mathematics",),
    conditions=("explicit", "implicit", "opposite"),
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
                        missing_turns=missing, judged_turns=judged,
                    ))
    return out


def full_provenance(tutor: str, domain: str) -> dict[str, Any]:
    """A record provenance shaped like ``provenance_for`` + ``run_provenance`` (task.py)."""
    return {
        "package_version": "0.1.0",
        "protocol_version": "edufair-bench-1",
        "protocol_sha256": "p" * 64,
        "bank": {"domain": domain, "file": f"{domain}.jsonl", "sha256": f"bank-{domain}-" + "0" * 50},
        "judge_prompts_sha256": "j" * 64,
        "models": {
            "tutor": {"model": "hf", "model_args": {"pretrained": tutor, "dtype": "bfloat16"}},
            "student": {"model": "local-chat-completions",
                        "model_args": {"model": "student-llm", "base_url": "http://127.0.0.1:8001/v1"}},
            "judge": {"model": "judge-llm", "base_url": "http://127.0.0.1:8002/v1", "enabled": True},
        },
        "decoding": {"tutor": {"temperature": 0.0, "max_gen_toks": 256},
                     "student": {"temperature": 0.7, "max_gen_toks": 128},
                     "judge": {"temperature": 0.0, "max_tokens": 512}},
        "max_tutor_turns": 10,
        "seeds": {"random_seed": 0, "numpy_seed": 1234, "torch_seed": 1234, "tutor_api_seed": None},
    }


def _merge(base: dict, over: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else copy.deepcopy(v)
    return out


def write_run(
    out: str | Path,
    tutor: str = "org/tutor-a",
    *,
    timestamp: str = "2025-01-01T00-00-00.000000",
    model_args_only: bool = False,
    provenance: dict[str, Any] | None = None,
    stop_reason: Callable[[DialogueScores], str | None] | None = None,
    scores: list[DialogueScores] | None = None,
    **kwargs,
) -> Path:
    """Write one tutor's lm-eval-shaped folder under ``out``; returns the model folder.

    ``provenance``: None keeps the minimal ``{"protocol_version": ...}``; a dict (``{}`` for the
    defaults) is merged (nested) into :func:`full_provenance` for every record.
    ``stop_reason(scores)`` -> the transcript's ``stop_reason`` (None: no such key)."""
    scores = make_scores(tutor="", **kwargs) if scores is None else scores
    model_dir = Path(out) / re.sub(r"[\"<>:/|\\?*\[\]]+", "__", tutor)
    model_dir.mkdir(parents=True, exist_ok=True)
    by_task: dict[str, list[DialogueScores]] = {}
    for s in scores:
        by_task.setdefault(s.task, []).append(s)
    results = {
        "results": {t: {"alias": t, "edufair_ped_abs_r,none": 0.0} for t in by_task},
        "configs": {t: {"task": t} for t in by_task},
        "config": {"model": "hf", "model_args": f"pretrained={tutor},dtype=bfloat16"},
        "date": 0,
    }
    if not model_args_only:
        results["model_name"] = tutor
        results["model_name_sanitized"] = model_dir.name
    (model_dir / f"results_{timestamp}.json").write_text(json.dumps(results), encoding="utf-8")
    for task, items in by_task.items():
        lines = []
        for doc_id, s in enumerate(items):
            transcript: dict[str, Any] = {"question_id": s.question_id, "turns": [], "task": task}
            stop = stop_reason(s) if stop_reason else None
            if stop is not None:
                transcript["stop_reason"] = stop
            prov = ({"protocol_version": "edufair-bench-1"} if provenance is None
                    else _merge(full_provenance(tutor, s.domain), provenance))
            record = {
                "transcript": transcript,
                "judgements": [],
                "scores": s.to_dict(),
                "provenance": prov,
            }
            lines.append(json.dumps({
                "doc_id": doc_id, "doc": {"id": s.question_id, "level": s.level}, "target": "",
                "arguments": [], "resps": [], "filtered_resps": [], "filter": "none",
                "metrics": ["edufair_record"], "doc_hash": "", "prompt_hash": "", "target_hash": "",
                "edufair_record": record,
            }))
        (model_dir / f"samples_{task}_{timestamp}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return model_dir

