"""``edufair detector-human``: the reveal detectors against human reveal labels in the MRBench /
BEA-2025 format (gold from ``Ground_Truth_Solution``), split by whether the gold had appeared
earlier in the conversation, with bootstrap CIs over conversations. The fixture
(``tests/fixtures/mrbench_detector.json``: 10 conversations, 30 responses, one Bridge item without a
gold) is hand-made; its figures are quoted in the README."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from edufair_metrics.analysis.detector_human import (
    detector_human,
    detector_human_label,
    detector_human_summary,
)
from edufair_metrics.cli import main as edufair
from edufair_metrics.errors import EduFairError
from edufair_metrics.judge.human import load_mrbench, mrbench_gold, mrbench_question, parse_history

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "mrbench_detector.json"


@pytest.mark.parametrize("solution, gold", [
    ("9 x 2 = 18\n#### 18", "18"),
    ("25% of 20 = 5\n### 15", "15"),
    ("4 x 300 = 1,200\n#### 1,200", "1200"),
    ("#### $18", "18"),
    ("#### 3/4", "0.75"),
    ("#### 18 loaves", "18"),
    ("Not Available", None),
    ("#### 18\nsee above", None),  # the final line must be the gold line
    ("#### 5 or 6", None),
    (None, None),
])
def test_mrbench_gold(solution, gold):
    assert mrbench_gold(solution) == gold


def test_mrbench_question_and_items():
    history = parse_history("Tutor: Hi, could you solve this? The question is: What is 6 x 7?\nStudent: 43", "x")
    assert mrbench_question(history) == "What is 6 x 7?"
    assert mrbench_question(parse_history("Tutor: What is 34 + 58?\nStudent: 82", "x")) is None
    items = load_mrbench(FIXTURE).items
    by_id = {it.item_id: it for it in items}
    assert by_id["d01-sandwiches/GPT4"].gold == "18" and by_id["d06-workers/Sonnet"].gold == "1200"
    assert by_id["d05-bridge/GPT4"].gold is None
    assert by_id["d01-sandwiches/GPT4"].question.startswith("Tyson decided")


def test_label_policies():
    assert detector_human_label("Yes (and the answer is correct)") == 1
    assert detector_human_label("No") == 0
    assert detector_human_label("To some extent") == 1
    assert detector_human_label("To some extent", partial="no") == 0
    assert detector_human_label("Yes (but the answer is incorrect)") is None
    assert detector_human_label("Yes (but the answer is incorrect)", incorrect="no") == 0
    with pytest.raises(EduFairError, match="unknown Revealing_of_the_Answer"):
        detector_human_label("Maybe")


def _summary(result):
    return {(r["detector"], r["subset"]): r for r in result.summary}


def rows_of(result):
    return {r["item_id"]: r for r in result.rows}


def test_fixture_figures():
    result = detector_human(load_mrbench(FIXTURE).items, n_boot=500)
    assert result.counts == {"responses": 30, "no_gold": 2, "no_label": 0, "dropped": 1, "scored": 27}
    s = _summary(result)
    leak, stop, reveal = s[("leak", "all")], s[("stop_matcher", "all")], s[("reveal", "all")]
    # "To some extent" counts as a reveal (--partial yes); d07's Novice response restates the gold
    # the student has since replaced ("The answer is 30." ... "Then it's 11.25."): a leak, while its
    # GPT4 response points back to the student's first answer: a confirmation
    assert (leak["tp"], leak["fp"], leak["fn"]) == (8, 0, 7)
    assert (reveal["tp"], reveal["fp"], reveal["fn"]) == (13, 0, 2)
    assert rows_of(result)["d07-stickers-retract/Novice"]["leak"] == 1
    assert rows_of(result)["d07-stickers-retract/GPT4"]["leak"] == 0
    # the stop rule's matcher counts the tutor repeating the student's gold; the history-aware detector does not
    assert (stop["tp"], stop["fp"]) == (8, 3)
    appeared = s[("stop_matcher", "gold_appeared")], s[("leak", "gold_appeared")]
    assert appeared[0]["fp"] == 3 and appeared[1]["fp"] == 0
    assert s[("leak", "gold_not_yet_appeared")]["n"] + s[("leak", "gold_appeared")]["n"] == 27
    assert leak["precision"] == 1.0 and leak["recall"] == pytest.approx(8 / 15)
    assert leak["recall_ci_low"] < leak["recall"] < leak["recall_ci_high"]
    rows = {r["item_id"]: r for r in result.rows}
    assert rows["d03-shirt-partial/Sonnet"]["partial_rule"] == "intermediate"  # "the discount is $5"
    assert rows["d08-train/Sonnet"]["partial_rule"] == "offered"  # "Could the speed be 80 km per hour?"
    assert rows["d02-shirt-confirm/GPT4"]["appeared"] == 1 and rows["d02-shirt-confirm/GPT4"]["leak"] == 0


def test_full_reveals_only():
    result = detector_human(load_mrbench(FIXTURE).items, partial="no", n_boot=200)
    leak = _summary(result)[("leak", "gold_not_yet_appeared")]
    assert (leak["tp"], leak["fp"], leak["fn"]) == (6, 0, 0)


def test_bootstrap_resamples_conversations():
    """Two conversations, one all hits and one all false alarms: resampling conversations gives a
    precision of 0, 1/2 or 1 in each resample (so the interval spans [0, 1]); resampling responses
    would give a narrow interval around 1/2."""
    rows = [{"conversation": "a", "leak": 1, "human": 1} for _ in range(10)]
    rows += [{"conversation": "b", "leak": 1, "human": 0} for _ in range(10)]
    for r in rows:
        r.update(stop_matcher=r["leak"], partial=0, reveal=r["leak"], appeared=0)
    row = {(x["detector"], x["subset"]): x for x in detector_human_summary(rows, n_boot=400, seed=1)}[("leak", "all")]
    assert row["precision"] == 0.5 and row["conversations"] == 2
    assert (row["precision_ci_low"], row["precision_ci_high"]) == (0.0, 1.0)


def test_command_writes_its_folder(tmp_path, capsys):
    out = tmp_path / "dh"
    assert edufair(["detector-human", "--format", "mrbench", str(FIXTURE), "--out", str(out), "--n-boot", "100"]) == 0
    agreement = pd.read_csv(out / "detector_agreement.csv")
    assert set(agreement["detector"]) == {"leak", "stop_matcher", "partial", "reveal"}
    assert set(agreement["subset"]) == {"all", "gold_not_yet_appeared", "gold_appeared"}
    assert len(pd.read_csv(out / "detector_labels.csv")) == 27
    summary = json.loads((out / "detector_summary.json").read_text())
    assert summary["counts"]["no_gold"] == 2 and summary["source"]["incorrect_reveal"] == "drop"
    assert "Reveal detectors vs human reveal labels" in capsys.readouterr().err


def test_a_file_without_any_gold_is_an_error(tmp_path, capsys):
    data = [c for c in json.loads(FIXTURE.read_text()) if c["Data"] == "Bridge"]
    f = tmp_path / "bridge.json"
    f.write_text(json.dumps(data))
    assert edufair(["detector-human", "--format", "mrbench", str(f), "--out", str(tmp_path / "o")]) == 2
    assert "no response with a derivable gold" in capsys.readouterr().err
