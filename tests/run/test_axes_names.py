"""Many names per group end to end with scripted tutors: a tutor that reacts to ONE name is reported
as a name artefact, not as a group gap; a tutor that treats every name of a group differently is a
group gap; a tutor without either flags nothing."""

from __future__ import annotations

import pytest
import yaml

from edufair_metrics import EXTENSION_PROTOCOL_VERSION
from edufair_metrics.analysis.frames import scores_frame
from edufair_metrics.analysis.params import StatParams, analyse_frame
from edufair_metrics.run import RoleModel, TaskSpec, run_task, task_documents
from edufair_metrics.settings import resolve_runner_settings
from lm_eval_tasks import TASKS_DIR

from tests.helpers.axes import Scripted, noisy_tutor, plain_student, write_axes_bank

TASK = "edufair_implicit_names_physics"
BLACK = ("Jamal", "Malik", "Rashad", "Jasmine", "Ebony", "Nia")  # the Black names drawn with seed 0, k = 3


def run_names(tmp_path, extra_words, n_questions=24, seed="", names=None):
    template = yaml.safe_load((TASKS_DIR / "_edufair_template_yaml").read_text().replace("!function", ""))
    bank = write_axes_bank(tmp_path / "bank", n_questions)
    settings = resolve_runner_settings(template["edufair"], {"edufair": {
        "bank_dir": str(bank), "max_tutor_turns": 2, "judge": {"enabled": False}, "preflight": False,
        **({"names": names} if names else {})}})
    found = task_documents(TASK, "implicit_names", "physics", settings)
    spec = TaskSpec(TASK, "implicit_names", "physics", template["generation_kwargs"], bank_file=found.bank_file,
                    protocol=found.protocol)
    result = run_task(spec, settings, found.documents,
                      tutor=RoleModel(Scripted(noisy_tutor(extra_words, seed)), {"kind": "scripted", "model_args": {}}),
                      student=RoleModel(Scripted(plain_student), {"kind": "scripted-student", "model_args": {}}),
                      judge=None, cache=None, progress=False)
    grid, units = analyse_frame(scores_frame([r.scores for r in result.records]), StatParams(n_boot=300))
    return result, grid[grid["metric"] == "tutor_avg_word"].set_index("dimension")


def _name_in(system: str, names) -> bool:
    return any(f"name is {n}." in system for n in names)


def test_one_name_alone_is_a_name_artefact_not_a_group_gap(tmp_path):
    result, g = run_names(tmp_path, lambda system, q: 6 if _name_in(system, ["Jamal"]) else 0)
    assert len(result.records) == 24 * 24
    draw = result.records[0].provenance["names_draw"]
    assert result.records[0].provenance["protocol_version"] == EXTENSION_PROTOCOL_VERSION
    assert draw["k"] == 3 and "Jamal" in draw["drawn"]["male/black"]
    row = g.loc["black_white"]
    assert row["p_question"] < 0.001  # with the names fixed, Black names "get more"
    assert row["verdict"] != "flag" and row["name_check"] == "name artefact", row[["p_name", "name_het_p", "verdict"]]
    assert row["name_outlier"] == "jamal" and row["name_het_p"] < 0.001
    assert g.loc["gender", "name_check"] == "name artefact"  # Jamal is male
    assert not (g["verdict"] == "flag").any()


def test_a_whole_group_is_a_group_gap(tmp_path):
    result, g = run_names(tmp_path, lambda system, q: 4 if _name_in(system, BLACK) else 0)
    row = g.loc["black_white"]
    assert row["verdict"] == "flag" and row["name_check"] == "group gap" and row["r"] > 0.5
    assert row["p_name"] < 0.01 and row["ci_low"] > 0
    assert g.loc["hispanic_white", "verdict"] != "flag" and g.loc["asian_white", "verdict"] != "flag"


@pytest.mark.parametrize("seed", ["a", "b"])
def test_no_effect_no_flag_no_artefact(tmp_path, seed):
    _, g = run_names(tmp_path, lambda system, q: 0, seed=seed)
    # ("not generalised" may appear: a chance flag of the fixed-names reading that the names do not carry)
    assert not (g["verdict"] == "flag").any() and not g["name_check"].isin(["group gap", "name artefact"]).any(), \
        g[["verdict", "name_check"]]


def test_one_name_per_cell_cannot_tell_a_group_from_its_names(tmp_path):
    # the paper's design (one name per cell): even a real group gap is "not generalised"
    _, g = run_names(tmp_path, lambda system, q: 4 if _name_in(system, BLACK + ("Tyrone", "Xavier", "Keisha", "Aaliyah"))
                     else 0, names={"k": 1, "seed": 0})
    row = g.loc["black_white"]
    assert row["p_question"] < 0.001 and row["verdict"] != "flag" and row["name_check"] == "not generalised"
