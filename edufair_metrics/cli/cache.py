"""``edufair cache``: show (or clear) the persistent call cache.

Location: ``--path``, else ``$EDUFAIR_CACHE_DIR/edufair-calls.sqlite``, else
``results/cache/edufair-calls.sqlite`` under the current directory.
"""

from __future__ import annotations

import argparse
import datetime as _dt

from edufair_metrics.errors import EduFairError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--path", help="cache file (default: $EDUFAIR_CACHE_DIR or results/cache/edufair-calls.sqlite)")
    parser.add_argument("--clear", metavar="NAMESPACE", help="delete the entries of one namespace (judge, student, tutor, ...) or 'all'")


def _fmt_time(ts) -> str:
    return "-" if ts is None else _dt.datetime.fromtimestamp(ts).isoformat(timespec="seconds")


def main(args: argparse.Namespace) -> int:
    from edufair_metrics.cache import CachePolicy, CallCache

    path = CachePolicy.from_settings({"path": args.path} if args.path else None).location
    if not path.exists() and not args.clear:
        print(f"cache: {path} (policy: $EDUFAIR_CACHE_DIR or ./results/cache)")
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
    print(f"cache: {st['path']} (policy: $EDUFAIR_CACHE_DIR or ./results/cache)")
    print(f"entries: {st['entries']}  size: {st['size_bytes'] / 1024:.1f} KiB  oldest: {_fmt_time(st['oldest'])}  newest: {_fmt_time(st['newest'])}")
    for ns, n in st["namespaces"].items():
        print(f"  {ns or '(none)'}: {n}")
    return 0
