"""Bad input: each case fails with a non-zero exit, ONE line naming the problem and
where (the last stderr line; lm-eval prints a traceback before it), and no output written."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.bank import write_bank
from tests.helpers.edufair_cli import EduFairFake, cli_env, lm_eval_argv, run_cli
from tests.helpers.synthetic_runs import write_run

pytestmark = pytest.mark.slow


def _last_line(stderr: str) -> str:
    return [ln for ln in stderr.splitlines() if ln.strip()][-1]


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _case(tmp_path, fake_url, *, bank_text=None, extra=None, judge=None, url=None):
    bank = write_bank(tmp_path / "bank", n=1)
    if bank_text is not None:
        (bank / "physics.jsonl").write_text(bank_text)
    out = tmp_path / "out"
    argv = lm_eval_argv(url or fake_url, bank, out, extra=extra, judge=None if judge == "unset" else judge)
    if judge == "unset":
        meta = json.loads(argv[-1])
        meta["edufair"]["judge"] = {"model": "fake-judge"}
        argv[-1] = json.dumps(meta)
    r = run_cli(argv, cli_env(tmp_path / "cache"), tmp_path)
    assert r.returncode != 0
    assert not out.exists() or not any(out.rglob("*")), "partial output written"
    assert "Traceback" not in r.stderr  # one clear line, not a stack trace
    return _last_line(r.stderr)


CASES = {
    "malformed_bank_line": (dict(bank_text='{"id": "q1", "question": "x"\n'), ["physics.jsonl", ":1"]),
    "unknown_level": (dict(extra={"levels": ["martian"]}), ["martian"]),
    "unknown_key": (dict(extra={"max_turns": 3}), ["unknown edufair setting", "max_turns", "did you mean 'max_tutor_turns'?"]),
    # a typo inside a block used to be ignored: `cache.enable: false` left the cache on
    "nested_typo_cache_enable": (dict(extra={"cache": {"enable": False}}),
                                 ["--metadata", "unknown edufair setting 'cache.enable'", "did you mean 'enabled'?"]),
    "turns_not_int": (dict(extra={"max_tutor_turns": "ten"}), ["max_tutor_turns", "'ten'"]),
    "judge_url_unset": (dict(judge="unset"), ["judge endpoint not set"]),
}


@pytest.fixture(scope="module")
def fake():
    with EduFairFake() as f:
        yield f


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_one_line(tmp_path, fake, name):
    kwargs, needles = CASES[name]
    line = _case(tmp_path, fake.url, **kwargs)
    assert line.startswith("edufair: error: "), line
    for n in needles:
        assert n in line, line
    assert fake.srv.calls == 0 or name != "judge_url_unset"


def test_metadata_edufair_not_an_object(tmp_path, fake):
    bank = write_bank(tmp_path / "bank")
    argv = lm_eval_argv(fake.url, bank, tmp_path / "out")
    argv[-1] = json.dumps({"edufair": ["max_tutor_turns", 3]})
    r = run_cli(argv, cli_env(tmp_path / "cache"), tmp_path)
    assert r.returncode != 0 and "'edufair' must be a JSON object" in _last_line(r.stderr)


def test_unreachable_endpoint_fails_fast_naming_it(tmp_path, fake):
    dead = f"http://127.0.0.1:{_free_port()}/v1"
    bank = write_bank(tmp_path / "bank")
    argv = lm_eval_argv(fake.url, bank, tmp_path / "out")
    meta = json.loads(argv[-1])
    meta["edufair"]["judge"]["base_url"] = dead
    argv[-1] = json.dumps(meta)
    before = fake.srv.calls
    r = run_cli(argv, cli_env(tmp_path / "cache"), tmp_path, timeout=60)
    line = _last_line(r.stderr)
    assert r.returncode != 0 and "edufair.judge" in line and dead in line and "unreachable" in line, line
    assert fake.srv.calls == before, "no dialogue may run before the endpoint check"


def test_report_refuses_other_protocol_version_cli(tmp_path):
    """A results folder whose records carry another protocol version is refused in one line."""
    model_dir = write_run(tmp_path / "runs", "org/old-model")
    for sf in model_dir.glob("samples_*.jsonl"):
        lines = []
        for ln in sf.read_text().splitlines():
            obj = json.loads(ln)
            obj["complete_dialogues"].setdefault("provenance", {})["protocol_version"] = "edufair-bench-0"
            lines.append(json.dumps(obj))
        sf.write_text("\n".join(lines) + "\n")
    out = tmp_path / "report"
    r = subprocess.run([sys.executable, "-m", "edufair_metrics.cli", "report", str(tmp_path / "runs"), "--out", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    line = _last_line(r.stderr)
    assert "protocol version" in line and "edufair-bench-0" in line, line
    assert not out.exists() or not any(out.rglob("*"))


def _run_expecting_one_line(tmp_path, fake, argv, env=None):
    before = fake.srv.calls
    r = run_cli(argv, env or cli_env(tmp_path / "cache"), tmp_path)
    assert r.returncode != 0, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    assert fake.srv.calls == before, "no model call may happen before the check"
    line = _last_line(r.stderr)
    assert line.startswith("edufair: error: "), line
    return line


def test_output_path_under_a_file_stops_before_any_model_call(tmp_path, fake):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    argv = lm_eval_argv(fake.url, write_bank(tmp_path / "bank"), blocker / "out")
    line = _run_expecting_one_line(tmp_path, fake, argv)
    assert "--output_path" in line and "is a file" in line, line


@contextlib.contextmanager
def _unwritable_folder(parent: Path):
    """A folder nobody may write to, root included: for a normal user a folder without write
    permission; for root (whom permissions do not stop) a read-only tmpfs mount. Skips only where
    neither can be made (root without the right to mount, e.g. an unprivileged container)."""
    locked = parent / "locked"
    locked.mkdir()
    if os.geteuid() != 0:
        locked.chmod(0o500)
        try:
            yield locked
        finally:
            locked.chmod(0o700)
        return
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(locked)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"root cannot mount a read-only tmpfs here ({mounted.stderr.strip() or mounted.returncode}): "
                    "no folder is unwritable for root")
    try:
        yield locked
    finally:
        subprocess.run(["umount", str(locked)], capture_output=True)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions and mounts")
def test_unwritable_output_path_stops_before_any_model_call(tmp_path, fake):
    with _unwritable_folder(tmp_path) as locked:
        with pytest.raises(OSError):  # the folder really takes no file, for this user too
            (locked / "probe").write_text("x")
        argv = lm_eval_argv(fake.url, write_bank(tmp_path / "bank"), locked / "out")
        line = _run_expecting_one_line(tmp_path, fake, argv)
        assert "not writable" in line and str(locked) in line, line
        assert not any(locked.iterdir())


@pytest.mark.skipif(sys.platform != "linux", reason="needs Linux's /proc")
def test_output_path_that_only_looks_writable_stops_before_any_model_call(tmp_path, fake):
    # root: /proc passes os.access(W_OK) but takes no file; anyone else: /proc is not writable either
    argv = lm_eval_argv(fake.url, write_bank(tmp_path / "bank"), Path("/proc/edufair-out"))
    line = _run_expecting_one_line(tmp_path, fake, argv)
    assert "--output_path /proc/edufair-out" in line and "not writable" in line, line


def test_more_bad_inputs_are_one_line(tmp_path, fake):
    bank = write_bank(tmp_path / "bank")
    # edufair.levels: [] is an error, not "all levels"
    line = _run_expecting_one_line(tmp_path, fake, lm_eval_argv(fake.url, bank, tmp_path / "o1", extra={"levels": []}))
    assert "levels is empty" in line, line
    # a bank file that is not UTF-8 names the file and line
    bad = write_bank(tmp_path / "bank-latin1")
    (bad / "physics.jsonl").write_bytes('{"id": "q1", "question": "Qu\u00e9?"}\n'.encode("latin-1"))
    line = _run_expecting_one_line(tmp_path, fake, lm_eval_argv(fake.url, bad, tmp_path / "o2"))
    assert "physics.jsonl:1" in line and "UTF-8" in line, line
    # a cache folder that cannot be created
    blocker = tmp_path / "cache-file"
    blocker.write_text("x")
    line = _run_expecting_one_line(tmp_path, fake, lm_eval_argv(fake.url, bank, tmp_path / "o3"),
                                   env=cli_env(blocker / "sub"))
    assert "cache" in line and str(blocker) in line, line
    # malformed JSON names line and column
    broken = write_bank(tmp_path / "bank-json")
    (broken / "physics.jsonl").write_text('{"id": "q1", "question": }\n')
    line = _run_expecting_one_line(tmp_path, fake, lm_eval_argv(fake.url, broken, tmp_path / "o4"))
    assert "physics.jsonl:1:26:" in line and "malformed JSON" in line, line  # file:line:column


def test_a_near_miss_of_edufair_in_metadata_is_one_line(tmp_path, fake):
    """`{"edufiar": {...}}` used to be ignored: the run then went to the default student endpoint."""
    bank = write_bank(tmp_path / "bank", n=1)
    argv = lm_eval_argv(fake.url, bank, tmp_path / "out")
    meta = json.loads(argv[-1])
    meta["edufiar"] = {"max_tutor_turns": 2}
    argv[-1] = json.dumps(meta)
    line = _run_expecting_one_line(tmp_path, fake, argv)
    assert "unknown key 'edufiar'" in line and "did you mean 'edufair'?" in line, line


def test_a_misspelt_task_name_gets_the_closest(capsys):
    """lm-eval answers a misspelt --tasks name with a traceback; `edufair tasks NAME` names the
    closest EduFair task (README, When things go wrong)."""
    from edufair_metrics.cli import main

    assert main(["tasks", "edufair_explicit_phsics"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "did you mean 'edufair_explicit_physics'" in err[0]
    assert main(["tasks", "edufair_physics"]) == 0 and "tag of edufair_explicit_physics" in capsys.readouterr().out
    assert main(["tasks"]) == 0
    listed = capsys.readouterr().out
    assert all(f"edufair_{c}_{d}" in listed for c in ("explicit", "implicit", "opposite") for d in ("math", "physics", "chemistry"))
