"""Secrets: with API keys set to a recognisable fake secret, an end-to-end run through
the plain `python -m lm_eval` CLI leaves the secret in no output file (results, samples, cache
SQLite incl. WAL, captured logs). The fake endpoint does receive it (the Authorization header)."""

from __future__ import annotations

import pytest

from tests.helpers.bank import write_bank
from tests.helpers.edufair_cli import SECRET, EduFairFake, cli_env, lm_eval_argv, run_cli

pytestmark = pytest.mark.slow


def test_api_key_never_written(tmp_path):
    bank = write_bank(tmp_path / "bank", n=1)
    work = tmp_path / "work"
    work.mkdir()
    with EduFairFake() as fake:
        env = cli_env(tmp_path / "cache", OPENAI_API_KEY=SECRET, EDUFAIR_JUDGE_API_KEY=SECRET)
        r = run_cli(lm_eval_argv(fake.url, bank, tmp_path / "out", limit=3, max_turns=2, fast=False), env, work, timeout=180)
        assert r.returncode == 0, r.stderr[-3000:]
        assert any(SECRET in (q.headers.get("authorization") or "") for q in fake.srv.requests), "key not used"
    (tmp_path / "stdout.log").write_text(r.stdout)
    (tmp_path / "stderr.log").write_text(r.stderr)
    files = [p for p in tmp_path.rglob("*") if p.is_file() and p.parent != bank]
    assert any(p.suffix == ".jsonl" for p in files) and any("sqlite" in p.name for p in files)
    leaks = [str(p) for p in files if SECRET.encode() in p.read_bytes()]
    assert not leaks, leaks
