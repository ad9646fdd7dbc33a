"""``edufair view``: open a report's HTML view (the verdict grid and the twin transcripts behind it).

    edufair view REPORT_DIR            serve an ``edufair report`` folder on a free loopback port
    edufair view RUN [RUN ...]         write the report of runs first (into --out, default
                                       <first RUN>/edufair-report/) when it has no index.html yet
    edufair view ... --no-serve        only print the path of index.html (it also works from file://)

The server listens on 127.0.0.1 only, prints the address and serves until Ctrl-C (exit 130).
"""

from __future__ import annotations

import argparse
import functools
import http.server
import sys
from pathlib import Path

from edufair_metrics.cli._common import add_stat_args, stat_params
from edufair_metrics.cli.report import make_report
from edufair_metrics.errors import EduFairError
from edufair_metrics.report.html import INDEX
from edufair_metrics.runlog import run_inputs

REPORT_MARKERS = (INDEX, "report_manifest.json")
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
    parser.add_argument("--label", action="append", default=[], metavar="NAME=DIR", help="tutor name for a run folder")
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


def main(args: argparse.Namespace) -> int:
    folder = report_folder(args).resolve()
    index = folder / INDEX
    if args.no_serve:
        print(index)
        return 0
    server = serve(folder, args.port)
    url = f"http://127.0.0.1:{server.server_address[1]}/{INDEX}"
    print(f"edufair view: serving {folder} at {url} (Ctrl-C stops)", flush=True)
    if args.open:
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
