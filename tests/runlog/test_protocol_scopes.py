"""Paper and extension records pool in one report, each scope under its own protocol version: the
paper's conditions must carry PROTOCOL_VERSION, EduFair's extension conditions
EXTENSION_PROTOCOL_VERSION; an unknown version, or one of the other scope, is refused in one line."""

from __future__ import annotations

import json

import pytest

from edufair_metrics import EXTENSION_PROTOCOL_VERSION, PROTOCOL_VERSION
from edufair_metrics.errors import EduFairError
from edufair_metrics.records import record_in_line
from edufair_metrics.runlog import compat_fields, load_runs

from tests.helpers.synthetic_runs import write_run

KW = dict(domains=("physics",), n_questions=4)


def _rewrite(model_dir, condition: str, version: str) -> None:
    for sf in model_dir.glob(f"samples_edufair_{condition}_*.jsonl"):
        lines = []
        for ln in sf.read_text().splitlines():
            obj = json.loads(ln)
            record_in_line(obj)["provenance"]["protocol_version"] = version
            lines.append(json.dumps(obj))
        sf.write_text("\n".join(lines) + "\n")


def test_paper_and_extension_records_pool(tmp_path):
    write_run(tmp_path / "o", "org/t", provenance={}, conditions=("explicit", "intersectional"), **KW)
    (run,) = load_runs([tmp_path / "o"])
    assert run.protocol_scopes == {"paper": {PROTOCOL_VERSION}, "extension": {EXTENSION_PROTOCOL_VERSION}}
    ext = next(s for s in run.scores if s.condition == "intersectional")
    assert ext.task == "edufair_intersectional_physics"
    assert "protocol_version (extension conditions)" in run.compat and "protocol_extensions_sha256" in run.compat


@pytest.mark.parametrize("condition, version, expected", [
    ("intersectional", "edufair-ext-0", "edufair-ext-0"),
    ("intersectional", PROTOCOL_VERSION, PROTOCOL_VERSION),
    ("explicit", EXTENSION_PROTOCOL_VERSION, EXTENSION_PROTOCOL_VERSION),
])
def test_a_version_of_another_scope_or_release_is_refused(tmp_path, condition, version, expected):
    model_dir = write_run(tmp_path / "o", "org/t", provenance={}, conditions=("explicit", "intersectional"), **KW)
    _rewrite(model_dir, condition, version)
    with pytest.raises(EduFairError, match=f"protocol version {expected}"):
        load_runs([tmp_path / "o"])


def test_compat_fields_of_a_paper_record_are_unchanged():
    prov = {"protocol_version": PROTOCOL_VERSION, "protocol_sha256": "abc", "judge_prompts_sha256": "def"}
    assert compat_fields(prov) == {"protocol_version": PROTOCOL_VERSION, "protocol_sha256": "abc",
                                   "judge_prompts_sha256": "def"}
