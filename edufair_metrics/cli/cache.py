"""``edufair cache``: show (or clear) the persistent call cache.

Location: ``--path``, else ``edufair-calls.sqlite`` in ``$EDUFAIR_CACHE_DIR``, else in
``$XDG_CACHE_HOME/edufair``, else in ``~/.cache/edufair`` (the same default as every run, never
relative to the current directory). The first line of the output names the file read and why.
``--check`` says whether the file is a valid cache (exit 1 if not); ``--repair`` moves a damaged file
aside (``<name>.damaged-<time>``, never deleted) and writes a new cache holding every entry that
still reads.
"""

from __future__ import annotations

import argparse
import datetime as _dt

from edufair_metrics.cache import CallCache, check_cache_file, default_cache_source, repair_cache_file
from edufair_metrics.errors import EduFairError
from edufair_metrics.settings import load_cache_policy


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--path", help="cache file (default: edufair-calls.sqlite in $EDUFAIR_CACHE_DIR, else "
                                       "$XDG_CACHE_HOME/edufair, else ~/.cache/edufair)")
    parser.add_argument("--clear", metavar="NAMESPACE", help="delete the entries of one namespace (judge, student, tutor, ...) or 'all'")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="check that the file is a valid cache (read only; exit 1 if not)")
    mode.add_argument("--repair", action="store_true",
                      help="move a damaged cache file aside (kept as <name>.damaged-<time>) and write a new one "
                           "holding every entry that still reads")


def _fmt_time(ts) -> str:
    return "-" if ts is None else _dt.datetime.fromtimestamp(ts).isoformat(timespec="seconds")


def main(args: argparse.Namespace) -> int:
    path = load_cache_policy({"path": args.path} if args.path else None).location
    why = "from --path" if args.path else f"default: {default_cache_source()}"
    if (args.check or args.repair) and args.clear:
        raise EduFairError("--clear cannot be combined with --check or --repair")
    if args.check or args.repair:
        if not path.exists():
            raise EduFairError(f"{path}: no cache file ({why})")
        ok, line = check_cache_file(path)
        print(f"cache: {path} ({why})")
        if args.check or ok:
            print(line if ok else f"{line}: run `edufair cache --repair{' --path ' + str(path) if args.path else ''}` "
                  "to move it aside and keep the entries that still read")
            if args.repair:
                print("nothing to repair")
            return 0 if ok else 1
        aside, kept, lost = repair_cache_file(path)
        print(f"{line}: moved aside to {aside}; a new cache holds the {kept} entr{'y' if kept == 1 else 'ies'} that "
              f"still read{f' ({lost} lost)' if lost else ''}")
        return 0
    if not path.exists() and not args.clear:
        print(f"cache: {path} ({why})")
        print("entries: 0 (no cache file yet)")
        return 0
    if not path.exists():
        raise EduFairError(f"{path}: no cache file to clear")
    with CallCache(path) as cache:  # a damaged file: one line naming it and --repair
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
