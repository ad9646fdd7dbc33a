"""No statistic depends on the order in which records were read: sharded runs write their samples
rank-major, pooled shards come file by file. Every bootstrap resamples positions, so its inputs are
put in a canonical order first (the contrast grid's cells are sorted by question; the agreement
statistics sort the label pairs)."""

from __future__ import annotations

import random

import numpy as np

from edufair_metrics.analysis.agreement import agreement
from edufair_metrics.analysis.judge_validity import detector_agreement_by_level
from tests.analysis import pairing_reference as ref


def test_agreement_cis_do_not_depend_on_the_order_of_the_items():
    rng = random.Random(1)
    pairs = [(int(rng.random() < 0.4), int(rng.random() < 0.5)) for _ in range(60)] + [(None, 1), (1, None)]
    base = agreement([a for a, _ in pairs], [b for _, b in pairs], n_boot=400, seed=0)
    for k in range(5):
        rng.shuffle(pairs)
        assert agreement([a for a, _ in pairs], [b for _, b in pairs], n_boot=400, seed=0) == base, k


def test_judge_vs_detector_by_level_does_not_depend_on_the_order_of_the_turns():
    rng = random.Random(2)
    rows = [{"tutor": "t", "domain": "physics", "condition": "explicit", "dimension": "gender", "level": lv,
             "question_id": f"q{i}", "turn_index": 2, "judge_leak": int(rng.random() < 0.3),
             "detector_leak": int(rng.random() < 0.3)} for i in range(40) for lv in ("female", "male")]
    base = detector_agreement_by_level(rows, n_boot=300, seed=0)
    rng.shuffle(rows)
    assert detector_agreement_by_level(rows, n_boot=300, seed=0).equals(base)


def test_the_grid_units_ranks_and_compare_do_not_depend_on_the_order_of_the_rows():
    data = ref.inputs()
    base = ref.outputs(data)
    rng = np.random.default_rng(7)
    shuffled = {k: v.iloc[rng.permutation(len(v))].reset_index(drop=True) for k, v in data.items()}
    again = ref.outputs(shuffled)
    assert [k for k in base if ref.to_csv_text(base[k]) != ref.to_csv_text(again[k])] == []
