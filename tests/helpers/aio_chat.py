"""A fast OpenAI-compatible chat server in its own process (aiohttp), for the benchmarks: its own
process so that serving takes no CPU (GIL) from the client being measured, as with a real server.
(``fake_openai.py``'s stdlib server is too slow for timing: a listen backlog of 5 and Nagle's
algorithm add up to seconds per call.)

``reply(body) -> (status, text_or_error)`` is a module-level function (the process is spawned, so
it travels by reference); each request waits ``latency_s`` under a semaphore of ``concurrency``
slots (a server that works on that many requests at a time) before it is answered.

It also answers vLLM's two ways of turning a chat request into prompt tokens, at once and
outside the slots: ``POST /v1/chat/completions/render`` (``{"token_ids": [...]}``) and
``POST /tokenize`` (``{"count", "max_model_len", "tokens"}``), both by :func:`chat_tokens`. A
cache-aware router (vllm-router 0.1.17's ``cache_aware``) asks a replica for them on every chat
request to key its prefix tree on tokens (``/tokenize`` only for a plain request: one with
``response_format`` or ``reasoning_effort``, like EduFair's judge, needs ``/render``); without
them it has no tokens and routes the request by load alone."""

from __future__ import annotations

import asyncio
from typing import Any, Callable

Reply = Callable[[dict[str, Any]], tuple[int, str]]


def chat_tokens(messages: list[dict[str, Any]], add_generation_prompt: bool = True) -> list[int]:
    """A stand-in tokenizer with the one property prefix caching relies on: a conversation's
    tokens begin with the tokens of every earlier state of it (each message is a role token,
    one token per word, an end token; then the assistant's role token for the reply)."""
    import zlib

    def tok(piece: str) -> int:
        return zlib.crc32(piece.encode()) % 50021  # a vocabulary-sized id

    out: list[int] = []
    for m in messages:
        content = m.get("content")
        if not isinstance(content, str):
            content = str(content)
        out.append(tok(f"<|{m.get('role')}|>"))
        out.extend(tok(w) for w in content.split())
        out.append(tok("<|end|>"))
    if add_generation_prompt:
        out.append(tok("<|assistant|>"))
    return out


def completion(text: str, model: str | None, usage: dict[str, int] | None = None) -> dict[str, Any]:
    """A chat completion response with one choice."""
    out: dict[str, Any] = {"id": "x", "object": "chat.completion", "created": 0, "model": model,
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": text}}]}
    if usage is not None:
        out["usage"] = usage
    return out


def serve(reply: Reply, port_out, latency_s: float = 0.0, concurrency: int = 1 << 16, backlog: int = 1024,
          client_max_size: int = 1024 ** 2, usage: dict[str, int] | None = None, port: int = 0,
          log_path: str | None = None, name: str = "", tokenize: bool = True) -> None:
    """Run the server until killed; sends the port it listens on through ``port_out``.
    ``tokenize=False``: neither ``/tokenize`` nor ``/render`` (a server without vLLM's extra endpoints)."""
    import json

    from aiohttp import web

    log = open(log_path, "a", encoding="utf-8") if log_path else None  # noqa: SIM115 - lives as long as the server

    async def main() -> None:
        slots = asyncio.Semaphore(concurrency)

        async def chat(request: web.Request) -> web.Response:
            body = await request.json()
            if latency_s:
                async with slots:
                    await asyncio.sleep(latency_s)
            status, text = reply(body)
            if log is not None and status == 200:
                log.write(json.dumps({"replica": name, "session": request.headers.get("X-Session-ID"),
                                      "messages": body.get("messages"), "max_tokens": body.get("max_tokens")}) + "\n")
                log.flush()
            if status != 200:
                return web.json_response({"error": {"message": text}}, status=status)
            return web.json_response(completion(text, body.get("model"), usage))

        async def tokenize_chat(request: web.Request) -> web.Response:
            body = await request.json()
            if "messages" in body:
                tokens = chat_tokens(body["messages"], body.get("add_generation_prompt", True))
            else:
                tokens = chat_tokens([{"role": "user", "content": body.get("prompt", "")}], False)
            return web.json_response({"count": len(tokens), "max_model_len": 1 << 20, "tokens": tokens,
                                      "token_strs": None})

        async def render_chat(request: web.Request) -> web.Response:
            body = await request.json()
            return web.json_response({"token_ids": chat_tokens(body.get("messages") or [])})

        app = web.Application(client_max_size=client_max_size)
        app.router.add_post("/v1/chat/completions", chat)
        if tokenize:
            app.router.add_post("/tokenize", tokenize_chat)
            app.router.add_post("/v1/chat/completions/render", render_chat)
        async def health(_request: web.Request) -> web.Response:
            return web.Response(text="ok")

        app.router.add_get("/health", health)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", port, backlog=backlog)
        await site.start()
        port_out.send(site._server.sockets[0].getsockname()[1])
        await asyncio.Event().wait()

    asyncio.run(main())


class ChatServer:
    """``with ChatServer(reply, latency_s=..., concurrency=...) as port:`` the server of
    :func:`serve` in a spawned process, stopped on exit."""

    def __init__(self, reply: Reply, **options: Any) -> None:
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")
        self.port_in, port_out = ctx.Pipe(duplex=False)
        self.process = ctx.Process(target=serve, args=(reply, port_out), kwargs=options, daemon=True)
        self.port = 0

    def start(self) -> int:
        """Start the process; returns the port it listens on."""
        self.process.start()
        if not self.port_in.poll(60):
            raise RuntimeError("the chat server did not start")
        self.port = self.port_in.recv()
        return self.port

    def stop(self) -> None:
        self.process.terminate()
        self.process.join(timeout=10)

    def __enter__(self) -> int:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
