"""A local model server that dies is reported as one line, at start-up and in the middle of a run,
and nothing keeps retrying against its dead port. The server here is a fake process
(tests/local/fake_llama_server.py) that passes ``GET /v1/models`` and then dies with SIGSEGV on a
chosen chat completion, as a native llama.cpp build does on an AMX CPU."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import pytest

from edufair_metrics.local import demo as demo_module
from edufair_metrics.local import server as ls
from edufair_metrics.cli import main as cli

FAKE = Path(__file__).with_name("fake_llama_server.py")


class FakeLlamaServer(ls.LocalServer):
    needs_llama_cpp = False

    def __init__(self, model_path=None, *, die_on: int = 0, **kwargs):
        self.die_on = die_on
        kwargs.pop("n_threads", None)
        super().__init__(model_path, startup_timeout=30, **kwargs)

    def command(self, port: int) -> list[str]:
        return [sys.executable, str(FAKE), "--port", str(port), "--die-on", str(self.die_on), "--model", self.model]


@pytest.fixture
def gguf(tmp_path):
    path = tmp_path / "fake.gguf"
    path.write_bytes(b"GGUF")
    return path


def test_describe_exit():
    assert ls.describe_exit(-11) == "signal SIGSEGV"
    assert ls.describe_exit(-4) == "signal SIGILL"
    assert ls.describe_exit(3) == "exit code 3"


def test_healthy_fake_server_starts(gguf, tmp_path):
    with FakeLlamaServer(gguf, die_on=0, log_path=tmp_path / "s.log") as srv:
        assert srv.exit_status() is None
        assert srv.chat([{"role": "user", "content": "hi"}], max_tokens=1)["choices"][0]["message"]["content"] == "Yes"


def test_start_sends_a_real_chat_completion_and_reports_a_crash(gguf, tmp_path):
    """/v1/models answers, the first chat completion kills the server: start() fails in one line."""
    log = tmp_path / "server.log"
    srv = FakeLlamaServer(gguf, die_on=1, log_path=log)
    with pytest.raises(ls.ServerExited) as info:
        srv.start()
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith("the local model server exited (signal SIGSEGV) on its first chat completion; log: ")
    assert str(log) in msg and "Troubleshooting" in msg
    assert srv.process is None  # stopped, nothing left running


def test_run_while_serving_stops_the_client_when_the_server_dies(gguf, tmp_path):
    """The client (here a loop that would retry forever) is stopped at once when the server dies."""
    marker = tmp_path / "client-alive"
    client = [sys.executable, "-c",
              "import time, pathlib\n"
              f"p = pathlib.Path({str(marker)!r})\n"
              "while True:\n    p.write_text(str(time.time())); time.sleep(0.05)"]
    with FakeLlamaServer(gguf, die_on=2, log_path=tmp_path / "s.log") as srv:
        killer = srv.chat  # the second chat completion kills the server
        import threading

        threading.Timer(1.0, lambda: _ignore_errors(killer, [{"role": "user", "content": "die"}])).start()
        t0 = time.monotonic()
        with pytest.raises(ls.ServerExited, match=r"^the local model server exited \(signal SIGSEGV\) during the run; log: "):
            ls.run_while_serving(client, srv, poll_s=0.05)
        assert time.monotonic() - t0 < 10
    stamp = marker.stat().st_mtime
    time.sleep(0.5)
    assert marker.stat().st_mtime == stamp  # the client process is gone


def _ignore_errors(fn, *args):
    try:
        fn(*args, timeout=5)
    except Exception:  # noqa: BLE001 - the server dies mid-request on purpose
        pass


@pytest.mark.slow
def test_demo_reports_a_server_that_dies_mid_run_as_one_line(gguf, tmp_path, monkeypatch, capfd):
    """`edufair demo` with a server that passes the start-up check and dies on the student's first
    call: exit non-zero, one error line naming the signal and the log, no retry storm."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(demo_module, "LocalServer",
                        lambda model_file, **kw: FakeLlamaServer(gguf, die_on=2, **kw))
    out = tmp_path / "demo"
    t0 = time.monotonic()
    rc = cli(["demo", "--questions", "1", "--levels", "female,male", "--max-tutor-turns", "1", "--out", str(out)])
    elapsed = time.monotonic() - t0
    captured = capfd.readouterr()
    assert rc != 0
    errors = [line for line in captured.err.splitlines() if line.startswith("edufair demo: error:")]
    assert len(errors) == 1, captured.err[-3000:]
    assert re.match(r"edufair demo: error: the local model server exited \(signal SIGSEGV\) during the run; log: .*llama-server\.log",
                    errors[0]), errors[0]
    assert (out / "llama-server.log").is_file()
    assert "Connection refused" not in captured.err and "ClientConnectorError" not in captured.err
    assert elapsed < 120
    assert not (out / "report").exists()
