"""The one pairing (analysis.cells): cell matrices equal the pandas pivot they replaced, and
pair_differences equals the pandas pairing the grid and compare used before (stats_reference.py);
every non-Friedman grid row equals the frozen per-row algorithm on it."""

import math

import numpy as np
import pandas as pd
import pytest

from edufair_metrics.analysis import cells
from edufair_metrics.analysis.contrast import paired_contrast
from edufair_metrics.analysis.engine import round_diffs
from edufair_metrics.analysis.grid import contrast_grid
from edufair_metrics.errors import EduFairError
from edufair_metrics.protocol.contrasts import load_contrasts
from tests.analysis import stats_reference as ref

FIELDS = ("n_pairs", "n_zero", "w_plus", "w_minus", "r", "p", "ci_low", "ci_high", "sufficient")


def _long_frame(seed=0, n=40):
    rng = np.random.default_rng(seed)
    levels = {"explicit": ["female", "male", "low_income", "middle_class", "high_income", "white", "black"],
              "opposite": ["s_female_t_female", "s_female_t_male", "s_male_t_female", "s_male_t_male"]}
    rows = []
    for tutor in ("b-tutor", "a-tutor"):
        for cond, lvs in levels.items():
            for lv in lvs:
                for metric in ("actionability", "tutor_avg_word"):
                    for i in rng.permutation(n):
                        v = rng.integers(0, 4) / 3 if metric == "actionability" else rng.normal(50, 10)
                        if rng.random() < 0.08:
                            v = math.nan
                        rows.append(dict(tutor=tutor, task="t", domain="physics", condition=cond, dimension="d",
                                         level=lv, question_id=f"q{i}", metric=metric, value=v))
    return pd.DataFrame(rows).sample(frac=1, random_state=seed)


def test_cell_matrices_equal_the_pandas_pivot():
    df = _long_frame()
    df.loc[df["level"] == "black", "value"] = math.nan  # an all-NaN level is absent, as dropna(how="all")
    groups = list(ref.cell_groups(ref.wide_scores(df)))
    found = cells.cell_matrices(df)
    assert [c.key for c in found] == [k for k, _ in groups]
    for cm, (_, sub) in zip(found, groups):
        sub = sub.dropna(axis=1, how="all")
        assert cm.levels == tuple(sub.columns) and "black" not in cm.levels
        assert list(cm.questions) == list(sub.index.get_level_values("question_id"))
        np.testing.assert_array_equal(cm.values, sub.to_numpy())
    with pytest.raises(EduFairError, match="duplicate"):
        cells.cell_matrices(pd.concat([df, df.iloc[:1]]))
    with pytest.raises(EduFairError, match="lacks columns"):
        cells.cell_matrices(df.drop(columns=["level"]))


def test_pair_differences_equal_the_pandas_pairing():
    """Every contrast kind (binary, pairs, averaged, multilevel), NaN and a missing level."""
    df = _long_frame(seed=5)
    df = df[~((df["tutor"] == "a-tutor") & (df["level"] == "middle_class"))]  # no Friedman family there
    df = df[~((df["tutor"] == "b-tutor") & (df["level"] == "s_male_t_male"))]  # no Opposite effects there
    specs = load_contrasts()
    seen = set()
    for cm, (_, sub) in zip(cells.cell_matrices(df), ref.cell_groups(ref.wide_scores(df))):
        sub = sub.dropna(axis=1, how="all")
        for spec in specs:
            if spec.condition != cm.key[2]:
                continue
            old = list(ref.pair_differences(sub, spec))
            new = list(cells.pair_differences(cm, spec))
            assert [x[:3] for x in new] == [x[:3] for x in old]
            for (*_, d_old), (*_, d_new) in zip(old, new):
                np.testing.assert_array_equal(d_new, np.round(d_old, 12))  # bit-identical, NaN where unpaired
            if new:
                seen.add(spec.kind)
    assert seen == {"binary", "multilevel", "averaged"}
    # a multilevel spec needs every level; an averaged side needs all of its levels
    found = {(c.key[0], c.key[2], c.key[3]): c for c in cells.cell_matrices(df)}
    ses = next(s for s in specs if s.kind == "multilevel")
    a = found[("a-tutor", "explicit", "actionability")]
    assert list(cells.pair_differences(a, ses)) == [] and cells.complete_blocks(a, ses) is None
    effect = next(s for s in specs if s.kind == "averaged")
    assert list(cells.pair_differences(found[("b-tutor", "opposite", "actionability")], effect)) == []
    assert len(list(cells.pair_differences(found[("a-tutor", "opposite", "actionability")], effect))) == 1


def test_contrast_pairs_and_spread():
    df = _long_frame(seed=1)
    found = cells.cell_matrices(df)
    specs = load_contrasts()
    out = list(cells.contrast_pairs(found, specs))
    assert out and all(spec.condition == cm.key[2] for cm, spec, *_ in out)
    cm, _spec, _a, _b, _label, d = out[0]
    everyone = np.array(sorted({f"q{i}" for i in range(60)}))
    full = cm.spread(d, everyone)
    pos = np.searchsorted(everyone, cm.questions.astype(str))
    np.testing.assert_array_equal(full[pos], d)
    assert np.isnan(np.delete(full, pos)).all()
    with pytest.raises(EduFairError, match="outside"):
        cm.spread(d, everyone[:5])


def test_complete_blocks_are_the_friedman_input():
    df = _long_frame(seed=2)
    ses = next(s for s in load_contrasts() if s.kind == "multilevel")
    cm = next(c for c in cells.cell_matrices(df) if c.key[2] == "explicit")
    blocks = cells.complete_blocks(cm, ses)
    cols = np.column_stack([cm.column(lv) for lv in ses.levels])
    np.testing.assert_array_equal(blocks, cols[~np.isnan(cols).any(axis=1)])
    for (a, b), (_a, _b, _l, d) in zip(ses.pairs, cells.pair_differences(cm, ses)):
        i, j = ses.levels.index(a[0]), ses.levels.index(b[0])
        np.testing.assert_array_equal(d[~np.isnan(d)], round_diffs(blocks[:, i] - blocks[:, j]))


def test_contrast_grid_equals_the_per_row_algorithm():
    """Every non-Friedman grid row equals the frozen per-row algorithm on the pandas pairing."""
    df = _long_frame(seed=3)
    grid = contrast_grid(df, n_boot=150, seed=2)
    expected = {}
    for (tutor, _dom, cond, metric), sub in ref.cell_groups(ref.wide_scores(df)):
        sub = sub.dropna(axis=1, how="all")
        for spec in load_contrasts():
            if spec.condition != cond or spec.kind == "multilevel":
                continue
            for _a, _b, label, d in ref.pair_differences(sub, spec):
                d = np.round(d[~np.isnan(d)], 12)
                expected[(tutor, cond, spec.name, label, metric)] = ref.contrast_from_diffs(
                    d, n_boot=150, seed=2, min_pairs=15)
    rows = grid[grid["kind"] != "multilevel"]
    assert len(rows) == len(expected) > 20
    for row in rows.itertuples(index=False):
        old = expected[(row.tutor, row.condition, row.contrast, row.pair, row.metric)]
        for k in FIELDS:
            a, b = old[k], getattr(row, k)
            assert (math.isnan(a) and math.isnan(b)) if isinstance(a, float) and math.isnan(a) else b == pytest.approx(a, abs=1e-12, rel=0)
    # a grid row's noise floor is paired_contrast's
    g = grid[(grid["pair"] == "female-male") & (grid["metric"] == "actionability") & (grid["tutor"] == "a-tutor")].iloc[0]
    wide = df[(df.tutor == "a-tutor") & (df.metric == "actionability")].pivot_table(
        index="question_id", columns="level", values="value", dropna=False)
    c = paired_contrast(wide["female"], wide["male"], n_boot=150, seed=2)
    assert (g["null_abs_r"], g["p_perm"]) == (c.null_abs_r, c.p_perm)
    assert g["excess_abs_r"] == pytest.approx(abs(c.r) - c.null_abs_r)
