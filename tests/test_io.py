"""One-line errors of the JSON and YAML readers: file, line and column, never a traceback."""

from __future__ import annotations

import pytest

from edufair_metrics.errors import EduFairError
from edufair_metrics.io import iter_jsonl, read_json, read_yaml


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


def test_read_yaml_errors_are_one_line_with_file_line_and_column(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text("a: 1\n  b: 2\n")
    with pytest.raises(EduFairError) as ei:
        read_yaml(p, "settings file")
    msg = str(ei.value)
    assert msg.startswith(f"{p}:2:4: invalid YAML in the settings file (") and "\n" not in msg, msg
    with pytest.raises(EduFairError, match=r"^cannot read judge config .*absent.yaml: No such file"):
        read_yaml(tmp_path / "absent.yaml", "judge config")
    p.write_bytes(b"a: caf\xe9\n")
    with pytest.raises(EduFairError, match="not UTF-8"):
        read_yaml(p)
    p.write_text("")
    assert read_yaml(p) is None
    p.write_text("judge: {model: m}\n")
    assert read_yaml(p) == {"judge": {"model": "m"}}
