"""Agreement CIs by cluster (``analysis.agreement``): the bootstrap resamples dialogues (MRBench:
conversations), not turns; independent of the items' order and of the clusters' names; wider
than the turn bootstrap where judge errors cluster, and near its nominal coverage."""

from __future__ import annotations

import numpy as np
import pytest

from edufair_metrics.analysis.agreement import agreement
from edufair_metrics.errors import EduFairError
from tests.analysis.sim_threats import clustered_labels, coverage


def _data(seed=0, n=80):
    j, h, d = clustered_labels(np.random.default_rng(seed), n)
    return j.tolist(), h.tolist(), [f"dlg-{x}" for x in d]


def test_cluster_cis_are_order_free_and_name_free():
    j, h, d = _data()
    base = agreement(j, h, n_boot=300, seed=1, clusters=d)
    perm = np.random.default_rng(5).permutation(len(j))
    renamed = {c: f"other-{i}" for i, c in enumerate(sorted(set(d), reverse=True))}
    shuffled = agreement([j[i] for i in perm], [h[i] for i in perm], n_boot=300, seed=1,
                         clusters=[renamed[d[i]] for i in perm])
    assert shuffled == base
    assert base.clusters == 80 and base.n == 480
    turns = agreement(j, h, n_boot=300, seed=1)
    assert turns.clusters == turns.n == 480
    # the point estimates are the libraries', whatever is resampled
    assert (turns.cohen_kappa, turns.krippendorff_alpha) == (base.cohen_kappa, base.krippendorff_alpha)
    width = lambda a: a.cohen_kappa_ci_high - a.cohen_kappa_ci_low  # noqa: E731
    assert width(base) > 1.3 * width(turns)  # judge errors cluster in dialogues


def test_items_without_a_value_leave_their_cluster_and_bad_input_is_refused():
    ag = agreement([1, 0, None, 1], [1, 0, 1, None], n_boot=50, clusters=["a", "a", "b", "c"])
    assert ag.n == 2 and ag.clusters == 1
    with pytest.raises(EduFairError, match="one cluster per item"):
        agreement([1, 0], [1, 0], clusters=["a"])


def test_cluster_bootstrap_covers_where_the_turn_bootstrap_does_not():
    """150 seeded replicates of 100 dialogues × 6 turns: the turn bootstrap covers the true κ in
    81%, the dialogue bootstrap in 95% (tests/analysis/sim_threats.py prints more)."""
    cov = coverage(reps=150, n_boot=200, n_dialogues=100)
    assert cov["turns"]["cohen_kappa"] < 0.87
    assert cov["dialogues"]["cohen_kappa"] >= 0.91
