"""A real router (``vllm-router``, the ``router`` extra) in front of several fake replicas
(``aio_chat.ChatServer`` processes that log which requests they serve), all on loopback, for the
router test and the scaling benchmark; and the measure of how well a run's requests kept to the
replica that served their previous turn.

Only loopback addresses are used: the router and its metrics listen on 127.0.0.1, the replicas too."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable

from tests.helpers.aio_chat import ChatServer
from tests.helpers.edufair_cli import role_of_system


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Replicas:
    """``n`` fake replicas of one model; each appends the requests it serves to ``log_dir/<name>.jsonl``."""

    def __init__(self, reply, n: int, log_dir: Path, **options: Any) -> None:
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir = log_dir
        self.servers = {f"r{i}": ChatServer(reply, log_path=str(log_dir / f"r{i}.jsonl"), name=f"r{i}", **options)
                        for i in range(n)}
        self.ports: dict[str, int] = {}

    def start(self) -> list[str]:
        for name, server in self.servers.items():
            self.ports[name] = server.start()
        return self.urls

    @property
    def urls(self) -> list[str]:
        return [f"http://127.0.0.1:{port}" for port in self.ports.values()]

    def kill(self, name: str) -> None:
        proc = self.servers[name].process
        proc.kill()  # as a crashed server: no goodbye, connections reset
        proc.join(timeout=10)

    def stop(self) -> None:
        for server in self.servers.values():
            if server.process.is_alive():
                server.stop()

    def served(self) -> list[dict[str, Any]]:
        """Every request served (a JSON line each), over all replicas."""
        out = []
        for path in sorted(self.log_dir.glob("r*.jsonl")):
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    out.append(json.loads(line))
        return out

    def __enter__(self) -> "Replicas":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


class Router:
    """``vllm-router`` (its Python launcher, in its own process) routing to ``worker_urls`` with
    ``policy``; health checks every second, so that a dead replica leaves the rotation quickly."""

    def __init__(self, worker_urls: Iterable[str], policy: str, log: Path, *extra: str) -> None:
        self.port = free_port()
        self.argv = [sys.executable, "-m", "vllm_router.launch_router", "--host", "127.0.0.1", "--port", str(self.port),
                     "--worker-urls", *worker_urls, "--policy", policy,
                     "--prometheus-host", "127.0.0.1", "--prometheus-port", str(free_port()),
                     "--worker-startup-check-interval", "1", "--worker-startup-timeout-secs", "60",
                     "--health-check-interval-secs", "1", "--health-failure-threshold", "1",
                     "--log-level", "warning", *extra]
        self.log = log
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout: float = 90) -> str:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(self.argv, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"vllm-router exited ({self.proc.returncode}): {self.log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
                    if r.status == 200:
                        return self.url
            except OSError:
                pass
            time.sleep(0.3)
        raise RuntimeError(f"vllm-router did not come up in {timeout:.0f} s: {self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if getattr(self, "_log", None) is not None:
            self._log.close()

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


# ---- did each request reach the replica holding its previous turn? ------------------------------

def role_of(messages: list[dict[str, Any]]) -> str:
    return role_of_system(next((m.get("content") or "" for m in messages if m.get("role") == "system"), ""))


def _judge_history(messages: list[dict[str, Any]]) -> str:
    """A judge request's conversation: its user message up to the end of its last ``</turn>`` (the
    part the next turn's request repeats; the judged turn's index comes after it)."""
    user = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
    end = user.rfind("</turn>")
    return user[: end + len("</turn>")] if end >= 0 else user


def affinity(served: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    """Per role, (requests that reached a replica which had served their previous turn, requests
    that have a previous turn). A request's previous turn is the served request of the same role
    whose conversation is the longest proper prefix of its own (tutor and student: the message
    list; judge: the transcript block, turn by turn) -- the one whose prefix a replica would have
    cached. lm-eval's 1-token call per document is left out."""
    by_role: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in served:
        if s.get("max_tokens") == 1:
            continue
        by_role[role_of(s["messages"])].append(s)
    out: dict[str, tuple[int, int]] = {}
    for role, reqs in by_role.items():
        where: dict[str, set[str]] = defaultdict(set)
        keyed = []
        for s in reqs:
            if role == "judge":
                hist = _judge_history(s["messages"])
                cuts = [i + len("</turn>") for i in _find_all(hist, "</turn>")][:-1]
                keys = [hist] + [hist[:c] for c in reversed(cuts)]
            else:
                msgs = s["messages"]
                keys = [json.dumps(msgs[:k]) for k in range(len(msgs), 0, -1)]
            where[keys[0]].add(s["replica"])
            keyed.append((s["replica"], keys[1:]))
        hits = total = 0
        for replica, earlier in keyed:
            prev = next((where[k] for k in earlier if k in where), None)
            if prev is None:
                continue  # a dialogue's first request of this role
            total += 1
            hits += replica in prev
        out[role] = (hits, total)
    return out


def _find_all(text: str, sub: str) -> list[int]:
    out, i = [], text.find(sub)
    while i >= 0:
        out.append(i)
        i = text.find(sub, i + 1)
    return out
