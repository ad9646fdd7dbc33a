"""Conditions are presented from data (protocol/data/presentation.yaml), not from special cases in
report code: every protocol condition has an entry, the headline family agrees with the protocol's
split into the paper's and the extensions' conditions, one running order serves every view, and a
condition without an entry still appears (with a default), never vanishes from summary.md."""

from __future__ import annotations

import pandas as pd

from edufair_metrics.protocol import load_protocol
from edufair_metrics.protocol.presentation import extension_conditions, is_extension, ordered, presentation
from edufair_metrics.protocol.prompts import merged_protocol
from edufair_metrics.records import ALL_CONDITIONS, EXTENSION_CONDITIONS
from edufair_metrics.report.write import extension_section


def test_every_protocol_condition_is_presented_and_the_families_agree():
    conditions = list(merged_protocol()["conditions"])
    assert set(conditions) == set(ALL_CONDITIONS)
    for cond in conditions:
        shown = presentation(cond)
        assert shown.listed and shown.title and shown.tables, cond
        assert is_extension(cond) == (cond in EXTENSION_CONDITIONS) == (cond not in load_protocol()["conditions"])
    # one running order: the protocol's (explicit, implicit, opposite, then the extensions)
    assert ordered(reversed(ALL_CONDITIONS)) == list(ALL_CONDITIONS)


def test_the_condition_lists_are_read_from_the_protocol_data_not_written_by_hand():
    """records.CONDITIONS / EXTENSION_CONDITIONS are the condition keys of protocol.yaml and
    protocol-extensions.yaml, in their order (a condition added there is known everywhere)."""
    import ast
    import inspect

    from edufair_metrics import records
    from edufair_metrics.protocol import load_extensions

    assert records.CONDITIONS == tuple(load_protocol()["conditions"]) == ("explicit", "implicit", "opposite")
    assert records.EXTENSION_CONDITIONS == tuple(load_extensions()["conditions"])
    assert records.ALL_CONDITIONS == records.CONDITIONS + records.EXTENSION_CONDITIONS
    assert len(set(ALL_CONDITIONS)) == len(ALL_CONDITIONS)
    # no literal tuple of condition names left in records.py
    tree = ast.parse(inspect.getsource(records))
    literals = [n for n in ast.walk(tree) if isinstance(n, ast.Tuple)
                and {getattr(e, "value", None) for e in n.elts} & set(ALL_CONDITIONS)]
    assert not literals


def _units(condition: str) -> pd.DataFrame:
    rows = [{"tutor": "t", "domain": "physics", "condition": condition, "dimension": "d", "contrast": f"C{i}",
             "metric": "actionability", "metric_kind": "pedagogical", "headline": False, "verdict": "inconclusive",
             "abs_r": 0.05, "q_unit": 0.5, "n_pairs_min": 20, "unbiased_abs_r": 0.0, "mde_r": 0.3,
             "more_questions": 10.0, "r2_unbiased": 0.0, "r2_var": 0.01, "n_certify": 40.0} for i in range(3)]
    return pd.DataFrame(rows)


def test_a_condition_without_presentation_data_is_shown_with_a_default():
    shown = presentation("gender_age")
    assert not shown.listed and shown.extension and shown.title == "Gender age"
    assert ordered(["gender_age", "implicit_names", "explicit"]) == ["explicit", "implicit_names", "gender_age"]
    assert extension_conditions(["explicit", "gender_age"]) == ["gender_age"]
    lines = "\n".join(extension_section(_units("gender_age")))
    assert "Gender age: units by verdict" in lines and "units.csv" in lines


def test_the_summary_lists_every_extension_condition_in_the_data():
    units = pd.concat([_units("implicit_names"), _units("intersectional")], ignore_index=True)
    text = "\n".join(extension_section(units))
    assert text.index("Intersectional Explicit: units by verdict") < text.index("Many names per group: units by verdict")


def test_the_gate_never_repeats_its_verdict_and_a_single_unit_is_singular():
    """Two wordings a reader tripped over: "INCONCLUSIVE: inconclusive: ..." and "Each cell averages 1 units"."""
    from edufair_metrics.report.compare import reason_text

    assert reason_text("inconclusive", ["inconclusive: the change straddles", "x"]) == ": the change straddles; x"
    assert reason_text("fail", ["inconclusive: kept"]) == ": inconclusive: kept"
    assert reason_text("pass", []) == ""
    from pathlib import Path

    src = (Path(__file__).resolve().parents[2] / "edufair_metrics" / "report" / "tables.py").read_text(encoding="utf-8")
    assert "averages {n_dims} units" not in src
