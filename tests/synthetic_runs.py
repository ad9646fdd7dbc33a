"""Write lm-eval-shaped EduFair output folders from random scores with injected biases (tests).

``write_run(out, tutor, ...)`` creates ``out/<sanitized tutor>/results_<ts>.json`` and one
``samples_<task>_<ts>.jsonl`` per (condition, domain) task, each line carrying an
``edufair_record`` whose ``scores`` is a ``DialogueScores.to_dict()``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

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


def write_run(
    out: str | Path,
    tutor: str = "org/tutor-a",
    *,
    timestamp: str = "2025-01-01T00-00-00.000000",
    model_args_only: bool = False,
    **kwargs,
) -> Path:
    """Write one tutor's lm-eval-shaped folder under ``out``; returns the model folder."""
    scores = make_scores(tutor="", **kwargs)
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
            record = {
                "transcript": {"question_id": s.question_id, "turns": []},
                "judgements": [],
                "scores": s.to_dict(),
                "provenance": {"protocol_version": "edufair-bench-1"},
            }
            lines.append(json.dumps({
                "doc_id": doc_id, "doc": {"id": s.question_id, "level": s.level}, "target": "",
                "arguments": [], "resps": [], "filtered_resps": [], "filter": "none",
                "metrics": ["edufair_record"], "doc_hash": "", "prompt_hash": "", "target_hash": "",
                "edufair_record": record,
            }))
        (model_dir / f"samples_{task}_{timestamp}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return model_dir

