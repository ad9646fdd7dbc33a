"""The mutation script's bookkeeping (no mutant is run here): the score's Clopper–Pearson bounds
against their closed forms, the merge of shard / rerun files, and that the lists it reads name
modules of ``mutation.toml``."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from tests.mutation.run_mutation import (
    EQUIVALENT,
    NAMED,
    Mutant,
    interval,
    load_config,
    merge_runs,
    score,
    table,
    tomllib,
)

MOD = "edufair_metrics/analysis/turns.py"


def _m(i, outcome, line=1):
    return Mutant(MOD, "core/NumberReplacer", i, line, f"x = {i}", f"x = {i + 1}", outcome)


def test_the_bounds_are_clopper_pearsons():
    # all caught: the one-sided lower bound solves p^n = 0.05, the two-sided one p^n = 0.025
    ms = [_m(i, "caught") for i in range(30)] + [_m(99, "equivalent")]
    c, s, e, sc, low = score(ms)
    assert (c, s, e, sc) == (30, 0, 1, 1.0)
    assert low == pytest.approx(0.05 ** (1 / 30))
    assert interval(30, 0) == pytest.approx((0.025 ** (1 / 30), 1.0))
    # none caught: the upper bound solves (1 - p)^n = 0.025
    assert interval(0, 10) == pytest.approx((0.0, 1 - 0.025 ** (1 / 10)))
    lo, hi = interval(9, 1)
    assert lo < 0.9 < hi < 1
    assert [x != x for x in interval(0, 0)] == [True, True]


def test_shards_and_reruns_merge_by_mutant_the_later_file_winning(tmp_path):
    first = tmp_path / "a.json"
    second = tmp_path / "b.json"
    first.write_text(json.dumps({MOD: [asdict(_m(0, "caught")), asdict(_m(1, "survived"))]}))
    second.write_text(json.dumps({MOD: [asdict(_m(1, "caught")), asdict(_m(2, "survived"))]}))
    merged = merge_runs([first, second], equivalent={MOD: {_m(2, "").key: "why"}})
    assert [(m.occurrence, m.outcome) for m in merged[MOD]] == [(0, "caught"), (1, "caught"), (2, "equivalent")]
    text = table(merged, {MOD: 300})
    assert f"| `{MOD}` | 3 of 300 | 2 | 0 | 1 | 100% |" in text


def test_the_lists_name_modules_of_the_configuration():
    modules = set(load_config()["modules"])
    with open(EQUIVALENT, "rb") as fh:
        equivalent = tomllib.load(fh)["equivalent"]
    with open(NAMED, "rb") as fh:
        named = tomllib.load(fh)["named"]
    assert set(equivalent) <= modules and set(named) <= modules
    for entries in equivalent.values():
        assert all(e["mutant"].count("  ->  ") == 1 and e["why"].strip() for e in entries)
    for entries in named.values():
        assert all(set(e) == {"what", "from", "to"} for e in entries)


def test_an_entry_whose_code_is_gone_is_reported_stale(tmp_path):
    from tests.mutation.run_mutation import load_equivalent, stale_entries

    with open(NAMED, "rb") as fh:
        named = tomllib.load(fh)["named"]
    equivalent = load_equivalent()
    for mod in set(named) | set(equivalent):
        (tmp_path / mod).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / mod).write_text("x = 1\n")  # every module rewritten
    stale = stale_entries(tmp_path)
    assert len(stale) == sum(map(len, named.values())) + sum(map(len, equivalent.values()))
