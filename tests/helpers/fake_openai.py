"""A loopback OpenAI-compatible HTTP server for offline tests (judge, student, tutor).

Usage::

    with FakeOpenAI() as srv:                       # 127.0.0.1, free port, thread
        srv.enqueue(Reply('{"a": 1}'), HTTPError(500), Hang(5))   # consumed first, in order
        srv.responder = lambda req: Reply("hi")     # then this (a callable of FakeRequest)
        client = openai.OpenAI(base_url=srv.base_url, api_key="x", max_retries=0)

Endpoints: POST /v1/chat/completions (``choices[0].message.content``, optional
``reasoning_content``), POST /v1/completions (``choices[0].text``), GET /v1/models. The model
name of the request is echoed; ``usage`` is filled (word counts). Every request is recorded in
``srv.requests`` (path, headers, parsed body, messages) and counted in ``srv.calls``.

Behaviours (what a responder returns; a plain ``str`` means ``Reply(str)``):
    Reply(content, reasoning=None, finish_reason="stop", usage=None, status=200)
    HTTPError(status, message="...")          JSON error body with that status (429, 500, ...)
    Hang(seconds)                             sleep before answering (longer than client timeout)
    EmptyBody(status=200)                     200 with Content-Length 0
    Raw(body: bytes, status=200, content_type="application/json")   e.g. truncated JSON
    Drop()                                    close the connection without any response
"""

from __future__ import annotations

import json
import queue
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


@dataclass
class Reply:
    content: str | None
    reasoning: str | None = None
    finish_reason: str = "stop"
    usage: dict[str, int] | None = None
    status: int = 200


@dataclass
class HTTPError:
    status: int
    message: str = "fake server error"


@dataclass
class Hang:
    seconds: float
    then: Any = None  # behaviour after the sleep (default: Reply("{}"))


@dataclass
class EmptyBody:
    status: int = 200


@dataclass
class Raw:
    body: bytes
    status: int = 200
    content_type: str = "application/json"


@dataclass
class Drop:
    pass


@dataclass
class FakeRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    raw_body: bytes = b""
    index: int = 0  # 0-based arrival order

    @property
    def messages(self) -> list[dict[str, Any]]:
        return (self.body or {}).get("messages") or []

    @property
    def model(self) -> str | None:
        return (self.body or {}).get("model")

    def content(self, role: str) -> str | None:
        """Content of the first message with ``role``."""
        for m in self.messages:
            if m.get("role") == role:
                return m.get("content")
        return None


class FakeOpenAI:
    def __init__(self, responder: Callable[[FakeRequest], Any] | None = None, default: Any = "OK"):
        self.responder = responder
        self.default = default
        self.requests: list[FakeRequest] = []
        self._queue: "queue.Queue[Any]" = queue.Queue()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- control -------------------------------------------------------------------------------
    def enqueue(self, *behaviours: Any) -> "FakeOpenAI":
        for b in behaviours:
            self._queue.put(b)
        return self

    @property
    def calls(self) -> int:
        """Number of completion requests received (GET /v1/models not counted)."""
        with self._lock:
            return sum(1 for r in self.requests if r.method == "POST")

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
        while not self._queue.empty():
            self._queue.get_nowait()

    @property
    def port(self) -> int:
        assert self._server is not None
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "FakeOpenAI":
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # silence
                pass

            def do_GET(self):
                req = fake._record("GET", self, b"")
                if self.path.rstrip("/").endswith("/models"):
                    self._json(200, {"object": "list", "data": [{"id": "fake-model", "object": "model", "owned_by": "fake"}]})
                else:
                    self._json(404, {"error": {"message": f"no route {req.path}"}})

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                req = fake._record("POST", self, raw)
                behaviour = fake._next(req)
                fake._serve(self, req, behaviour)

            def _json(self, status: int, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> "FakeOpenAI":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- internals -----------------------------------------------------------------------------
    def _record(self, method: str, handler: BaseHTTPRequestHandler, raw: bytes) -> FakeRequest:
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = None
        with self._lock:
            req = FakeRequest(method, handler.path, {k.lower(): v for k, v in handler.headers.items()}, body, raw, len(self.requests))
            self.requests.append(req)
        return req

    def _next(self, req: FakeRequest) -> Any:
        try:
            return self._queue.get_nowait()
        except queue.Empty:
            pass
        if self.responder is not None:
            return self.responder(req)
        return self.default

    def _serve(self, h: BaseHTTPRequestHandler, req: FakeRequest, b: Any) -> None:
        if isinstance(b, str) or b is None:
            b = Reply(b)
        if isinstance(b, Hang):
            self._stop.wait(b.seconds)
            b = b.then if b.then is not None else Reply("{}")
            if isinstance(b, str):
                b = Reply(b)
        try:
            if isinstance(b, Drop):
                h.close_connection = True
                try:
                    import socket

                    h.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                return
            if isinstance(b, EmptyBody):
                h.send_response(b.status)
                h.send_header("Content-Type", "application/json")
                h.send_header("Content-Length", "0")
                h.end_headers()
                return
            if isinstance(b, Raw):
                h.send_response(b.status)
                h.send_header("Content-Type", b.content_type)
                h.send_header("Content-Length", str(len(b.body)))
                h.end_headers()
                h.wfile.write(b.body)
                return
            if isinstance(b, HTTPError):
                data = json.dumps({"error": {"message": b.message, "type": "fake_error", "code": b.status}}).encode()
                h.send_response(b.status)
                h.send_header("Content-Type", "application/json")
                h.send_header("Content-Length", str(len(data)))
                if b.status == 429:
                    h.send_header("Retry-After", "0")
                h.end_headers()
                h.wfile.write(data)
                return
            if isinstance(b, Reply):
                data = json.dumps(self._completion(req, b)).encode()
                h.send_response(b.status)
                h.send_header("Content-Type", "application/json")
                h.send_header("Content-Length", str(len(data)))
                h.end_headers()
                h.wfile.write(data)
                return
            raise TypeError(f"unknown fake behaviour {b!r}")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout)

    @staticmethod
    def _completion(req: FakeRequest, b: Reply) -> dict[str, Any]:
        body = req.body or {}
        prompt_words = sum(len(str(m.get("content") or "").split()) for m in req.messages) or len(str(body.get("prompt") or "").split())
        completion_words = len((b.content or "").split())
        usage = b.usage or {"prompt_tokens": prompt_words, "completion_tokens": completion_words, "total_tokens": prompt_words + completion_words}
        common = {"id": f"fake-{req.index}", "created": int(time.time()), "model": body.get("model") or "fake-model", "usage": usage}
        if req.path.rstrip("/").endswith("/completions") and not req.path.rstrip("/").endswith("/chat/completions"):
            return {**common, "object": "text_completion", "choices": [{"index": 0, "text": b.content or "", "finish_reason": b.finish_reason, "logprobs": None}]}
        message: dict[str, Any] = {"role": "assistant", "content": b.content}
        if b.reasoning is not None:
            message["reasoning_content"] = b.reasoning
        return {**common, "object": "chat.completion", "choices": [{"index": 0, "message": message, "finish_reason": b.finish_reason}]}


def labels_json(mistake: bool = True, tone: int = 1, recog: int = 1, leak: int = 0, scaffold: int = 1, action: int = 1) -> str:
    """A valid EduFair judge answer (convenience for judge tests)."""
    return json.dumps(
        {
            "student_mistake_prev_turn": mistake,
            "correction_tone": tone,
            "mistake_recognize": recog,
            "answer_leakage": leak,
            "scaffolding_guidance": scaffold,
            "actionability": action,
        }
    )
