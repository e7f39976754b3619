"""``levelfield limits``: the rate limits learned per endpoint in earlier runs, and ``--forget`` to drop them.

An evaluation that met an endpoint's capacity (HTTP 429 for the calls in flight) keeps the limit it ran at in
levelfield's cache folder (``$LEVELFIELD_CACHE_DIR``, else ``.levelfield-cache``), and the next run's adaptive
limit of that endpoint starts there (see ``levelfield._core.run.learned``); so does one that carried its whole
concurrency with no 429 (listed as "carried"). Exit 0.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    limits = sub.add_parser("limits", help="list the rate limits learned per endpoint, or forget them")
    limits.add_argument("--forget", nargs="?", const="", default=None, metavar="ENDPOINT",
                        help="forget the limit learned for ENDPOINT (as listed), or every one when none is named; the "
                             "next run starts that endpoint at half its concurrency")
    limits.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from .._core.run import learned

    if args.forget is not None:
        gone = learned.forget(args.forget or None)
        if args.forget and not gone:
            print(f"no limit learned for {args.forget!r} in {learned.path()}")
        for endpoint in gone:
            print(f"forgot {endpoint}")
        return 0
    entries = learned.learned()
    if not entries:
        print(f"no limit learned ({learned.path()})")
        return 0
    print(f"limits learned ({learned.path()}):")
    for endpoint, entry in sorted(entries.items()):
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.get("at", 0)))
        if entry.get("carried"):
            print(f"  {endpoint}: carried {entry['limit']} in flight with no call refused ({when}); starts there")
            continue
        print(f"  {endpoint}: {entry['limit']} in flight (of {entry.get('ceiling', '?')}; "
              f"{entry.get('refused', '?')} refused, {when})")
    return 0
