"""Generate now, judge later: ``lm_eval --predict_only`` (no judge), ``edufair judge`` elsewhere,
and the judged folder is a run for ``report``, ``leaderboard``, ``compare`` and ``agreement``
(with the new judge's provenance)."""

from __future__ import annotations

import json

import pytest

from tests.helpers.bank import write_bank
from tests.helpers.edufair_cli import PY, EduFairFake, cli_env, lm_eval_argv, run_cli
from tests.helpers.stored import with_provenance

pytestmark = pytest.mark.slow


def _edufair(*args, env, cwd):
    return run_cli([PY, "-m", "edufair_metrics.cli", *map(str, args)], env, cwd)


def test_predict_only_then_judge_then_every_command(tmp_path):
    bank = write_bank(tmp_path / "bank", n=2)
    with EduFairFake() as fake:
        env = cli_env(tmp_path / "cache")
        gen = tmp_path / "predonly"
        r = run_cli(lm_eval_argv(fake.url, bank, gen, limit=18, max_turns=2) + ["--predict_only"], env, tmp_path)
        assert r.returncode == 0, r.stderr[-3000:]
        assert not [k for k in fake.counts if k[0] == "judge"]  # generated only
        line = json.loads(next(gen.rglob("samples_*.jsonl")).read_text().splitlines()[0])
        assert {j["kind"] for j in line["complete_dialogues"]["judgements"]} == {"judge_disabled"}

        judged = {}
        for name in ("judge-a", "judge-b"):
            out = tmp_path / f"judged-{name}"
            r = _edufair("judge", gen, "--judge-base-url", fake.url, "--judge-model", name, "--out", out, "--no-progress",
                         env=env, cwd=tmp_path)
            assert r.returncode == 0, r.stderr[-3000:]
            judged[name] = out
        # the folder has lm-eval's layout: a model folder with the samples and a results file
        model_dirs = [d for d in judged["judge-a"].iterdir() if d.is_dir()]
        assert len(model_dirs) == 1 and list(model_dirs[0].glob("results_*.json"))
        rec = json.loads(next(judged["judge-a"].rglob("samples_*.jsonl")).read_text().splitlines()[0])["complete_dialogues"]
        rec = with_provenance([rec])[0]  # the first line holds the run header
        assert rec["provenance"]["models"]["judge"]["model"] == "judge-a"
        assert rec["provenance"]["models"]["tutor"]["model_args"]  # the generating run's part is kept
        assert all(j["status"] == "ok" for j in rec["judgements"])

        rep = tmp_path / "rep"
        r = _edufair("report", judged["judge-a"], "--out", rep, "--n-boot", "20", "--no-figures", env=env, cwd=tmp_path)
        assert r.returncode == 0, r.stderr[-3000:]
        assert (rep / "summary.md").is_file()
        r = _edufair("leaderboard", judged["judge-a"], "--out", tmp_path / "lb", "--n-boot", "20", env=env, cwd=tmp_path)
        assert r.returncode == 0, r.stderr[-3000:]
        # two judges: compare refuses to gate across them (another judge is another measurement)
        r = _edufair("compare", "--baseline", judged["judge-a"], "--candidate", judged["judge-b"], "--n-boot", "20",
                     "--out", tmp_path / "cmp", env=env, cwd=tmp_path)
        assert r.returncode == 2 and "judge model differs" in r.stderr, r.stderr[-2000:]
        # ... and agreement compares exactly those two judgings
        r = _edufair("agreement", judged["judge-a"], judged["judge-b"], "--out", tmp_path / "agree", "--n-boot", "20",
                     env=env, cwd=tmp_path)
        assert r.returncode == 0, r.stderr[-3000:]
        assert (tmp_path / "agree" / "judge_agreement.csv").is_file()


def test_agreement_with_a_judging_without_labels_says_so_and_fails(tmp_path):
    bank = write_bank(tmp_path / "bank", n=1)
    with EduFairFake() as fake:
        env = cli_env(tmp_path / "cache")
        gen = tmp_path / "predonly"
        r = run_cli(lm_eval_argv(fake.url, bank, gen, limit=2, max_turns=1) + ["--predict_only"], env, tmp_path)
        assert r.returncode == 0, r.stderr[-3000:]
        judged = tmp_path / "judged"
        assert _edufair("judge", gen, "--judge-base-url", fake.url, "--out", judged, "--no-progress",
                        env=env, cwd=tmp_path).returncode == 0
        r = _edufair("agreement", judged, gen, "--out", tmp_path / "agree", env=env, cwd=tmp_path)
    err = [x for x in r.stderr.splitlines() if x.strip()]
    assert r.returncode == 2 and len(err) == 1, r.stderr[-2000:]
    assert "RUN_B" in err[0] and "has no judge label" in err[0] and "judge_disabled=" in err[0]
    assert not (tmp_path / "agree").exists()
