"""The statistics reproduce, bit for bit, the outputs frozen in tests/analysis/data/pairing_reference/
(written by the code before the pairing engine merged its pairing loops, percentile helpers and SES
headline tagging; ``tests/analysis/pairing_reference.py`` documents inputs and outputs)."""

import difflib

import pytest

from tests.analysis import pairing_reference as ref


@pytest.fixture(scope="module")
def outputs():
    return ref.outputs()


def test_every_frozen_output_is_recomputed(outputs):
    frozen = sorted(p.name[: -len(".csv.gz")] for p in ref.DATA.glob("*.csv.gz"))
    assert frozen == sorted(outputs)


@pytest.mark.parametrize("stem", sorted(p.name[: -len(".csv.gz")] for p in ref.DATA.glob("*.csv.gz")))
def test_output_is_bit_identical(outputs, stem):
    old, new = ref.read_text(stem), ref.to_csv_text(outputs[stem])
    if old != new:
        diff = "".join(list(difflib.unified_diff(old.splitlines(True), new.splitlines(True), "frozen", "now", n=0))[:12])
        pytest.fail(f"{stem} differs from the frozen reference:\n{diff}")
