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


@pytest.mark.parametrize("where", ["metadata_top_level", "model_args"])
def test_key_like_entries_anywhere_in_task_metadata_are_rejected(tmp_path, where):
    """lm-eval copies the whole --metadata, and under its CLI every --model_args entry, into the
    task config and from there into results_*.json: a credential there is refused in one line."""
    import json as _json

    bank = write_bank(tmp_path / "bank", n=1)
    with EduFairFake() as fake:
        argv = lm_eval_argv(fake.url, bank, tmp_path / "out", limit=3, max_turns=1,
                            model_args_extra="auth_token=" + SECRET if where == "model_args" else "")
        if where == "metadata_top_level":
            meta = _json.loads(argv[-1])
            meta["hf_token"] = SECRET
            argv[-1] = _json.dumps(meta)
        r = run_cli(argv, cli_env(tmp_path / "cache"), tmp_path, timeout=120)
        assert r.returncode != 0
        assert fake.srv.calls == 0
    line = [ln for ln in r.stderr.splitlines() if ln.strip()][-1]
    assert line.startswith("edufair: error: ") and "looks like a secret" in line, line
    assert SECRET not in line
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*"))


def test_openai_key_exposure_warning():
    from edufair_metrics.preflight import openai_key_exposure

    env = {"OPENAI_API_KEY": SECRET}
    urls = {"tutor": "https://api.example.com/v1/chat/completions", "student": "http://127.0.0.1:8001/v1/chat/completions"}
    assert openai_key_exposure(urls, env) == ["tutor (https://api.example.com/v1/chat/completions)"]
    assert openai_key_exposure(urls, {"OPENAI_API_KEY": "EMPTY"}) == []
    assert openai_key_exposure(urls, {}) == []
    assert openai_key_exposure({"tutor": None, "student": None}, env) == []
