"""``edufair cache``: show (or clear) the persistent call cache.

Location: ``--path``, else ``edufair-calls.sqlite`` in ``$EDUFAIR_CACHE_DIR``, else in
``$XDG_CACHE_HOME/edufair``, else in ``~/.cache/edufair`` (the same default as every run, never
relative to the current directory). The first line of the output names the file read and why.
"""

from __future__ import annotations

import argparse
import datetime as _dt

from edufair_metrics.cache import CallCache, default_cache_source
from edufair_metrics.errors import EduFairError
from edufair_metrics.settings import load_cache_policy


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--path", help="cache file (default: edufair-calls.sqlite in $EDUFAIR_CACHE_DIR, else "
                                       "$XDG_CACHE_HOME/edufair, else ~/.cache/edufair)")
    parser.add_argument("--clear", metavar="NAMESPACE", help="delete the entries of one namespace (judge, student, tutor, ...) or 'all'")


def _fmt_time(ts) -> str:
    return "-" if ts is None else _dt.datetime.fromtimestamp(ts).isoformat(timespec="seconds")


def main(args: argparse.Namespace) -> int:
    path = load_cache_policy({"path": args.path} if args.path else None).location
    why = "from --path" if args.path else f"default: {default_cache_source()}"
    if not path.exists() and not args.clear:
        print(f"cache: {path} ({why})")
        print("entries: 0 (no cache file yet)")
        return 0
    if not path.exists():
        raise EduFairError(f"{path}: no cache file to clear")
    try:
        cache = CallCache(path)
    except Exception as exc:  # sqlite3.DatabaseError etc.
        raise EduFairError(f"{path}: not a readable EduFair cache ({exc})") from exc
    with cache:
        if args.clear:
            ns = None if args.clear == "all" else args.clear
            n = cache.clear(ns)
            print(f"cleared {n} entr{'y' if n == 1 else 'ies'} ({'all namespaces' if ns is None else 'namespace ' + ns})")
        st = cache.stats()
    print(f"cache: {st['path']} ({why})")
    print(f"entries: {st['entries']}  size: {st['size_bytes'] / 1024:.1f} KiB  oldest: {_fmt_time(st['oldest'])}  newest: {_fmt_time(st['newest'])}")
    for ns, n in st["namespaces"].items():
        print(f"  {ns or '(none)'}: {n}")
    return 0
