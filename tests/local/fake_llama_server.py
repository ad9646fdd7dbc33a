"""A stand-in for ``python -m llama_cpp.server`` that answers like it and then dies.

It serves ``GET /v1/models`` and ``POST /v1/chat/completions`` on 127.0.0.1 and kills itself with
SIGSEGV when chat completion number ``--die-on`` arrives (1 = the first one, as a native llama.cpp
build on an AMX CPU does; 0 = never). Used to test that a dying local server is reported as one
line, at start-up and in the middle of a run.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
from http.server import BaseHTTPRequestHandler, HTTPServer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--die-on", type=int, default=0)
    parser.add_argument("--model", default="fake-model")
    args = parser.parse_args()
    chats = 0

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):  # quiet
            pass

        def _send(self, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):  # noqa: N802
            self._send({"object": "list", "data": [{"id": args.model, "object": "model"}]})

        def do_POST(self):  # noqa: N802
            nonlocal chats
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            chats += 1
            if args.die_on and chats >= args.die_on:
                os.kill(os.getpid(), signal.SIGSEGV)
            self._send({
                "id": f"chatcmpl-{chats}", "object": "chat.completion", "model": args.model,
                "choices": [{"index": 0, "finish_reason": "length", "message": {"role": "assistant", "content": "Yes"}}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
            })

    print(f"fake llama server on 127.0.0.1:{args.port}", flush=True)
    HTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
