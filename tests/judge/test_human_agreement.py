"""Judge–human agreement: the statistics (against sklearn / krippendorff), the MRBench and CSV
readers, and ``edufair judge-human`` end to end against the loopback fake judge."""

from __future__ import annotations

import csv
import json
import math
import re

import numpy as np
import pytest

from edufair_metrics.analysis.agreement import (
    AGREEMENT_COLUMNS,
    agreement,
    alpha_from_counts,
    cohen_kappa,
    kappa_from_counts,
    krippendorff_alpha,
    percent_agreement,
)
from edufair_metrics.cli import main as edufair
from edufair_metrics.errors import EduFairError
from edufair_metrics.judge.human import label_value, load_human_csv, load_human_set, parse_history

from tests.helpers.fake_openai import FakeOpenAI, HTTPError, labels_json
from tests.helpers.judge_env import JUDGE_ENV_VARS
from tests.helpers.paths import FIXTURES

MRBENCH = FIXTURES / "mrbench_small.json"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for v in JUDGE_ENV_VARS:
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("EDUFAIR_CACHE_DIR", str(tmp_path / "cache"))


# ---- statistics ---------------------------------------------------------------------------------


def _counts(x, y):
    x, y = np.asarray(x), np.asarray(y)
    return [np.array([np.sum((x == i) & (y == j))]) for i, j in ((1, 1), (1, 0), (0, 1), (0, 0))]


def test_closed_forms_equal_sklearn_and_krippendorff():
    from sklearn.metrics import cohen_kappa_score

    import krippendorff

    rng = np.random.default_rng(7)
    checked = 0
    for _ in range(150):
        n = int(rng.integers(2, 60))
        x = rng.integers(0, 2, n)
        y = np.where(rng.random(n) < rng.random(), x, 1 - x)
        if len(set(x) | set(y)) < 2:
            continue
        lib_a = krippendorff.alpha(reliability_data=np.vstack([x, y]).astype(float), level_of_measurement="nominal")
        assert alpha_from_counts(*_counts(x, y))[0] == pytest.approx(lib_a, abs=1e-9)
        assert krippendorff_alpha(x, y) == pytest.approx(lib_a, abs=1e-12)
        if not (np.all(x == x[0]) and np.all(y == x[0])):
            lib_k = cohen_kappa_score(x, y)
            assert kappa_from_counts(*_counts(x, y))[0] == pytest.approx(lib_k, abs=1e-9)
            assert cohen_kappa(x, y) == pytest.approx(lib_k, abs=1e-12)
        checked += 1
    assert checked > 100


def test_undefined_statistics_are_nan_not_perfect():
    assert math.isnan(cohen_kappa([1, 1, 1], [1, 1, 1]))  # p_e = 1
    assert math.isnan(krippendorff_alpha([0, 0], [0, 0]))  # one value only
    assert percent_agreement([1, 1, 1], [1, 1, 1]) == 1.0
    a = agreement([], [], n_boot=10)
    assert a.n == 0 and math.isnan(a.percent_agreement)


def test_missing_values_are_left_out_and_bootstrap_is_seeded():
    judge = [1, 0, 1, None, 0, 1, 1, 0, 0, 1]
    human = [1, 0, 0, 1, 0, None, 1, 0, 1, 1]
    a = agreement(judge, human, n_boot=300, seed=3)
    kept = [(j, h) for j, h in zip(judge, human) if j is not None and h is not None]
    assert a.n == len(kept) == 8
    assert a.percent_agreement == pytest.approx(np.mean([j == h for j, h in kept]))
    assert a.x_rate == pytest.approx(np.mean([j for j, _ in kept]))
    assert a.percent_agreement_ci_low <= a.percent_agreement <= a.percent_agreement_ci_high
    assert a.cohen_kappa_ci_low <= a.cohen_kappa_ci_high
    assert agreement(judge, human, n_boot=300, seed=3) == a
    assert agreement(judge, human, n_boot=300, seed=5) != a  # with 8 items, seed 4 happens to give the same CIs
    with pytest.raises(EduFairError):
        agreement([1, 2], [1, 0])


# ---- readers ------------------------------------------------------------------------------------


@pytest.mark.parametrize("raw, partial, tone, expected", [
    ("Yes", "yes", False, 1), ("No", "yes", False, 0), ("Yes (and the answer is correct)", "no", False, 1),
    ("Yes (but the answer is incorrect)", "drop", False, 1), ("To some extent", "yes", False, 1),
    ("To some extent", "no", False, 0), ("To some extent", "drop", False, None), ("  to  SOME extent ", "yes", False, 1),
    ("Encouraging", "yes", True, 1), ("Neutral", "yes", True, 0), ("Offensive", "drop", True, 0),
    ("", "yes", False, None), (None, "yes", False, None), ("na", "yes", False, None), (-1, "yes", False, None), (1, "yes", False, 1),
])
def test_label_values(raw, partial, tone, expected):
    assert label_value(raw, partial, tone=tone, where="x") == expected


@pytest.mark.parametrize("raw, tone", [("Maybe", False), ("Encouraging", False), ("Yes", True), (2, False)])
def test_unknown_label_is_an_error(raw, tone):
    with pytest.raises(EduFairError, match="unknown label"):
        label_value(raw, "yes", tone=tone, where="f.json: c1")


def test_history_parsing_string_list_and_continuations():
    turns = parse_history("Tutor: Hi there.\nStudent: I think\nit is 4.\n\n tutor : Why?", "w")
    assert [(t.role, t.text) for t in turns] == [("tutor", "Hi there."), ("student", "I think\nit is 4."), ("tutor", "Why?")]
    assert [t.role for t in parse_history(["Student: a", "Teacher: b"], "w")] == ["student", "tutor"]
    with pytest.raises(EduFairError, match="prefix"):
        parse_history("no speaker here\nTutor: hi", "w")


def test_mrbench_reader_maps_dimensions_and_skips_missing_ones():
    items = load_human_set(MRBENCH, "mrbench").items
    assert len(items) == 5
    by_id = {it.item_id.split("/")[1]: it for it in items}
    assert by_id["GPT4"].human["answer_leakage"] == 1 and by_id["GPT4"].human["corrective_tone"] == 0
    assert by_id["Novice"].human["mistake_recognize"] == 1  # "To some extent", --partial yes
    # Expert lacks Providing_Guidance: absent (skipped), never 0
    assert "step_scaffolded" not in by_id["Expert"].human
    # the judged turn is the response appended to the parsed history
    t = by_id["Sonnet"].transcript
    assert t.turns[-1].role == "tutor" and t.turns[-1].text.startswith("25% is a quarter")
    assert t.tutor_turn_indices() == [len(t.turns) - 1]
    drop = {it.item_id.split("/")[1]: it for it in load_human_set(MRBENCH, "mrbench", partial="drop").items}
    assert drop["Novice"].human["mistake_recognize"] is None
    limited = load_human_set(MRBENCH, "mrbench", limit=2)
    assert limited.kept == 2 and limited.counts() == {"read": 5, "merged": 0, "limited": 3, "kept": 2}


def _write_csv(path, rows, header):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


CSV_HEADER = ["item_id", "question", "history", "response", "domain", "tutor", "answer_leakage", "step_scaffolded"]


def test_csv_reader_and_errors(tmp_path):
    p = _write_csv(tmp_path / "cal.csv", [
        ["t1", "What is 3 x 4?", "Student: is it 7?", "Multiply, do not add. What is 3 x 4?", "mathematics", "m1", "0", "1"],
        ["t2", "", "", "The answer is 12.", "", "m2", "yes", ""],
        ["t3", "Why does ice float?", "", "Think about density.", "physics", "m1", "partial", "na"],
    ], CSV_HEADER)
    items = load_human_csv(p, "no").items
    assert [it.human for it in items] == [
        {"answer_leakage": 0, "step_scaffolded": 1}, {"answer_leakage": 1, "step_scaffolded": None},
        {"answer_leakage": 0, "step_scaffolded": None}]
    assert [t.role for t in items[0].transcript.turns] == ["question", "student", "tutor"]
    assert items[2].transcript.domain == "physics" and items[1].transcript.domain == "mathematics"
    bad = {
        "dup": ([["a", "", "", "r", "", "", "1", ""], ["a", "", "", "r", "", "", "1", ""]], CSV_HEADER, "duplicate item_id"),
        "nolabels": ([["a", "", "", "r", "", "", "1", ""]], CSV_HEADER[:6] + ["x", "y"], "no label column"),
        "value": ([["a", "", "", "r", "", "", "maybe", ""]], CSV_HEADER, r"cal\.csv:2: answer_leakage: unknown label"),
        "noresp": ([["a", "", "", "", "", "", "1", ""]], CSV_HEADER, "empty response"),
    }
    for rows, header, msg in bad.values():
        with pytest.raises(EduFairError, match=msg):
            load_human_csv(_write_csv(tmp_path / "cal.csv", rows, header))
    with pytest.raises(EduFairError, match="missing column 'response'"):
        load_human_csv(_write_csv(tmp_path / "cal.csv", [["a", "1"]], ["item_id", "answer_leakage"]))


# ---- the command, end to end against the fake judge -----------------------------------------------

_LAST_TURN_RE = re.compile(r'<turn index="(\d+)" role="tutor">\n((?:(?!<turn ).)*)\n</turn>\n</transcript>', re.DOTALL)


def _judged(req) -> tuple[int, str]:
    """(index, text) of the last turn of the transcript the judge is shown."""
    m = _LAST_TURN_RE.search(req.content("user"))
    return int(m.group(1)), m.group(2)


def _judged_text(req) -> str:
    return _judged(req)[1]


def _labels_for(text: str) -> str:
    """A deterministic fake judge: leaks when the response has a digit run of 2+, scaffolds when it
    asks a question; sees a student mistake always."""
    leak = int(bool(re.search(r"\d\d", text)))
    ask = int("?" in text)
    return labels_json(mistake=True, tone=int("!" in text or "Close" in text), recog=1, leak=leak, scaffold=ask, action=ask)


def _read_csv(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _num(x: str) -> float:
    return float(x) if x != "" else math.nan


def test_judge_human_mrbench_end_to_end_with_cache(tmp_path, capsys):
    with FakeOpenAI(responder=lambda req: _labels_for(_judged_text(req))) as srv:
        out = tmp_path / "agree"
        argv = ["judge-human", "--format", "mrbench", str(MRBENCH), "--out", str(out), "--judge-base-url", srv.base_url,
                "--judge-model", "fake-judge", "--no-progress", "--n-boot", "200"]
        assert edufair(argv) == 0
        assert srv.calls == 5  # one call per response: the history's tutor lines are context only
        for req in srv.requests:
            user = req.content("user")
            last = _judged(req)[0]
            assert user.rstrip().endswith(f'index="{last}" (the last turn inside the transcript).')
        rows = {r["metric"]: r for r in _read_csv(out / "agreement.csv")}
        assert list(_read_csv(out / "agreement.csv")[0])[: len(AGREEMENT_COLUMNS)] == AGREEMENT_COLUMNS
        items = load_human_set(MRBENCH, "mrbench").items
        for metric, row in rows.items():
            human = [it.human.get(metric) for it in items if metric in it.human]
            field = {"step_scaffolded": "scaffolding_guidance", "corrective_tone": "correction_tone"}.get(metric, metric)
            judge = [json.loads(_labels_for(it.transcript.turns[-1].text))[field] for it in items if metric in it.human]
            # the CIs resample conversations (the responses of one history together)
            clusters = [it.conversation for it in items if metric in it.human]
            expected = agreement(judge, human, n_boot=200, seed=0, clusters=clusters)
            assert int(row["n"]) == expected.n
            assert _num(row["percent_agreement"]) == pytest.approx(expected.percent_agreement)
            assert _num(row["cohen_kappa"]) == pytest.approx(expected.cohen_kappa, nan_ok=True)
            assert _num(row["krippendorff_alpha"]) == pytest.approx(expected.krippendorff_alpha, nan_ok=True)
            assert _num(row["krippendorff_alpha_ci_low"]) == pytest.approx(expected.krippendorff_alpha_ci_low, nan_ok=True)
        assert int(rows["step_scaffolded"]["n"]) == 4  # the response without Providing_Guidance is skipped
        assert int(rows["answer_leakage"]["n"]) == 5
        labels = _read_csv(out / "labels.csv")
        assert len(labels) == 5 and {"answer_leakage_human", "answer_leakage_judge", "judge_status"} <= set(labels[0])
        summary = json.loads((out / "judge_summary.json").read_text())
        assert summary["judge"]["model"] == "fake-judge" and summary["summary"]["ok"] == 5
        # rerun: every response from the cache, zero requests, same files
        before = (out / "agreement.csv").read_text()
        assert edufair(argv) == 0
        assert srv.calls == 5 and (out / "agreement.csv").read_text() == before


def test_judge_human_missing_labels_are_counted_not_valued(tmp_path):
    with FakeOpenAI(responder=lambda req: HTTPError(400, "nope")) as srv:
        out = tmp_path / "agree"
        assert edufair(["judge-human", "--format", "mrbench", str(MRBENCH), "--limit", "2", "--out", str(out), "--cache", "off",
                        "--judge-base-url", srv.base_url, "--no-progress", "--n-boot", "20"]) == 0
    rows = _read_csv(out / "agreement.csv")
    assert all(r["n"] == "0" and r["judge_missing"] == "2" for r in rows)
    assert all(r["judge_status"] == "missing" and r["answer_leakage_judge"] == "" for r in _read_csv(out / "labels.csv"))


def test_judge_human_csv_and_partial_drop(tmp_path):
    p = _write_csv(tmp_path / "cal.csv", [
        [f"t{k}", "What is 6 x 7?", "Student: 13?", resp, "", "", leak, scaf]
        for k, (resp, leak, scaf) in enumerate([("It is 42.", "1", "0"), ("What does 6 x 7 mean?", "0", "1"),
                                                ("Try 6 + 6 + ... ?", "partial", "1"), ("Multiply them.", "0", "partial")])
    ], CSV_HEADER)
    with FakeOpenAI(responder=lambda req: _labels_for(_judged_text(req))) as srv:
        out = tmp_path / "o"
        common = ["--judge-base-url", srv.base_url, "--no-progress", "--n-boot", "50"]
        assert edufair(["judge-human", "--format", "csv", str(p), "--out", str(out), "--partial", "drop", *common]) == 0
        rows = {r["metric"]: r for r in _read_csv(out / "agreement.csv")}
        assert set(rows) == {"answer_leakage", "step_scaffolded"}  # unlabelled metrics are not rows
        assert rows["answer_leakage"]["n"] == "3" and rows["answer_leakage"]["human_missing"] == "1"
        assert edufair(["judge-human", "--format", "csv", str(p), "--out", str(out), "--partial", "no", *common]) == 0
        assert {r["metric"]: r for r in _read_csv(out / "agreement.csv")}["answer_leakage"]["n"] == "4"


def test_judge_human_bad_input_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"conversation_id": "c", "conversation_history": "Tutor: hi",
                                "anno_llm_responses": {"m": {"response": "r", "annotation": {"Tutor_Tone": "Grumpy"}}}}]))
    assert edufair(["judge-human", "--format", "mrbench", str(bad), "--judge-base-url", "http://127.0.0.1:9/v1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "conversation c, m: Tutor_Tone: unknown label 'Grumpy'" in err[0]
    assert edufair(["judge-human", "--format", "mrbench", str(tmp_path / "none.json")]) == 2


REUSED_IDS = FIXTURES / "mrbench_reused_ids.json"  # one conversation_id for two conversations, plus an exact duplicate


def test_mrbench_reused_conversation_ids_are_distinct_items_and_exact_duplicates_merge():
    found = load_human_set(REUSED_IDS, "mrbench")
    assert found.counts() == {"read": 6, "merged": 1, "limited": 0, "kept": 5}
    ids = [it.item_id for it in found.items]
    assert len(set(ids)) == 5
    # 5001/Expert and 5001/GPT4 occur with two contents each: both keyed by content; 5002 keeps its plain id
    assert "5002/Expert" in ids
    reused = sorted(i for i in ids if i.startswith("5001/"))
    assert len(reused) == 4 and all("#" in i for i in reused)
    texts = {it.transcript.turns[-1].text for it in found.items}
    assert "You need 3 x 7 = 21 apples." in texts and "The speed is 120 / 2 = 60 km/h." in texts
    # the two conversations of id 5001 are different clusters; responses of one conversation share one
    by_text = {it.transcript.turns[-1].text: it.conversation for it in found.items}
    assert by_text["The speed is 120 / 2 = 60 km/h."] == by_text[
        "Adding does not give a rate. What do you divide to get km per hour?"]
    assert by_text["You need 3 x 7 = 21 apples."] != by_text["The speed is 120 / 2 = 60 km/h."]
    # the keys are stable: a second read gives the same ids
    assert [it.item_id for it in load_human_set(REUSED_IDS, "mrbench").items] == ids


def test_judge_human_reads_a_file_with_reused_conversation_ids(tmp_path, capsys):
    with FakeOpenAI(responder=lambda req: _labels_for(_judged_text(req))) as srv:
        out = tmp_path / "agree"
        argv = ["judge-human", "--format", "mrbench", str(REUSED_IDS), "--out", str(out), "--judge-base-url", srv.base_url,
                "--judge-model", "fake-judge", "--no-progress", "--n-boot", "50"]
        assert edufair(argv) == 0
        assert srv.calls == 5
    err = capsys.readouterr().err
    assert "6 responses read, 1 exact duplicate(s) merged, 5 kept" in err
    summary = json.loads((out / "judge_summary.json").read_text())
    assert summary["source"]["responses"] == {"read": 6, "merged": 1, "limited": 0, "kept": 5}
    assert len(_read_csv(out / "labels.csv")) == 5
