"""The statistics reproduce the outputs frozen in tests/analysis/data/pairing_reference/
(written by the code before the pairing engine merged its pairing loops, percentile helpers and SES
headline tagging; ``tests/analysis/pairing_reference.py`` documents inputs and outputs): every
label, count and flag exactly, every float to 1e-12 relative. Not bit for bit: the same code gives
floats that differ in the last unit on different CPUs (SIMD summation order in numpy), seen between
two x86-64 machines of this project."""

import difflib
import io

import numpy as np
import pandas as pd

import pytest

from tests.analysis import pairing_reference as ref


@pytest.fixture(scope="module")
def outputs():
    return ref.outputs()


def test_every_frozen_output_is_recomputed(outputs):
    frozen = sorted(p.name[: -len(".csv.gz")] for p in ref.DATA.glob("*.csv.gz"))
    assert frozen == sorted(outputs)


@pytest.mark.parametrize("stem", sorted(p.name[: -len(".csv.gz")] for p in ref.DATA.glob("*.csv.gz")))
def test_output_matches_the_frozen_reference(outputs, stem):
    old, new = ref.read_text(stem), ref.to_csv_text(outputs[stem])
    if old != new and not _same_up_to_float_rounding(old, new):
        diff = "".join(list(difflib.unified_diff(old.splitlines(True), new.splitlines(True), "frozen", "now", n=0))[:12])
        pytest.fail(f"{stem} differs from the frozen reference:\n{diff}")


def _same_up_to_float_rounding(old: str, new: str) -> bool:
    a, b = (pd.read_csv(io.StringIO(t), keep_default_na=False, dtype=str) for t in (old, new))
    if list(a.columns) != list(b.columns) or a.shape != b.shape:
        return False
    for col in a.columns:
        if (a[col] == b[col]).all():
            continue
        x, y = pd.to_numeric(a[col], errors="coerce"), pd.to_numeric(b[col], errors="coerce")
        text_cells = x.isna() & (a[col] != "") & (a[col].str.lower() != "nan")
        if text_cells.any() or not (x.isna() == y.isna()).all():
            return False  # a label, flag or missing value changed: never a rounding difference
        if not np.allclose(x, y, rtol=1e-12, atol=1e-15, equal_nan=True):
            return False
    return True


def test_a_rounding_difference_passes_and_a_real_change_does_not():
    old = "a,x,flag\nu,0.077551020408163265,True\n"
    assert _same_up_to_float_rounding(old, "a,x,flag\nu,0.077551020408163251,True\n")
    assert not _same_up_to_float_rounding(old, "a,x,flag\nu,0.07755102041,True\n")
    assert not _same_up_to_float_rounding(old, "a,x,flag\nu,0.077551020408163265,False\n")
    assert not _same_up_to_float_rounding(old, "a,x,flag\nv,0.077551020408163265,True\n")
