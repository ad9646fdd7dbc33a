"""Synthetic per-dialogue score frames with a known truth (no bias, or injected biases) for the
noise-floor, FDR, power and rank tests. Not a test module."""

from __future__ import annotations

import numpy as np
import pandas as pd

from edufair_metrics.protocol import condition_levels
from edufair_metrics.records import PEDAGOGICAL_METRICS

LEVELS = {c: [lv.level for lv in condition_levels(c)] for c in ("explicit", "implicit", "opposite")}


def rate_frame(tutors: dict[str, dict[str, float]], *, n: int = 300, seed: int = 0, domains=("physics",),
               metrics=PEDAGOGICAL_METRICS) -> pd.DataFrame:
    """Long score frame: per tutor, domain, level, question and metric a rate k/m of m = 2..6
    judged turns (ties and zero differences, as EduFair's), from a per-question base probability.
    ``tutors[t]`` maps a level to an additive shift of the probability (the injected bias); no
    entry = identical conditions (the null)."""
    rng = np.random.default_rng(seed)
    frames = []
    for dom in domains:
        base = rng.uniform(0.15, 0.85, size=(n, len(metrics)))  # question difficulty, shared
        for tutor, shifts in tutors.items():
            for cond, levels in LEVELS.items():
                for lv in levels:
                    turns = rng.integers(2, 7, size=(n, len(metrics)))
                    prob = np.clip(base + shifts.get(lv, 0.0), 0, 1)
                    v = rng.binomial(turns, prob) / turns
                    df = pd.DataFrame(v, columns=list(metrics))
                    df["question_id"] = [f"{dom[:3]}-{i:04d}" for i in range(n)]
                    df = df.melt(id_vars="question_id", var_name="metric", value_name="value")
                    df["tutor"], df["task"], df["domain"], df["condition"], df["dimension"], df["level"] = (
                        tutor, f"edufair_{cond}", dom, cond, "d", lv)
                    frames.append(df)
    return pd.concat(frames, ignore_index=True)
