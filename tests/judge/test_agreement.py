"""Second-judge agreement (``edufair agreement``) and judge-vs-detector validity (differential judge
error), on synthetic judged runs whose biases are known by construction; the second judging is
produced by the real ``edufair judge --judge-model`` against the loopback fake judge."""

from __future__ import annotations

import json
import re

import numpy as np
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
    # the chance rate beside the count: judge A against noise-only copies of itself
    chance = summary["chance"]
    assert chance["replicates"] == 3 and chance["rows"] > 0 and 0 <= chance["rate"] <= 1
    assert chance["flip_rates"]["answer_leakage"][0] > 0  # A says leak where B does not
    assert "chance rate" in (out / "judge_contingent.md").read_text()
    assert "chance rate" in capsys.readouterr().err
    assert metrics.loc["answer_leakage", "clusters"] == N_Q * 2  # the CIs resample dialogues
    md = judge_validity_markdown(contingent=contrasts, judge_names=names)
    assert "judge-a vs judge-b" in md and "answer_leakage" in md


def test_contingency_rule_on_hand_made_grids():
    """Without per-question differences only the verdicts decide: one judge flags and the other does
    not, or both flag with opposite signs. A sign flip or a raw violation alone is not contingency."""
    base = dict(tutor="t", domain="mathematics", condition="explicit", dimension="gender", kind="binary", a="female", b="male",
                metric_kind="pedagogical", headline=True, n_pairs=20, ci_low=-0.5, ci_high=0.5, p=0.5, sufficient=True)
    cases = {  # contrast: (r_a, viol_a, verdict_a, r_b, viol_b, verdict_b, contingent?)
        "small_flip": (0.05, False, "inconclusive", -0.05, False, "inconclusive", False),
        "meaningful_flip": (0.30, False, "inconclusive", -0.02, False, "inconclusive", False),
        "one_violation": (0.40, True, "inconclusive", 0.35, False, "inconclusive", False),
        "one_flags": (0.40, True, "flag", 0.35, True, "inconclusive", True),
        "both_flag": (0.40, True, "flag", 0.45, True, "flag", False),
        "flag_vs_unconfirmed": (0.40, True, "flag", 0.45, True, "unconfirmed", False),
        "opposite_flags": (0.40, True, "flag", -0.45, True, "flag", True),
        "flag_vs_certify": (0.40, True, "flag", 0.01, False, "certify", True),
    }
    rows_a, rows_b = [], []
    for name, (ra, va, da, rb, vb, db, _) in cases.items():
        for rows, r, v, d in ((rows_a, ra, va, da), (rows_b, rb, vb, db)):
            rows.append(dict(base, contrast=name, pair="female-male", metric="answer_leakage", r=r, violation=v,
                             meaningful=abs(r) >= 0.1, verdict=d))
    rows_b.append(dict(rows_b[0], contrast="one_side_insufficient", sufficient=False, verdict="insufficient"))
    rows_a.append(dict(rows_a[3], contrast="one_side_insufficient"))
    out = contrast_comparison(pd.DataFrame(rows_a), pd.DataFrame(rows_b)).set_index("contrast")
    for name, (*_, expected) in cases.items():
        assert bool(out.loc[name, "judge_contingent"]) is expected, name
        assert bool(out.loc[name, "verdicts_differ"]) is expected and not out.loc[name, "r_differ"], name
    assert not out.loc["one_side_insufficient", "judge_contingent"]
    assert out.loc["small_flip", "sign_agree"] is False and out.loc["both_flag", "sign_agree"] is True
    assert out.loc["one_flags", "why"] == "verdicts differ (flag vs inconclusive)"
    assert np.isnan(out.loc["one_flags", "p_delta"])  # no per-question differences: no paired test


def _judged_frames(n=120, shift=0.0, noise=0.0, seed=0):
    """Long score frames of two judges of the same dialogues: judge B = judge A's rates with random
    noise, plus ``shift`` on the female level of answer_leakage."""
    rng = np.random.default_rng(seed)
    rows_a, rows_b = [], []
    for q in range(n):
        base = rng.random()
        for level in ("female", "male"):
            va = float(np.clip(base + 0.1 * rng.normal(), 0, 1))
            vb = float(np.clip(va + noise * rng.normal() + (shift if level == "female" else 0.0), 0, 1))
            for rows, v in ((rows_a, va), (rows_b, vb)):
                rows.append(("t", "edufair_explicit_math", "mathematics", "explicit", "gender", level, f"q{q:03d}",
                             "answer_leakage", v))
    cols = ["tutor", "task", "domain", "condition", "dimension", "level", "question_id", "metric", "value"]
    return pd.DataFrame(rows_a, columns=cols), pd.DataFrame(rows_b, columns=cols)


def test_paired_bootstrap_of_the_two_judges_r():
    """Two judges whose r differ (judge B adds a shift on one level) are contingent through r_differ;
    two judges that agree exactly are not (Δr* = 0 in every resample: p = 1)."""
    for shift, noise, expect in ((0.0, 0.0, False), (0.3, 0.05, True)):
        fa, fb = _judged_frames(shift=shift, noise=noise)
        ga, gb = (contrast_grid(f, n_boot=200, seed=0) for f in (fa, fb))
        out = contrast_comparison(ga, gb, frames=(fa, fb), n_boot=200, seed=0)
        row = out[out["contrast"] == "Gender"].iloc[0]
        assert bool(row["r_differ"]) is expect and bool(row["judge_contingent"]) is expect
        assert row["delta_r"] == pytest.approx(row["r_a"] - row["r_b"])
        if not expect:
            assert row["p_delta"] == 1.0 and row["delta_ci_low"] == row["delta_ci_high"] == 0
        else:
            assert row["q_delta"] < 0.05 and row["delta_ci_high"] < 0 and "r differ" in row["why"]


def test_noise_only_judge_copies(tmp_path):
    """flip_rates of a judging against itself are 0, and its noise-only copy reproduces its scores;
    with flips, labels change at about the given rates (N/A labels kept)."""
    from edufair_metrics.analysis.judge_validity import flip_rates, noisy_judging

    _, a = load_records(write_judged_run(tmp_path / "a", biased=True))
    rates = flip_rates(list(zip(a, a)))
    assert all(v == (0.0, 0.0) for v in rates.values())
    same = noisy_judging(a, rates, np.random.default_rng(0))
    for d, s in zip(a, same):
        assert s.scores["answer_leakage"] == d.scores.scores["answer_leakage"] and s.tutor == d.scores.tutor
    flipped = noisy_judging(a, {"answer_leakage": (1.0, 1.0)}, np.random.default_rng(0))
    for d, s in zip(a, flipped):
        assert s.scores["answer_leakage"] == pytest.approx(1 - d.scores.scores["answer_leakage"])
        assert np.isnan(s.scores["mistake_recognize"]) == np.isnan(d.scores.scores["mistake_recognize"])


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
