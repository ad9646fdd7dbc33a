"""Prompt texts are data (protocol.yaml) and must match the paper's Appendix C verbatim."""

import pytest

from edufair_metrics.errors import EduFairError
from edufair_metrics.protocol.prompts import condition_levels, expand_documents, load_protocol, system_prompts
from edufair_metrics.records import BankItem


def _paper_line_after(lines: list[str], header: str) -> str:
    idx = lines.index(header)
    return next(line for line in lines[idx + 1 :] if line.strip())


@pytest.fixture(scope="module")
def paper_lines(shared_file):
    return shared_file("papers", "edufair-bench-arxiv-html.txt").read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize(
    "header,key",
    [
        ("Student Age Prompt", "student_age"),
        ("Student Behavior Prompt", "student_behavior"),
        ("Tutor Age Prompt", "tutor_age"),
        ("Tutor Behavior Prompt", "tutor_behavior"),
        ("Explicit Tutor Framing – Gender", "explicit_gender"),
        ("Explicit Tutor Framing – Immigration Background", "explicit_immigration"),
        ("Explicit Tutor Framing – First Language", "explicit_language"),
        ("Explicit Tutor Framing – Socioeconomic Status", "explicit_ses"),
        ("Opposite – Student Gender Prompt", "opposite_student"),
        ("Opposite – Tutor Gender Prompt", "opposite_tutor"),
    ],
)
def test_prompt_components_match_appendix_c(paper_lines, header, key):
    assert load_protocol()["prompts"][key] == _paper_line_after(paper_lines, header)


def test_implicit_name_sentence_matches_appendix_c(paper_lines):
    example = _paper_line_after(paper_lines, "Implicit Name Prompt (example)")
    prompts = load_protocol()["prompts"]
    assert example == prompts["tutor_age"] + " " + prompts["implicit_name"]
    # and the composed prompt begins with exactly the paper's example, for every name
    for lv in condition_levels("implicit"):
        sp = system_prompts(lv, "physics")
        expected = example.replace("{GRADE}", "8").replace("{DOMAIN}", "physics").replace("{NAME}", lv.attributes["name"])
        assert sp.tutor.startswith(expected + " "), lv.level


def test_level_values_match_appendix_c(paper_lines):
    text = "\n".join(paper_lines)
    assert "{female, male}" in text and "{native-born, immigrant}" in text
    assert "{English, a language other than English}" in text
    assert "{low-income, middle-class, high-income}" in text
    explicit = {lv.level: lv.attributes for lv in condition_levels("explicit")}
    assert explicit["other_language"]["language"] == "a language other than English"
    assert explicit["middle_class"]["ses"] == "middle-class"
    names = [lv.attributes["name"] for lv in condition_levels("implicit")]
    assert names == ["Michael", "Jessica", "Wei", "Ji-Yoon"]
    for name in names:
        assert f"“{name}”" in text


def test_explicit_prompts_replace_the_age_sentence():
    female = next(lv for lv in condition_levels("explicit") if lv.level == "female")
    sp = system_prompts(female, "mathematics")
    assert sp.tutor.startswith("This is a Grade 9 female student taking a mathematics class. You are a tutor helping")
    assert "This is a Grade 9 student taking" not in sp.tutor
    # The student never sees the demographic signal in Explicit.
    assert sp.student.startswith("You are a Grade 9 student taking a mathematics class. You are a struggling")
    assert "female" not in sp.student


def test_language_framing_sentence():
    lv = next(lv for lv in condition_levels("explicit") if lv.level == "other_language")
    sp = system_prompts(lv, "physics")
    assert sp.tutor.startswith(
        "This is a Grade 8 student whose first language is a language other than English, taking a physics class."
    )


def test_implicit_and_opposite_composition():
    wei = next(lv for lv in condition_levels("implicit") if lv.level == "wei")
    sp = system_prompts(wei, "chemistry")
    # §3.2.1 / App. C.2: the name sentence comes directly after the age sentence, before the
    # behaviour prompt (as early in the prompt as Explicit's framing sentence).
    assert sp.tutor.startswith("This is a Grade 8 student taking a chemistry class. The student’s name is Wei. You are a tutor")
    assert sp.tutor.count("Wei") == 1 and sp.tutor.endswith("or any reasoning tags.")
    assert "Wei" not in sp.student
    mismatch = next(lv for lv in condition_levels("opposite") if lv.level == "s_female_t_male")
    sp = system_prompts(mismatch, "physics")
    assert sp.tutor.endswith("The student is male.")
    assert sp.student.endswith("You are female.")


def _item(i: int, domain: str = "physics") -> BankItem:
    return BankItem(id=f"q{i}", domain=domain, grade=8, question=f"Q{i}?", answer="a", answer_forms=["a"], source="sciq")


def test_documents_are_question_major():
    docs = expand_documents([_item(1), _item(2)], "explicit")
    assert len(docs) == 18
    assert [d["question_id"] for d in docs[:9]] == ["q1"] * 9
    assert [d["level"] for d in docs[:9]] == [lv.level for lv in condition_levels("explicit")]
    assert docs[9]["question_id"] == "q2"
    # Only the demographic component differs between the levels of one question.
    tutor_prompts = {d["tutor_system"] for d in docs[:9]}
    assert len(tutor_prompts) == 9
    assert len({d["student_system"] for d in docs[:9]}) == 1


def test_unknown_condition_and_level_are_errors():
    with pytest.raises(EduFairError, match="unknown condition 'covert'"):
        expand_documents([_item(1)], "covert")
    with pytest.raises(EduFairError, match="unknown level"):
        expand_documents([_item(1)], "explicit", ["female", "martian"])


def test_grade_must_match_domain():
    bad = BankItem(id="x", domain="mathematics", grade=8, question="?", answer="1", answer_forms=["1"], source="gsm8k-proxy")
    with pytest.raises(EduFairError, match="grade 8 does not match"):
        expand_documents([bad], "explicit")
