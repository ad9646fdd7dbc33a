"""Persistent call cache: keys, model identities, secrets, namespaces, threads, crash safety."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from edufair_metrics.cache import (
    EXECUTION_ONLY_ARGS,
    CachePolicy,
    CallCache,
    cache_key,
    call_key,
    canonical_json,
    default_cache_path,
    model_identity,
)
from edufair_metrics.cli import main as edufair
from edufair_metrics.errors import EduFairError
from edufair_metrics.secrets import strip_secrets


def test_roundtrip_persistence_and_canonical_keys(tmp_path):
    path = tmp_path / "c.sqlite"
    with CallCache(path) as c:
        assert c.get({"namespace": "judge", "x": 1}) is None
        assert c.put({"namespace": "judge", "model": "m", "messages": [{"role": "user", "content": "hé"}]}, {"content": "ok", "n": [1, 2]})
    with CallCache(path) as c:  # new process-equivalent: fresh connection
        # key order does not matter; content does
        assert c.get({"messages": [{"content": "hé", "role": "user"}], "model": "m", "namespace": "judge"}) == {"content": "ok", "n": [1, 2]}
        assert c.get({"namespace": "judge", "model": "m", "messages": [{"role": "user", "content": "he"}]}) is None
        assert c.get({"namespace": "judge", "model": "m2", "messages": [{"role": "user", "content": "hé"}]}) is None


def test_secrets_never_part_of_keys(tmp_path, monkeypatch):
    k1 = {"namespace": "student", "model": "m", "api_key": "sk-1", "headers": {"Authorization": "Bearer sk-1", "X-Api-Key": "k"}}
    k2 = {"namespace": "student", "model": "m", "api_key": "sk-2", "headers": {}}
    assert cache_key(k1) == cache_key(k2)
    assert strip_secrets(k1) == {"namespace": "student", "model": "m", "headers": {}}
    # max_tokens is not a secret
    assert strip_secrets({"max_tokens": 5}) == {"max_tokens": 5}
    monkeypatch.setenv("EDUFAIR_JUDGE_API_KEY", "sk-test-SECRET-123456")
    path = tmp_path / "c.sqlite"
    with CallCache(path) as c:
        assert c.put(k1, {"content": "fine"})
        assert not c.put({"namespace": "judge"}, {"content": "leaks sk-test-SECRET-123456"})  # refused
        assert c.get({"namespace": "judge"}) is None
    data = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert b"sk-1" not in data and b"sk-test-SECRET" not in data


def test_stats_and_clear_by_namespace(tmp_path):
    with CallCache(tmp_path / "c.sqlite") as c:
        for i in range(3):
            c.put({"namespace": "judge", "i": i}, i)
        for i in range(2):
            c.put({"namespace": "student", "i": i}, i)
        st = c.stats()
        assert st["entries"] == 5 and st["namespaces"] == {"judge": 3, "student": 2}
        assert st["size_bytes"] > 0 and st["path"].endswith("c.sqlite")
        assert c.clear("student") == 2
        assert c.stats()["namespaces"] == {"judge": 3}
        assert c.get({"namespace": "judge", "i": 1}) == 1
        assert c.clear() == 3
        assert c.stats()["entries"] == 0


def test_wal_mode_and_corrupt_rows_are_misses(tmp_path):
    path = tmp_path / "c.sqlite"
    with CallCache(path) as c:
        c.put({"namespace": "judge", "k": 1}, {"v": 1})
        assert c._conn().execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        c._conn().execute("UPDATE calls SET value = '{\"v\": 2}'")  # checksum no longer matches
        assert c.get({"namespace": "judge", "k": 1}) is None


def test_threads_share_one_cache(tmp_path):
    c = CallCache(tmp_path / "c.sqlite")
    errors = []

    def work(t):
        try:
            for i in range(50):
                c.put({"namespace": "judge", "t": t, "i": i}, [t, i])
                assert c.get({"namespace": "judge", "t": t, "i": i}) == [t, i]
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert c.stats()["entries"] == 300
    c.close()


def test_close_leaves_a_running_workers_connection_alone(tmp_path):
    """Ctrl-C abandons worker threads with calls in flight, and the entry point closes the cache:
    closing a connection under a statement of its thread crashed the interpreter (SIGSEGV). A
    running thread's connection stays open (and its late answer still lands in the file); the
    closing thread's own connection and those of finished threads are closed."""
    c = CallCache(tmp_path / "c.sqlite")
    opened, closed_now = threading.Event(), threading.Event()
    late = {}

    def abandoned_worker():
        conn = c._conn()  # this thread's connection, as a call in flight holds it
        opened.set()
        closed_now.wait(10)
        try:
            late["usable"] = conn.execute("SELECT count(*) FROM calls").fetchone() is not None
        except sqlite3.ProgrammingError:  # closed under this thread
            late["usable"] = False
        late["stored"] = c.put({"namespace": "judge", "i": 1}, "late answer")

    def finished_worker():
        c.put({"namespace": "judge", "i": 2}, "early answer")

    done = threading.Thread(target=finished_worker)
    done.start()
    done.join()
    th = threading.Thread(target=abandoned_worker)
    th.start()
    assert opened.wait(10)
    mine = c._conn()
    c.close()
    closed_now.set()
    th.join(10)
    assert late["usable"] and late["stored"] is True
    with pytest.raises(sqlite3.ProgrammingError):  # the closing thread's connection is closed
        mine.execute("SELECT 1")
    assert c.unstored == 0  # the late answer went to the file, not to memory
    again = CallCache(tmp_path / "c.sqlite")
    assert again.get({"namespace": "judge", "i": 1}) == "late answer"
    assert again.get({"namespace": "judge", "i": 2}) == "early answer"
    again.close()
    c.close()


def test_default_path_policy(tmp_path, monkeypatch):
    """The default is user-level, never under the working directory: a rerun from another folder
    resumes, and `edufair cache` from anywhere reads the same file."""
    monkeypatch.delenv("EDUFAIR_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    for cwd in (tmp_path, tmp_path / "home"):
        cwd.mkdir(exist_ok=True)
        monkeypatch.chdir(cwd)
        assert default_cache_path() == tmp_path / "home" / ".cache" / "edufair" / "edufair-calls.sqlite"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_path() == tmp_path / "xdg" / "edufair" / "edufair-calls.sqlite"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")  # the XDG spec: relative paths are ignored
    assert default_cache_path() == tmp_path / "home" / ".cache" / "edufair" / "edufair-calls.sqlite"
    monkeypatch.setenv("EDUFAIR_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert default_cache_path() == tmp_path / "elsewhere" / "edufair-calls.sqlite"
    assert CachePolicy.from_settings("off").open() is None
    c = CachePolicy.from_settings(None).open()
    assert c.path == tmp_path / "elsewhere" / "edufair-calls.sqlite"
    c.close()


def test_cache_policy_is_decided_in_one_place(tmp_path, monkeypatch):
    """Settings and the environment give one policy: path beats $EDUFAIR_CACHE_DIR beats dir."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EDUFAIR_CACHE_DIR", raising=False)
    assert CachePolicy.from_settings({"enabled": False}) == CachePolicy(enabled=False)
    assert CachePolicy.from_settings({"enabled": False}).location is None
    assert CachePolicy.from_settings({"dir": str(tmp_path / "d")}).location == tmp_path / "d" / "edufair-calls.sqlite"
    monkeypatch.setenv("EDUFAIR_CACHE_DIR", str(tmp_path / "env"))
    assert CachePolicy.from_settings({"dir": str(tmp_path / "d")}).location == tmp_path / "env" / "edufair-calls.sqlite"
    assert CachePolicy.from_settings({"path": str(tmp_path / "p.sqlite")}).location == tmp_path / "p.sqlite"
    assert CachePolicy.from_settings(str(tmp_path / "q.sqlite")).location == tmp_path / "q.sqlite"
    # the form that travels to the judge filter gives back the same policy
    for policy in (CachePolicy.from_settings({"enabled": False}), CachePolicy.from_settings(None)):
        assert CachePolicy.from_settings(policy.to_setting()).location == policy.location


WRITER = textwrap.dedent(
    """
    import sys
    from edufair_metrics.cache import CallCache
    c = CallCache(sys.argv[1])
    i = 0
    big = "x" * 20000
    while True:
        c.put({"namespace": "judge", "i": i}, {"i": i, "payload": big + str(i)})
        if i == 20:
            print("ready", flush=True)
        i += 1
    """
)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_sigkill_mid_write_leaves_only_whole_records(tmp_path):
    path = tmp_path / "c.sqlite"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.3)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    conn = sqlite3.connect(str(path))
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    with CallCache(path) as c:
        n = c.stats()["entries"]
        assert n >= 21
        # every committed record is whole and valid; the next one is absent, not partial
        for i in range(n):
            assert c.get({"namespace": "judge", "i": i}) == {"i": i, "payload": "x" * 20000 + str(i)}
        assert c.get({"namespace": "judge", "i": n}) is None


# ---------------------------------------------------------------- model identity and call keys

SECRET = "sk-edufair-unit-SECRET-42"
ANSWER_ARGS = {"model": "meta-llama/Llama-3.1-8B-Instruct", "seed": 3, "revision": "main", "dtype": "bfloat16"}
EXECUTION_ARGS = {
    "base_url": "http://127.0.0.1:8001/v1/chat/completions", "num_concurrent": 32, "max_retries": 5, "timeout": 60,
    "batch_size": "auto", "max_batch_size": 64, "device": "cuda:0", "tokenized_requests": False,
    "verify_certificate": False, "tensor_parallel_size": 2, "gpu_memory_utilization": 0.9,
}


def test_model_identity_keeps_only_answer_determining_args():
    args = {**ANSWER_ARGS, **EXECUTION_ARGS, "api_key": SECRET,
            "headers": {"Authorization": f"Bearer {SECRET}"}, "header": {"X-Api-Key": SECRET}}
    ident = model_identity("local-chat-completions", args)
    assert ident == {"kind": "local-chat-completions", "model_args": ANSWER_ARGS}
    assert SECRET not in canonical_json(ident)
    assert "base_url" in args and "api_key" in args  # the caller's mapping is not changed
    assert model_identity("hf", None) == {"kind": "hf", "model_args": {}}


@pytest.mark.parametrize("name", sorted(EXECUTION_ONLY_ARGS))
def test_every_execution_only_arg_is_left_out(name):
    assert model_identity("m", {**ANSWER_ARGS, name: "anything"}) == model_identity("m", ANSWER_ARGS)


def test_secrets_nested_in_kept_args_are_stripped():
    ident = model_identity("m", {"model": "x", "client_options": {"Authorization": f"Bearer {SECRET}",
                                                                   "access_token": SECRET, "organization": "org"}})
    assert ident["model_args"] == {"model": "x", "client_options": {"organization": "org"}}


@pytest.mark.parametrize("changed", ["model", "seed", "dtype", "revision"])
def test_answer_determining_args_change_the_identity(changed):
    assert model_identity("m", {**ANSWER_ARGS, changed: "other"}) != model_identity("m", ANSWER_ARGS)
    assert model_identity("hf", ANSWER_ARGS) != model_identity("vllm", ANSWER_ARGS)


def _key(**over):
    parts = {"role": "tutor", "identity": model_identity("local-chat-completions", ANSWER_ARGS),
             "gen_kwargs": {"temperature": 0.1, "max_gen_toks": 2048, "until": []}, "prompt": "<s>[SYS] hi"}
    parts.update(over)
    return call_key(parts["role"], parts["identity"], parts["gen_kwargs"], parts["prompt"])


def test_call_key_holds_role_model_decoding_and_prompt():
    key = _key()
    assert key == {"namespace": "tutor", "model": model_identity("local-chat-completions", ANSWER_ARGS),
                   "gen_kwargs": {"temperature": 0.1, "max_gen_toks": 2048, "until": []}, "prompt": "<s>[SYS] hi"}


@pytest.mark.parametrize(
    "over",
    [
        {"role": "student"},
        {"identity": model_identity("local-chat-completions", {**ANSWER_ARGS, "model": "other"})},
        {"identity": model_identity("hf", ANSWER_ARGS)},
        {"gen_kwargs": {"temperature": 0.7, "max_gen_toks": 2048, "until": []}},
        {"gen_kwargs": {"temperature": 0.1, "max_gen_toks": 512, "until": []}},
        {"gen_kwargs": {"temperature": 0.1, "max_gen_toks": 2048, "until": ["\n\n"]}},
        {"prompt": "<s>[SYS] hi "},
        {"prompt": "<s>[SYS] Hi"},
    ],
    ids=["role", "model", "kind", "temperature", "max_gen_toks", "until", "prompt-space", "prompt-case"],
)
def test_cache_key_differs_when_anything_answer_determining_differs(over):
    assert cache_key(_key(**over)) != cache_key(_key())


def test_cache_key_equal_for_the_same_call_served_elsewhere():
    moved = model_identity("local-chat-completions", {**ANSWER_ARGS, **EXECUTION_ARGS, "api_key": SECRET})
    same = _key(identity=moved, gen_kwargs={"until": [], "max_gen_toks": 2048, "temperature": 0.1})  # other order
    assert cache_key(same) == cache_key(_key())
    assert len(cache_key(_key())) == 64 and int(cache_key(_key()), 16) >= 0  # sha256 hex


def test_a_cache_folder_that_cannot_be_created_is_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(EduFairError) as err:
        CachePolicy.from_settings({"path": str(blocker / "sub" / "c.sqlite")}).open()
    assert "cannot create the call cache folder" in str(err.value) and "\n" not in str(err.value)


def test_edufair_cache_reads_the_same_file_from_any_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("EDUFAIR_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    expected = tmp_path / "xdg" / "edufair" / "edufair-calls.sqlite"
    with CallCache(expected) as c:
        c.put({"namespace": "tutor", "i": 1}, "x")
    for cwd in (tmp_path / "a", tmp_path / "b" / "c"):
        cwd.mkdir(parents=True)
        monkeypatch.chdir(cwd)
        assert edufair(["cache"]) == 0
        out = capsys.readouterr().out.splitlines()
        assert out[0] == f"cache: {expected} (default: $XDG_CACHE_HOME/edufair)", out
        assert out[1].startswith("entries: 1 ")
    monkeypatch.setenv("EDUFAIR_CACHE_DIR", str(tmp_path / "env"))
    assert edufair(["cache"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"cache: {tmp_path / 'env' / 'edufair-calls.sqlite'} (default: $EDUFAIR_CACHE_DIR)"
