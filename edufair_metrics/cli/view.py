"""``edufair view``: open a report's HTML view (the verdict grid and the twin transcripts behind it).

    edufair view REPORT_DIR            serve an ``edufair report`` folder on a free loopback port
    edufair view RUN [RUN ...]         write the report of runs first (into --out, default
                                       <first RUN>/edufair-report/) when it has no index.html yet
    edufair view ... --no-serve        only print the path of index.html (it also works from file://)
    edufair view RUN --label           label mode: the run's labelling sample (`edufair label-sample`),
                                       one tutor turn at a time, answers appended to
                                       RUN/edufair-labels/labels.jsonl (put --label after RUN)

The server listens on 127.0.0.1 only, prints the address and serves until Ctrl-C (exit 130).
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import sys
import threading
from pathlib import Path

from edufair_metrics.cli._common import add_stat_args, stat_params
from edufair_metrics.cli.report import make_report
from edufair_metrics.errors import EduFairError
from edufair_metrics.report.html import INDEX
from edufair_metrics.runlog import run_inputs

REPORT_MARKERS = (INDEX, "report_manifest.json")
LABEL_MODE = "\0label"  # --label without a value
MAX_POST = 1 << 16
DEFAULT_REPORT = "edufair-report"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("inputs", nargs="+", metavar="RUN_OR_REPORT",
                        help="an `edufair report` folder, or lm-eval --output_path folder(s) / model folder(s) / results JSON")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"where to write the report of runs (default <first RUN>/{DEFAULT_REPORT}/)")
    parser.add_argument("--rebuild", action="store_true", help="write the report of runs again even if it exists")
    parser.add_argument("--no-serve", action="store_true", help="only print the path of index.html")
    parser.add_argument("--port", type=int, default=0, help="loopback port to serve on (default: a free one)")
    parser.add_argument("--open", action="store_true", help="also open the address in the default browser")
    parser.add_argument("--label", action="append", nargs="?", const=LABEL_MODE, default=[], metavar="NAME=DIR",
                        help="tutor name for a run folder; alone (after RUN): label mode, the run's labelling sample "
                             "(edufair label-sample) one tutor turn at a time, answers saved into the run folder")
    add_stat_args(parser)


def is_report(path: Path) -> bool:
    return path.is_dir() and any((path / m).is_file() for m in REPORT_MARKERS)


def report_folder(args: argparse.Namespace) -> Path:
    """The report to show: the folder given, or the report of the runs given (written when it has
    no index.html yet, or with --rebuild)."""
    for item in args.inputs:
        if not Path(item).expanduser().exists():
            raise EduFairError(f"no such file or directory: {item}")
    first = Path(args.inputs[0]).expanduser()
    if len(args.inputs) == 1 and is_report(first):
        if not (first / INDEX).is_file():
            raise EduFairError(f"{first}: this report has no {INDEX} (written by an older EduFair); run `edufair report` "
                               "on its runs again, or `edufair view RUN`")
        return first
    for item in args.inputs:
        if is_report(Path(item).expanduser()):
            raise EduFairError(f"{item} is a report folder: pass it alone, or pass run folders")
    out = args.out or (first.parent if first.is_file() else first) / DEFAULT_REPORT
    if (out / INDEX).is_file() and not args.rebuild:
        print(f"edufair view: using the existing report {out} (--rebuild writes it again)", file=sys.stderr)
        return out
    paths, labels = run_inputs(args.inputs, args.label)
    result = make_report(paths, out, stat_params(args), labels=labels,
                         command=["edufair", "view", *map(str, paths)])
    print(f"edufair view: wrote the report: {result.line()}", file=sys.stderr)
    return out


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the report folder; no line per request on the terminal."""

    def log_message(self, format, *args) -> None:  # noqa: A002 - the base class's signature
        pass

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")  # a rebuilt report is never shown stale
        super().end_headers()


def serve(folder: Path, port: int = 0) -> http.server.ThreadingHTTPServer:
    """A server for ``folder`` on 127.0.0.1 (``port`` 0: a free one), not yet serving."""
    handler = functools.partial(QuietHandler, directory=str(folder))
    try:
        return http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    except OSError as exc:
        raise EduFairError(f"cannot listen on 127.0.0.1:{port} ({exc.strerror or exc})") from exc


class LabelServer:
    """What the label mode's server answers: the page, the sample's masked items and the answers so
    far (``GET /api/sample``), and ``POST /api/label`` {"k": item position, "labels": {metric:
    yes|no|na}}, appended to the labels file (fsync'd) before the answer returns."""

    def __init__(self, run: str) -> None:
        from edufair_metrics.report.html.label import label_items, label_state, render_label_page
        from edufair_metrics.runlog import load_records
        from edufair_metrics.runlog.labels import (LABELS_FILE, labels_folder, read_labels, read_sample, run_folder,
                                                   run_identity)

        folder = run_folder(run)
        self.tutor, records = load_records(run)
        self.sample = read_sample(labels_folder(folder))
        rid = run_identity(records)
        if self.sample.run_id != rid:
            raise EduFairError(f"the labelling sample in {labels_folder(folder)} is of another run (run id "
                               f"{self.sample.run_id}, this run is {rid}); draw a new one with `edufair label-sample`")
        self.labels_path = labels_folder(folder) / LABELS_FILE
        given = read_labels(self.labels_path, run_id=rid, sample=self.sample) if self.labels_path.is_file() else {}
        self.page = render_label_page(self.tutor).encode("utf-8")
        self.items = label_items(records, self.sample)
        self.answers = label_state(self.sample, given)
        self.lock = threading.Lock()

    def sample_json(self) -> bytes:
        with self.lock:
            return json.dumps({"items": self.items, "answers": self.answers}, ensure_ascii=False).encode("utf-8")

    def save(self, body: bytes) -> None:
        from edufair_metrics.runlog.labels import append_label

        try:
            obj = json.loads(body.decode("utf-8"))
            k, labels = int(obj["k"]), obj["labels"]
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            raise EduFairError('expected {"k": item, "labels": {metric: yes|no|na}}') from None
        if not 0 <= k < len(self.sample.items) or not isinstance(labels, dict):
            raise EduFairError(f"no item {obj.get('k')!r} in the sample")
        with self.lock:
            append_label(self.labels_path, self.sample.run_id, self.sample.items[k].turn_id, labels)
            self.answers[str(k)] = dict(labels)


def label_handler(state: LabelServer):
    class LabelHandler(http.server.BaseHTTPRequestHandler):
        def log_message(self, format, *args) -> None:  # noqa: A002 - the base class's signature
            pass

        def _send(self, code: int, body: bytes, ctype: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            path = self.path.split("?", 1)[0]
            if path in ("/", "/label.html"):
                self._send(200, state.page, "text/html; charset=utf-8")
            elif path == "/api/sample":
                self._send(200, state.sample_json(), "application/json")
            else:
                self._send(404, b"not found", "text/plain")

        def do_POST(self) -> None:  # noqa: N802
            if self.path.split("?", 1)[0] != "/api/label":
                self._send(404, b"not found", "text/plain")
                return
            size = int(self.headers.get("Content-Length") or 0)
            if size <= 0 or size > MAX_POST:
                self._send(413, b"body missing or too large", "text/plain")
                return
            try:
                state.save(self.rfile.read(size))
            except EduFairError as exc:
                self._send(400, str(exc).encode("utf-8"), "text/plain; charset=utf-8")
                return
            self._send(200, b"{}", "application/json")

    return LabelHandler


def serve_labels(args: argparse.Namespace, names: list[str]) -> int:
    if len(args.inputs) != 1 or names:
        raise EduFairError("label mode takes one run: edufair view RUN --label")
    if not Path(args.inputs[0]).expanduser().exists():
        raise EduFairError(f"no such file or directory: {args.inputs[0]}")
    state = LabelServer(args.inputs[0])
    try:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), label_handler(state))
    except OSError as exc:
        raise EduFairError(f"cannot listen on 127.0.0.1:{args.port} ({exc.strerror or exc})") from exc
    url = f"http://127.0.0.1:{server.server_address[1]}/label.html"
    done = sum(1 for a in state.answers.values() if len(a) >= 5)
    print(f"edufair view: labelling {len(state.sample.items)} tutor turns of {state.tutor} ({done} done) at {url}; "
          f"answers go to {state.labels_path} (Ctrl-C stops)", flush=True)
    return serve_until_stopped(server, url, args.open)


def serve_until_stopped(server, url: str, open_browser: bool) -> int:
    """Serve until Ctrl-C (exit 130), optionally opening ``url`` in a browser first."""
    if open_browser:
        import webbrowser

        webbrowser.open(url)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        print("edufair view: stopped", file=sys.stderr)
        return 130
    finally:
        server.server_close()
    return 0


def main(args: argparse.Namespace) -> int:
    names = [x for x in args.label if x != LABEL_MODE]
    if LABEL_MODE in args.label:
        return serve_labels(args, names)
    args.label = names
    folder = report_folder(args).resolve()
    index = folder / INDEX
    if args.no_serve:
        print(index)
        return 0
    server = serve(folder, args.port)
    url = f"http://127.0.0.1:{server.server_address[1]}/{INDEX}"
    print(f"edufair view: serving {folder} at {url} (Ctrl-C stops)", flush=True)
    return serve_until_stopped(server, url, args.open)
