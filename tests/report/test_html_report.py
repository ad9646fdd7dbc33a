"""The HTML view `edufair report` writes (index.html + viewer/): self-contained, the numbers of the
grid, per-cell paired differences from the grid's own pairing, and the transcripts of every
dialogue (cue spans, judge labels, stop evidence, detector hits), written while the samples files
are read. The page itself is driven in a real browser by test_html_browser.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from edufair_metrics.analysis.evidence import EVIDENCE_METRICS, cue_spans, level_cue_words
from edufair_metrics.analysis.params import StatParams
from edufair_metrics.cli import main as cli
from edufair_metrics.report.html import verdicts
from edufair_metrics.report.html.spool import BUCKETS, bucket_of
from edufair_metrics.report.write import read_report_inputs, write_report

from tests.helpers.evidence_runs import write_evidence_run


def page_data(report: Path) -> dict:
    html = (report / "index.html").read_text(encoding="utf-8")
    m = re.search(r"EF\.data = (\{.*?\});\n</script>", html, re.S)
    assert m, "no inline data"
    return json.loads(m.group(1))


def js_calls(path: Path, name: str) -> list[tuple[str, dict]]:
    """The (key, object) of every ``EF.<name>(key, {...});`` line of a viewer file."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.fullmatch(rf'EF\.{name}\((".*?"|\d+),(.*)\);', line)
        assert m, line[:80]
        out.append((json.loads(m.group(1)), json.loads(m.group(2))))
    return out


def grid_rows(data: dict) -> list[dict]:
    return [dict(zip(data["grid"]["cols"], r)) for r in data["grid"]["rows"]]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("html")
    write_evidence_run(root / "runs", n_questions=20, conditions=("explicit", "implicit"), failed=[(3, "male")])
    write_evidence_run(root / "runs", "org/tutor-fair", n_questions=20, leak_levels=(), seed=5)
    inputs = read_report_inputs([root / "runs"])
    spooled = sorted(p.relative_to(inputs.spool.root) for p in inputs.spool.root.rglob("*.js"))
    write_report(inputs, root / "report", StatParams(n_boot=100), figures=False)
    return root / "report", spooled


def test_the_page_is_self_contained(built):
    report, _ = built
    html = (report / "index.html").read_text(encoding="utf-8")
    assert "<style>" in html and "EF.data = " in html and "function route()" in html
    # nothing from the network: no external script, stylesheet, font or fetch
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "@import" not in html and "fetch(" not in html and "XMLHttpRequest" not in html
    data = page_data(report)
    assert [t["label"] for t in data["tutors"]] == ["org/tutor-bias", "org/tutor-fair"]
    assert data["leaderboard"]["rows"] and "rank 95% interval" in data["leaderboard"]["cols"]
    assert {r[1] for r in data["cost"]["rows"]} == {"tutor", "student", "judge"}


def test_the_planted_bias_is_a_flagged_cell_whose_file_has_the_grids_pairs(built):
    report, _ = built
    data = page_data(report)
    grid = pd.read_csv(report / "grid.csv")
    rows = grid_rows(data)
    assert len(rows) == len(grid)
    hit = [r for r in rows if r["tutor"] == "org/tutor-bias" and r["condition"] == "explicit"
           and r["contrast"] == "Gender" and r["metric"] == "answer_leakage"]
    assert len(hit) == 1 and hit[0]["verdict"] == "flag" and hit[0]["r"] > 0.5
    (key, cell), = js_calls(report / "viewer" / "c" / f"{hit[0]['cell']}.js", "cell")
    assert key == hit[0]["cell"]
    d, a, b = cell["m"]["answer_leakage"]
    assert sum(v is not None for v in d) == hit[0]["n_pairs"]  # the failed male dialogue's pair is gone
    assert all(x is None or y is None or z is None or abs(x - (y - z)) < 1e-3 for x, y, z in zip(d, a, b))
    assert cell["b"] == [bucket_of(q) for q in cell["q"]]
    fair = [r for r in rows if r["tutor"] == "org/tutor-fair" and r["metric"] == "answer_leakage" and r["contrast"] == "Gender"]
    assert fair[0]["verdict"] != "flag"


def test_every_dialogue_is_in_its_transcript_file(built):
    report, spooled = built
    data = page_data(report)
    ti = {t["label"]: t["ti"] for t in data["tutors"]}
    files = sorted(p.relative_to(report / "viewer" / "t") for p in (report / "viewer" / "t").rglob("*.js"))
    assert files == spooled  # the files written while reading, moved into the report
    seen = {}
    for f in files:
        for key, dlg in js_calls(report / "viewer" / "t" / f, "d"):
            tutor, task, bucket = key.split("/")
            assert f"{tutor}/{task}/{bucket}.js" == str(f) and int(bucket) == bucket_of(dlg["q"]) < BUCKETS
            seen[(int(tutor), task, dlg["q"], dlg["lv"])] = dlg
    assert len(seen) == 20 * (9 + 4) + 20 * 9
    q0 = sorted({k[2] for k in seen})[0]
    female = seen[(ti["org/tutor-bias"], "edufair_explicit_physics", q0, "female")]
    assert len(female["sc"]) == len(EVIDENCE_METRICS) and female["turns"][0][0] == "q"
    # judge labels per tutor turn, in JUDGE_FIELDS order, with the raw output
    tutor_turns = [i for i, t in enumerate(female["turns"]) if t[0] == "t"]
    assert [j[0] for j in female["j"]] == tutor_turns and all(j[1] == 1 and len(j[2]) == 6 and j[5] for j in female["j"])
    # the cue sentence of the tutor's system prompt
    text, spans = data["prompts"][female["ts"]]
    assert [text[s:e] for s, e in spans] == ["This is a Grade 8 female student taking a physics class."]
    assert data["prompts"][female["ss"]][1] == []  # Explicit's student prompt carries no cue
    # a leaking dialogue: stop evidence on the tutor turn, which the detector also sees
    leaking = [d for d in seen.values() if d["ev"] and d["ev"]["rule"] == "tutor_states_gold"]
    assert leaking
    for d in leaking[:5]:
        i = d["ev"]["turn_index"]
        assert d["ev"]["span"] in d["turns"][i][1] and i in d["leak"] and d["stop"] == "answer_revealed"
        assert d["turns"][i][2] and "<think>" in d["turns"][i][2]  # the raw generation, where it differs
    failed = [d for d in seen.values() if d["failed"]]
    assert len(failed) == 1 and failed[0]["err"][0] == "http_5xx" and failed[0]["lv"] == "male"


def test_failures_and_lost_pairs_per_level(built):
    report, _ = built
    data = page_data(report)
    rows = [dict(zip(data["failures"]["cols"], r)) for r in data["failures"]["rows"]]
    male = [r for r in rows if r["tutor"] == "org/tutor-bias" and r["task"] == "edufair_explicit_physics" and r["level"] == "male"]
    assert male[0]["failed"] == 1 and male[0]["lost_pairs"] == 1 and male[0]["failed_by_kind"] == "tutor:http_5xx=1"
    (listed,) = data["failures"]["listed"]
    assert listed[0] == "org/tutor-bias" and listed[4] == "male" and listed[6] == bucket_of(listed[3])


def test_implicit_cues_and_cue_words():
    text = "This is a Grade 8 student taking a physics class. The student’s name is Wei. You are a tutor."
    (span,) = cue_spans(text, "implicit", "wei", "physics", "tutor")
    assert text[span[0]:span[1]] == "The student’s name is Wei."
    # a prompt from another protocol version: the condition's cue words instead
    assert cue_spans("Tutor this student, Wei, kindly.", "implicit", "wei", "physics", "tutor") == [[20, 23]]
    assert cue_spans("anything", "explicit", "female", "physics", "student") == []
    assert level_cue_words("implicit")["ji_yoon"] == ["Ji-Yoon"]
    assert level_cue_words("opposite")["s_female_t_male"] == ["female", "male"]


def test_verdict_mapping_reads_a_verdict_column_when_there_is_one():
    today = pd.DataFrame({"violation_fdr": [True, False, False], "sufficient": [True, True, False]})
    assert verdicts(today) == ["flag", "none", "insufficient"]
    later = today.assign(verdict=["flag", "certify", "insufficient"])
    assert verdicts(later) == ["flag", "certify", "insufficient"]


def test_report_without_html_and_without_transcripts(tmp_path):
    write_evidence_run(tmp_path / "runs", n_questions=16)
    assert cli(["report", str(tmp_path / "runs"), "--out", str(tmp_path / "a"), "--n-boot", "20", "--no-figures",
                "--no-html"]) == 0
    assert not (tmp_path / "a" / "index.html").exists() and not (tmp_path / "a" / "viewer").exists()
    assert not (tmp_path / "a" / ".viewer-partial").exists()
    # statistics only (no transcripts gathered): the page has the grid, no transcript files
    write_report(read_report_inputs([tmp_path / "runs"], evidence=False), tmp_path / "b", StatParams(n_boot=20), figures=False)
    data = page_data(tmp_path / "b")
    assert data["grid"]["rows"] and data["tutors"][0]["ti"] is None and not (tmp_path / "b" / "viewer" / "t").exists()
    man = json.loads((tmp_path / "b" / "report_manifest.json").read_text())
    assert "index.html" in man["files"] and man["viewer"]["transcripts"] == 0


def test_cli_report_writes_the_page_and_a_second_report_replaces_its_files(tmp_path, capsys):
    write_evidence_run(tmp_path / "runs", n_questions=16)
    out = tmp_path / "rep"
    assert cli(["report", str(tmp_path / "runs"), "--out", str(out), "--n-boot", "20", "--no-figures"]) == 0
    assert f"open {out / 'index.html'}" in capsys.readouterr().out
    first = sorted(p.name for p in (out / "viewer" / "t").rglob("*.js"))
    assert first and not (out / ".viewer-partial").exists()
    assert cli(["report", str(tmp_path / "runs"), "--out", str(out), "--n-boot", "20", "--no-figures"]) == 0
    assert sorted(p.name for p in (out / "viewer" / "t").rglob("*.js")) == first  # replaced, not appended to
    total = sum(len(p.read_text().splitlines()) for p in (out / "viewer" / "t").rglob("*.js"))
    assert total == 16 * 9
    summary = (out / "summary.md").read_text()
    assert "## Cost per tutor and role" in summary and "index.html" in summary
