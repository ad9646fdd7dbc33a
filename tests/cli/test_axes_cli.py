"""EduFair's extension tasks as a user runs them: the real ``lm_eval`` CLI against a loopback fake
endpoint (tutor, student and judge), then ``edufair report`` on the output folder, pooled with a
paper task of the same tutor."""

from __future__ import annotations

import json

import pytest

from edufair_metrics import EXTENSION_PROTOCOL_VERSION, PROTOCOL_VERSION
from edufair_metrics.records import record_in_line

from tests.helpers.bank import write_bank
from tests.helpers.edufair_cli import PY, TASK, EduFairFake, cli_env, lm_eval_argv, run_cli
from tests.helpers.stored import with_provenance

pytestmark = pytest.mark.slow


def _edufair(*args, env, cwd):
    return run_cli([PY, "-m", "edufair_metrics.cli", *map(str, args)], env, cwd)


def _lm_eval(fake, bank, out, task, limit, env, cwd, extra=None):
    argv = lm_eval_argv(fake.url, bank, out, limit=limit, max_turns=2, extra=extra)
    argv[argv.index(TASK)] = task
    return run_cli(argv, env, cwd, timeout=300)


def _records(out, task):
    (f,) = sorted(out.rglob(f"samples_{task}_*.jsonl"))
    return with_provenance(record_in_line(json.loads(line)) for line in f.read_text().splitlines() if line.strip())


def test_intersectional_task_through_lm_eval_and_report(tmp_path):
    bank = write_bank(tmp_path / "bank", n=2)
    env = cli_env(tmp_path / "cache")
    out = tmp_path / "out"
    with EduFairFake() as fake:
        r = _lm_eval(fake, bank, out, "edufair_intersectional_physics", 16, env, tmp_path)
        assert r.returncode == 0, r.stderr[-3000:]
        r = _lm_eval(fake, bank, out, TASK, 18, env, tmp_path)
        assert r.returncode == 0, r.stderr[-3000:]
    ext = _records(out, "edufair_intersectional_physics")
    assert len(ext) == 16 and {x["transcript"]["level"] for x in ext} == {
        "female_low_income", "female_high_income", "male_low_income", "male_high_income",
        "female_immigrant", "female_native_born", "male_immigrant", "male_native_born"}
    assert {x["provenance"]["protocol_version"] for x in ext} == {EXTENSION_PROTOCOL_VERSION}
    assert "female student from a low-income family" in ext[0]["transcript"]["tutor_system"]
    paper = _records(out, TASK)
    assert {x["provenance"]["protocol_version"] for x in paper} == {PROTOCOL_VERSION}
    assert not any("protocol_extensions_sha256" in x["provenance"] for x in paper)

    rep = tmp_path / "rep"
    r = _edufair("report", out, "--out", rep, "--n-boot", "20", "--min-pairs", "2", env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    for name in ("table_intersectional.md", "table_intersectional_paper.md", "table_intersectional_signed.md",
                 "table_intersectional_signed_paper.md", "fig_intersectional.png", "index.html"):
        assert (rep / name).is_file(), name
    summary = (rep / "summary.md").read_text()
    assert "## EduFair extensions (not in the paper)" in summary and "Intersectional Explicit: units by verdict" in summary
    assert "Gender × SES interaction" in (rep / "table_intersectional.md").read_text()
    assert '"intersectional"' in (rep / "index.html").read_text()


def test_names_task_through_lm_eval_and_report(tmp_path):
    bank = write_bank(tmp_path / "bank", n=2)
    env = cli_env(tmp_path / "cache")
    out = tmp_path / "out"
    with EduFairFake() as fake:
        r = _lm_eval(fake, bank, out, "edufair_implicit_names_physics", 32, env, tmp_path,
                     extra={"names": {"k": 2, "seed": 1}})
        assert r.returncode == 0, r.stderr[-3000:]
    recs = _records(out, "edufair_implicit_names_physics")
    assert len(recs) == 32  # 2 questions x 8 cells x k = 2
    draw = recs[0]["provenance"]["names_draw"]
    assert draw["k"] == 2 and draw["seed"] == 1 and len(draw["drawn"]) == 8
    names = {x for cell in draw["drawn"].values() for x in cell}
    assert {x["transcript"]["tutor_system"].split("name is ", 1)[1].split(".", 1)[0] for x in recs} == names
    rep = tmp_path / "rep"
    r = _edufair("report", out, "--out", rep, "--n-boot", "20", "--min-pairs", "2", env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    for name in ("table_implicit_names.md", "table_implicit_names_paper.md", "table_implicit_names_spread.md",
                 "table_implicit_names_spread_paper.md", "names.csv", "fig_implicit_names.png"):
        assert (rep / name).is_file(), name
    spread = (rep / "table_implicit_names_spread.md").read_text()
    assert "Black vs White (names)" in spread and "heterogeneity p" in spread
    assert "Many names per group: units by verdict" in (rep / "summary.md").read_text()


def test_posttest_through_lm_eval_then_from_stored_transcripts(tmp_path):
    bank = write_bank(tmp_path / "bank", n=2)
    env = cli_env(tmp_path / "cache")
    live, stored = tmp_path / "live", tmp_path / "stored"
    with EduFairFake() as fake:
        r = _lm_eval(fake, bank, live, TASK, 18, env, tmp_path, extra={"posttest": True})
        assert r.returncode == 0, r.stderr[-3000:]
        r = _lm_eval(fake, bank, stored, TASK, 18, env, tmp_path)
        assert r.returncode == 0, r.stderr[-3000:]
        recs = _records(live, TASK)
        assert all(x["posttest"]["prompt"].startswith("(The tutoring session is over.)") for x in recs)
        assert recs[0]["provenance"]["posttest"]["protocol_version"] == EXTENSION_PROTOCOL_VERSION
        assert recs[0]["provenance"]["protocol_version"] == PROTOCOL_VERSION
        assert not any("posttest" in x for x in _records(stored, TASK))
        student = recs[0]["provenance"]["models"]["student"]
        config = tmp_path / "student.yaml"
        config.write_text(json.dumps({"edufair": {"student": {"model": student["kind"],
                                                              "model_args": student["model_args"]}}}))
        out = tmp_path / "pt"
        r = _edufair("posttest", stored, "--out", out, "--config", config, env=env, cwd=tmp_path)
        assert r.returncode == 0, r.stderr[-3000:]
        assert "18 post-test(s) for 18 dialogue(s)" in r.stderr
        # the same student, asked again: refused with one line when it is another one
        r = _edufair("posttest", stored, "--out", tmp_path / "pt2", "--config", config, "--student-model", "other",
                     env=env, cwd=tmp_path)
        assert r.returncode != 0 and "same student" in r.stderr
    again = _records(out, TASK)
    assert [x["posttest"]["answer"] for x in again] == [x["posttest"]["answer"] for x in recs]
    assert [x["scores"]["scores"].get("posttest_correct") for x in again] == \
           [x["scores"]["scores"].get("posttest_correct") for x in recs]
    rep = tmp_path / "rep"
    r = _edufair("report", out, "--out", rep, "--n-boot", "20", "--min-pairs", "2", env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    for name in ("table_outcome.md", "table_outcome_paper.md", "fig_outcome.png"):
        assert (rep / name).is_file(), name
    summary = (rep / "summary.md").read_text()
    assert "## Outcome fairness (post-test; EduFair extension)" in summary and "18 post-test(s) scored" in summary
