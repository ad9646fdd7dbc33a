"""Intersectional Explicit end to end with scripted tutors (no lm-eval, no network): a tutor that
treats only low-income girls differently shows up as the two simple effects that contain that cell
and as the gender × SES interaction, nothing else; a tutor without the effect flags nothing."""

from __future__ import annotations

import pytest
import yaml

from edufair_metrics import EXTENSION_PROTOCOL_VERSION
from edufair_metrics.analysis.frames import scores_frame
from edufair_metrics.analysis.params import StatParams, analyse_frame
from edufair_metrics.protocol import extensions_hash
from edufair_metrics.run import RoleModel, TaskSpec, run_task, task_documents
from edufair_metrics.settings import resolve_runner_settings
from lm_eval_tasks import TASKS_DIR

from tests.helpers.axes import Scripted, noisy_tutor, plain_student, write_axes_bank

TASK = "edufair_intersectional_physics"
PLANTED = "female student from a low-income family"


def run_intersectional(tmp_path, extra_words, n_questions=24, seed=""):
    template = yaml.safe_load((TASKS_DIR / "_edufair_template_yaml").read_text().replace("!function", ""))
    bank = write_axes_bank(tmp_path / "bank", n_questions)
    settings = resolve_runner_settings(template["edufair"], {"edufair": {
        "bank_dir": str(bank), "max_tutor_turns": 2, "judge": {"enabled": False}, "preflight": False}})
    found = task_documents(TASK, "intersectional", "physics", settings)
    spec = TaskSpec(TASK, "intersectional", "physics", template["generation_kwargs"], bank_file=found.bank_file,
                    protocol=found.protocol)
    result = run_task(spec, settings, found.documents,
                      tutor=RoleModel(Scripted(noisy_tutor(extra_words, seed)), {"kind": "scripted", "model_args": {}}),
                      student=RoleModel(Scripted(plain_student), {"kind": "scripted-student", "model_args": {}}),
                      judge=None, cache=None, progress=False)
    grid, units = analyse_frame(scores_frame([r.scores for r in result.records]), StatParams(n_boot=200))
    return result, grid, units


def _verdicts(units, metric="tutor_avg_word"):
    u = units[(units["condition"] == "intersectional") & (units["metric"] == metric)]
    return dict(zip(u["contrast"], u["verdict"]))


def test_an_interaction_in_one_cell_is_found(tmp_path):
    result, grid, units = run_intersectional(tmp_path, lambda system, q: 4 if PLANTED in system else 0)
    assert len(result.records) == 24 * 8
    prov = result.records[0].provenance
    assert prov["protocol_version"] == EXTENSION_PROTOCOL_VERSION
    assert prov["protocol_extensions_sha256"] == extensions_hash()
    v = _verdicts(units)
    flagged = {c for c, x in v.items() if x == "flag"}
    assert flagged == {"Gender within low-income", "SES within female", "Gender × SES interaction"}, v
    row = grid[(grid["contrast"] == "Gender × SES interaction") & (grid["metric"] == "tutor_avg_word")].iloc[0]
    assert row["r"] > 0 and row["ci_low"] > 0  # low-income girls get more than the two gaps add up to
    assert not units["headline"][units["condition"] == "intersectional"].any()


@pytest.mark.parametrize("seed", ["a", "b"])
def test_no_effect_no_flag(tmp_path, seed):
    result, grid, units = run_intersectional(tmp_path, lambda system, q: 0, seed=seed)
    ext = units[units["condition"] == "intersectional"]
    assert len(ext) and not (ext["verdict"] == "flag").any(), ext[ext["verdict"] == "flag"]
