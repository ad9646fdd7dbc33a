"""EduFair's extension conditions are data beside the paper's protocol: ``protocol-extensions.yaml``
(its own version, its own hash), read together with ``protocol.yaml`` only for the extension
conditions; the paper's conditions, prompts and contrasts are untouched."""

from __future__ import annotations

import numpy as np
import pytest

from edufair_metrics import EXTENSION_PROTOCOL_VERSION, PROTOCOL_VERSION
from edufair_metrics.analysis.cells import CellMatrix, pair_differences
from edufair_metrics.lmeval import task_names
from edufair_metrics.protocol import (
    condition_levels,
    expand_documents,
    extension_provenance,
    extensions_hash,
    load_extensions,
    load_protocol,
    protocol_for,
    protocol_path,
    system_prompts,
)
from edufair_metrics.protocol.contrasts import load_contrasts
from edufair_metrics.protocol.cues import condition_cues, mask_text
from edufair_metrics.protocol.prompts import cue_sentences
from edufair_metrics.records import CONDITIONS, EXTENSION_CONDITIONS, BankItem
from edufair_metrics.run import task_documents
from edufair_metrics.settings import resolve_runner_settings

GRADE_DOMAIN = {"GRADE": "8", "DOMAIN": "physics"}


def _fill(template: str, values: dict[str, str]) -> str:
    for k, v in values.items():
        template = template.replace("{" + k + "}", v)
    return template


def _framing(level) -> str:
    return system_prompts(level, "physics").tutor.split(" You are a tutor", 1)[0]


def test_the_extensions_file_has_its_own_version_and_adds_only_new_keys():
    ext, base = load_extensions(), load_protocol()
    assert ext["version"] == EXTENSION_PROTOCOL_VERSION != PROTOCOL_VERSION == base["version"]
    for section in ("prompts", "composition", "conditions"):
        assert not set(ext[section]) & set(base[section]), section
    assert set(ext["conditions"]) == set(EXTENSION_CONDITIONS)
    # the paper's conditions are read from protocol.yaml alone, the extensions from both
    for cond in CONDITIONS:
        assert protocol_for(cond) is load_protocol()
    assert protocol_for("intersectional")["prompts"]["tutor_behavior"] == base["prompts"]["tutor_behavior"]


def test_intersectional_wording_is_derived_from_the_paper_templates():
    """Leaving either value out of an intersectional sentence gives exactly the paper's sentence of
    the other dimension (App. C.2's single-dimension templates), for every level."""
    p = load_protocol()["prompts"]
    levels = condition_levels("intersectional")
    assert len(levels) == 8
    for lv in levels:
        sentence = _framing(lv)
        gender = lv.attributes["gender"]
        other = "ses" if "ses" in lv.attributes else "immigration"
        value = lv.attributes[other]
        paper_other = _fill(p["explicit_ses" if other == "ses" else "explicit_immigration"],
                            {**GRADE_DOMAIN, other.upper(): value})
        paper_gender = _fill(p["explicit_gender"], {**GRADE_DOMAIN, "GENDER": gender})
        assert sentence.replace(f" {gender} ", " ", 1) == paper_other, lv.level
        drop = f" from a {value} family" if other == "ses" else f" {value} "
        assert sentence.replace(drop, "" if other == "ses" else " ", 1) == paper_gender, lv.level
    by = {lv.level: _framing(lv) for lv in levels}
    assert by["female_low_income"] == "This is a Grade 8 female student from a low-income family taking a physics class."
    assert by["male_immigrant"] == "This is a Grade 8 male immigrant student taking a physics class."


def test_intersectional_documents_change_only_the_framing_sentence():
    items = [BankItem(id=f"q{i}", domain="physics", grade=8, question=f"Q{i}?", answer="a", answer_forms=["a"],
                      source="sciq") for i in range(2)]
    docs = expand_documents(items, "intersectional")
    assert len(docs) == 16 and [d["question_id"] for d in docs[:8]] == ["q0"] * 8
    explicit = expand_documents(items[:1], "explicit")
    assert {d["student_system"] for d in docs} == {explicit[0]["student_system"]}  # the student is base-only
    tails = {d["tutor_system"].split(". ", 1)[1] for d in docs}
    assert tails == {explicit[0]["tutor_system"].split(". ", 1)[1]}  # the behaviour prompt is the paper's
    assert cue_sentences(condition_levels("intersectional")[0], "physics").tutor == _framing(condition_levels("intersectional")[0])
    text, n = mask_text("You are a low-income girl, an immigrant.", condition_cues("intersectional"))
    assert n == 3 and "low-income" not in text and "immigrant" not in text


def test_intersectional_contrasts_simple_effects_and_interaction():
    specs = {s.dimension: s for s in load_contrasts() if s.condition == "intersectional"}
    assert len(specs) == 10 and not any(s.headline for s in specs.values())
    # the paper's contrasts are as they were (an extension never joins the paper's headline)
    paper = [s for s in load_contrasts() if s.condition in CONDITIONS]
    assert paper == load_contrasts(protocol_path())
    rng = np.random.default_rng(3)
    levels = ("female_high_income", "female_low_income", "male_high_income", "male_low_income")
    vals = rng.integers(0, 5, size=(40, 4)) / 4
    cell = CellMatrix(("t", "physics", "intersectional", "m"), np.array([f"q{i:02d}" for i in range(40)]), levels, vals)
    fl, fh, ml, mh = (cell.column(x) for x in ("female_low_income", "female_high_income", "male_low_income", "male_high_income"))
    (_, _, _, d), = pair_differences(cell, specs["gender_x_ses"])
    np.testing.assert_allclose(2 * d, (fl - ml) - (fh - mh), atol=1e-12)  # half the difference of differences
    (_, _, _, d), = pair_differences(cell, specs["gender_within_low_income"])
    np.testing.assert_allclose(d, fl - ml, atol=1e-12)
    (_, _, _, d), = pair_differences(cell, specs["ses_within_male"])
    np.testing.assert_allclose(d, ml - mh, atol=1e-12)


def test_extension_tasks_record_the_extension_protocol(bank_dir):
    settings = resolve_runner_settings({"student": {"model": "local-chat-completions"}},
                                       {"edufair": {"bank_dir": str(bank_dir), "judge": {"enabled": False}}})
    ext = task_documents("edufair_intersectional_physics", "intersectional", "physics", settings)
    assert ext.protocol == {"protocol_version": EXTENSION_PROTOCOL_VERSION, "protocol_extensions_sha256": extensions_hash()}
    assert len(ext.documents) == 2 * 8
    assert task_documents("edufair_explicit_physics", "explicit", "physics", settings).protocol is None
    assert extension_provenance("explicit") is None


def test_the_extension_tasks_are_listed():
    names = task_names()
    for d in ("math", "physics", "chemistry"):
        assert names[f"edufair_intersectional_{d}"] == "task"
    assert names["edufair_intersectional"].startswith("group of edufair_intersectional_math")
    assert "edufair_intersectional" not in names["edufair"]  # the paper's group is the paper's nine


@pytest.mark.parametrize("line", ["Explicit Tutor Framing – Gender", "Explicit Tutor Framing – Socioeconomic Status",
                                  "Explicit Tutor Framing – Immigration Background"])
def test_the_paper_templates_used_in_the_derivation_are_the_papers(shared_file, line):
    lines = shared_file("papers", "edufair-bench-arxiv-html.txt").read_text(encoding="utf-8").splitlines()
    text = next(x for x in lines[lines.index(line) + 1:] if x.strip())
    key = {"Gender": "explicit_gender", "Socioeconomic Status": "explicit_ses", "Immigration Background": "explicit_immigration"}
    assert load_protocol()["prompts"][key[line.split("– ")[1]]] == text
