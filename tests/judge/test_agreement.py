"""Second-judge agreement (``edufair agreement``) and judge-vs-detector validity (differential judge
error), on synthetic judged runs whose biases are known by construction; the second judging is
produced by the real ``edufair judge --judge-model`` against the loopback fake judge."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from edufair_metrics.analysis.agreement import agreement
from edufair_metrics.analysis.frames import scores_frame
from edufair_metrics.analysis.grid import contrast_grid
from edufair_metrics.analysis.judge_validity import (
    contrast_comparison,
    detector_agreement_by_level,
    differential_error,
    judge_validity_grid,
    leak_turn_rows,
    match_judgings,
)
from edufair_metrics.analysis.params import StatParams
from edufair_metrics.cli import main as edufair
from edufair_metrics.errors import EduFairError
from edufair_metrics.io import atomic_write_jsonl
from edufair_metrics.records import JUDGE_OK, Transcript, Turn, TurnJudgement
from edufair_metrics.report.judge_validity import judge_validity_markdown, read_agreement_dir
from edufair_metrics.runlog import build_record, load_records

from tests.helpers.fake_openai import FakeOpenAI, labels_json
from tests.helpers.judge_env import JUDGE_ENV_VARS

N_Q = 20
QUESTION = "Each sandwich needs 2 loaves. He makes 9 sandwiches. How many loaves does he need?"
LEAK_TEXT = "Each of the 9 sandwiches needs 2, so he needs 18 loaves."


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for v in JUDGE_ENV_VARS:
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("EDUFAIR_CACHE_DIR", str(tmp_path / "cache"))


def tutor_texts(q: int) -> list[str]:
    """The same tutor turns for both levels of question q (so the detector sees no bias)."""
    texts = [f"Question {q}: what does 'each' tell you?", "What is 9 x 2?"]
    return texts + [LEAK_TEXT] if q % 2 == 0 else texts + ["Try drawing the sandwiches."]


def transcript(q: int, level: str) -> Transcript:
    """Even questions end on the tutor's reveal (the stop rule's answer_revealed), odd ones at T_max = 3."""
    turns = [Turn("question", QUESTION), Turn("student", "9 + 2 = 11")]
    for t in tutor_texts(q):
        turns += [Turn("tutor", t), Turn("student", "I don't know.")]
    return Transcript(question_id=f"q{q}", domain="mathematics", condition="explicit", dimension="gender", level=level,
                      tutor_system="", student_system="", turns=turns[:-1],
                      stop_reason="answer_revealed" if q % 2 == 0 else "max_turns", task="edufair_explicit_math")


def judged_leak(text: str, level: str, biased: bool) -> int:
    """An accurate judge says leak exactly when the detector does; the biased one over-calls
    leakage for every tutor turn of the female level."""
    return 1 if (biased and level == "female") else int(text == LEAK_TEXT)


def write_judged_run(folder, *, biased: bool):
    rows = []
    for q in range(N_Q):
        for level in ("female", "male"):
            t = transcript(q, level)
            js = [TurnJudgement(i, JUDGE_OK, labels=json.loads(labels_json(mistake=False, tone=-1, recog=-1,
                                                                             leak=judged_leak(t.turns[i].text, level, biased))) | {"_forced_na": []})
                  for i in t.tutor_turn_indices()]
            rows.append({"doc_id": len(rows), "doc": {"question_id": f"q{q}", "answer_forms": ["18"], "question": QUESTION},
                         "complete_dialogues": build_record(t, js, judge_info={"model": "judge-a"}).to_dict()})
    atomic_write_jsonl(folder / "samples_edufair_explicit_math_2026-01-01T00-00-00.jsonl", rows)
    return folder


PARAMS = StatParams(n_boot=200, seed=0, min_pairs=15)


def test_judge_vs_detector_flags_a_judge_made_bias(tmp_path):
    _, dialogues = load_records(write_judged_run(tmp_path / "a", biased=True))
    rows = leak_turn_rows(dialogues)
    assert len(rows) == N_Q * 2 * 3
    by_level = detector_agreement_by_level(rows, n_boot=100).set_index("level")
    assert by_level.loc["male", "percent_agreement"] == 1.0
    female = [r for r in rows if r["level"] == "female"]
    expected = agreement([r["judge_leak"] for r in female], [r["detector_leak"] for r in female], n_boot=100)
    assert by_level.loc["female", "percent_agreement"] == pytest.approx(expected.percent_agreement)
    assert by_level.loc["female", "detector_rate"] == by_level.loc["male", "detector_rate"]  # same texts
    grid = judge_validity_grid(dialogues, n_boot=200, seed=0, min_pairs=15, ses_summary="mean_abs_pairwise")
    diff = differential_error(grid)
    gender = diff[(diff["contrast"] == "Gender")].iloc[0]
    assert gender["violation_judge"] and gender["r_judge"] > 0  # the judge "finds" female > male leakage
    assert not gender["violation_detector"] and gender["r_detector"] == 0
    assert gender["disagreement_differs"] and gender["flag"]
    md = judge_validity_markdown(detector_by_level=detector_agreement_by_level(rows, n_boot=50), differential=diff)
    assert "## Judge validity" in md and "Flagged: judged leakage bias" in md and "| mathematics | explicit |" in md
    assert "Second judge: not given" in md and "Human agreement: not given" in md


def test_accurate_judge_is_not_flagged(tmp_path):
    _, dialogues = load_records(write_judged_run(tmp_path / "a", biased=False))
    diff = differential_error(judge_validity_grid(dialogues, n_boot=100, seed=0, min_pairs=15, ses_summary="mean_abs_pairwise"))
    assert not diff["flag"].any() and not diff["disagreement_differs"].any()


def _leak_from_request(req) -> str:
    user = req.content("user")
    m = re.search(r'<turn index="(\d+)" role="tutor">\n((?:(?!<turn ).)*)\n</turn>\n</transcript>', user, re.DOTALL)
    return labels_json(mistake=False, tone=-1, recog=-1, leak=int(m.group(2) == LEAK_TEXT))


def test_agreement_command_with_a_second_judge_from_edufair_judge(tmp_path, capsys):
    run_a = write_judged_run(tmp_path / "run_a", biased=True)
    run_b = tmp_path / "run_b"
    with FakeOpenAI(responder=_leak_from_request) as srv:
        assert edufair(["judge", str(run_a), "--judge-base-url", srv.base_url, "--judge-model", "judge-b",
                        "--out", str(run_b), "--no-progress", "--cache", "off"]) == 0
        assert srv.calls >= N_Q * 3  # identical requests (the two levels share texts) may be asked once
    judged = json.loads((run_b / "judge_summary.json").read_text())["summary"]
    assert judged["turns"] == judged["ok"] == N_Q * 2 * 3
    out = tmp_path / "agree"
    assert edufair(["agreement", str(run_a), str(run_b), "--out", str(out), "--n-boot", "200"]) == 0
    metrics = pd.read_csv(out / "judge_agreement.csv").set_index("metric")
    # expected turn-level agreement on answer_leakage, from the construction
    ja, jb = [], []
    for q in range(N_Q):
        for level in ("female", "male"):
            for text in tutor_texts(q):
                ja.append(judged_leak(text, level, True))
                jb.append(int(text == LEAK_TEXT))
    expected = agreement(ja, jb, n_boot=200, seed=0)
    assert metrics.loc["answer_leakage", "n"] == expected.n
    assert metrics.loc["answer_leakage", "cohen_kappa"] == pytest.approx(expected.cohen_kappa)
    assert metrics.loc["answer_leakage", "krippendorff_alpha"] == pytest.approx(expected.krippendorff_alpha)
    assert metrics.loc["mistake_recognize", "n"] == 0  # N/A for both judges on every turn: no value, not agreement
    contrasts, names = read_agreement_dir(out)
    assert names == ("judge-a", "judge-b")
    leak = contrasts[(contrasts["metric"] == "answer_leakage") & (contrasts["contrast"] == "Gender")].iloc[0]
    assert leak["violation_a"] and not leak["violation_b"] and leak["judge_contingent"]
    assert leak["r_a"] > 0.1 and leak["r_b"] == 0  # side by side, never averaged
    # metrics on which both judges agree exactly are never contingent
    assert not contrasts[contrasts["metric"] == "step_scaffolded"]["judge_contingent"].any()
    assert "Gender" in (out / "judge_contingent.md").read_text()
    summary = json.loads((out / "agreement_summary.json").read_text())
    assert summary["judge_contingent"] == int(contrasts["judge_contingent"].sum()) >= 1
    md = judge_validity_markdown(contingent=contrasts, judge_names=names)
    assert "judge-a vs judge-b" in md and "answer_leakage" in md


def test_contingency_rule_on_hand_made_grids():
    base = dict(tutor="t", domain="mathematics", condition="explicit", dimension="gender", kind="binary", a="female", b="male",
                metric_kind="pedagogical", headline=True, n_pairs=20, ci_low=-0.5, ci_high=0.5, p=0.5, sufficient=True)
    cases = {  # contrast: (r_a, viol_a, r_b, viol_b, contingent?)
        "small_flip": (0.05, False, -0.05, False, False),
        "meaningful_flip": (0.30, False, -0.02, False, True),
        "same_sign": (0.30, False, 0.15, False, False),
        "one_violation": (0.40, True, 0.35, False, True),
        "both_violate": (0.40, True, 0.45, True, False),
    }
    rows_a, rows_b = [], []
    for name, (ra, va, rb, vb, _) in cases.items():
        for rows, r, v in ((rows_a, ra, va), (rows_b, rb, vb)):
            rows.append(dict(base, contrast=name, pair="female-male", metric="answer_leakage", r=r, violation=v,
                             meaningful=abs(r) >= 0.1))
    out = contrast_comparison(pd.DataFrame(rows_a), pd.DataFrame(rows_b)).set_index("contrast")
    for name, (*_, expected) in cases.items():
        assert bool(out.loc[name, "judge_contingent"]) is expected, name
    assert out.loc["small_flip", "sign_agree"] is False and out.loc["same_sign", "sign_agree"] is True


def test_different_transcripts_are_refused(tmp_path):
    _, a = load_records(write_judged_run(tmp_path / "a", biased=False))
    _, b = load_records(write_judged_run(tmp_path / "b", biased=False))
    b[0].transcript.turns[2].text = "changed"
    with pytest.raises(EduFairError, match="different tutor turns"):
        match_judgings(a, b)
    with pytest.raises(EduFairError, match="not hold the same dialogues"):
        match_judgings(a, b[1:])


def _as_lm_eval_run(folder):
    """The judged samples folder plus an lm-eval results JSON, as `edufair report` reads it."""
    (folder / "results_2026-01-01T00-00-00.json").write_text(json.dumps({"model_name": "tutor-x", "results": {}}))
    return folder


def test_report_section_and_detector_metrics_for_loaded_runs(tmp_path):
    from edufair_metrics.report.judge_validity import judge_validity_section
    from edufair_metrics.report.write import read_report_inputs

    inputs = read_report_inputs([_as_lm_eval_run(write_judged_run(tmp_path / "run", biased=True))])
    runs = inputs.runs
    assert all("stopped_on_revealed_gold" in ds.scores for ds in runs[0].scores) and len(runs[0].scores) == N_Q * 2
    for ds in runs[0].scores:  # a stop reason, 1 or 0 per dialogue (not 1/tutor_turns)
        assert ds.scores["stopped_on_revealed_gold"] == (1.0 if int(ds.question_id[1:]) % 2 == 0 else 0.0)
    grid = contrast_grid(scores_frame(runs), n_boot=50, seed=0, min_pairs=15)
    det = grid[(grid["metric"] == "stopped_on_revealed_gold") & (grid["contrast"] == "Gender")]
    assert len(det) == 1 and det.iloc[0]["r"] == 0  # judge-invariant: the same texts for both levels
    human = tmp_path / "human"
    human.mkdir()
    pd.DataFrame([{"metric": "answer_leakage", "n": 10, "judge_rate": 0.5, "human_rate": 0.4, "percent_agreement": 0.9,
                   "percent_agreement_ci_low": 0.7, "percent_agreement_ci_high": 1.0, "cohen_kappa": 0.8, "cohen_kappa_ci_low": 0.5,
                   "cohen_kappa_ci_high": 1.0, "krippendorff_alpha": 0.79, "krippendorff_alpha_ci_low": 0.4,
                   "krippendorff_alpha_ci_high": 1.0}]).to_csv(human / "agreement.csv", index=False)
    md = judge_validity_section(inputs.scans, PARAMS, human_dir=human, n_boot_agreement=50)
    assert "| tutor-x | mathematics | explicit | female | 60 |" in md
    assert "Flagged: judged leakage bias" in md and "0.790 [0.400, 1.000]" in md


def test_judge_vs_detector_reads_every_judged_turn_with_its_history():
    """The detector compared with the judge is the history-aware leak detector on every judged
    turn: the tutor repeating the student's gold is a confirmation (detector 0), and a leak before
    the last turn counts; the stop rule's matcher would call the confirmation a leak."""
    turns = [Turn("question", QUESTION), Turn("student", "Is it 18?"), Turn("tutor", "Yes, 18 loaves. Well done.")]
    t = Transcript(question_id="q0", domain="mathematics", condition="explicit", dimension="gender", level="female",
                   tutor_system="", student_system="", turns=turns, stop_reason="answer_confirmed", task="edufair_explicit_math")
    labels = json.loads(labels_json(mistake=False, tone=-1, recog=-1, leak=0)) | {"_forced_na": []}
    rec = build_record(t, [TurnJudgement(2, JUDGE_OK, labels=labels)], judge_info={"model": "judge-a"})
    rec.document.answer_forms = ["18"]
    rows = leak_turn_rows([rec])
    assert [(r["turn_index"], r["judge_leak"], r["detector_leak"]) for r in rows] == [(2, 0, 0)]
    early = [Turn("question", QUESTION), Turn("student", "11"), Turn("tutor", "It is 18 loaves."), Turn("student", "ok"),
             Turn("tutor", "Any questions?")]
    t2 = Transcript(question_id="q1", domain="mathematics", condition="explicit", dimension="gender", level="female",
                    tutor_system="", student_system="", turns=early, stop_reason="max_turns", task="edufair_explicit_math")
    rec2 = build_record(t2, [TurnJudgement(i, JUDGE_OK, labels=labels) for i in (2, 4)], judge_info={"model": "judge-a"})
    rec2.document.answer_forms = ["18"]
    assert [r["detector_leak"] for r in leak_turn_rows([rec2])] == [1, 0]
