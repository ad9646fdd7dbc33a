"""One-line errors of the JSON readers: file, line and column, never a traceback."""

from __future__ import annotations

import pytest

from edufair_metrics.errors import EduFairError
from edufair_metrics.io import iter_jsonl, read_json


def test_jsonl_error_names_file_line_and_column(tmp_path):
    f = tmp_path / "bank.jsonl"
    f.write_text('{"a": 1}\n{"a": 1,, "b": 2}\n')
    with pytest.raises(EduFairError, match=r"bank\.jsonl:2:9: malformed JSON"):
        list(iter_jsonl(f))


def test_non_utf8_line_names_file_line_and_byte(tmp_path):
    f = tmp_path / "bank.jsonl"
    f.write_bytes(b'{"a": 1}\n{"q": "caf\xe9"}\n')
    with pytest.raises(EduFairError) as err:
        list(iter_jsonl(f))
    msg = str(err.value)
    assert msg.startswith(f"{f}:2:") and "not UTF-8" in msg and "0xe9" in msg and "\n" not in msg


def test_read_json_column(tmp_path):
    f = tmp_path / "x.json"
    f.write_text('{\n  "a": tru\n}')
    with pytest.raises(EduFairError, match=r"x\.json:2:8: malformed JSON"):
        read_json(f)
