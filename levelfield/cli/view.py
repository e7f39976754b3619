"""``levelfield view``: browse, filter and diff the runs under some folders in a local web app."""

from __future__ import annotations

import argparse
import os
from typing import Any

from .arguments import UsageError, port

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    """The ``view`` command and its options."""
    view = sub.add_parser("view", help="browse, filter and diff every run under some folders in a local web app")
    view.add_argument("directories", nargs="*", default=["."], metavar="DIR",
                      help="folders to find run records in (runs.jsonl of eval/compare --out, saved-prediction "
                           "score tables), searched below too (default: the current folder)")
    view.add_argument("--host", default="127.0.0.1",
                      help="interface to listen on (default 127.0.0.1: this machine only; a wider one warns)")
    view.add_argument("--port", type=port, default=0, help="port to listen on (default 0: a free one, printed)")
    view.add_argument("--auth-token", metavar="TOKEN", default=os.environ.get("LEVELFIELD_VIEW_TOKEN") or None,
                      help="require this token (Authorization: Bearer TOKEN, or ?token=TOKEN once, which sets a "
                           "cookie); for --host other than 127.0.0.1 (default: $LEVELFIELD_VIEW_TOKEN)")
    view.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``view``: serve the run browser until Ctrl-C."""
    from ..view import serve

    try:
        serve(args.directories, host=args.host, port=args.port, token=args.auth_token)
    except OSError as exc:
        raise UsageError(str(exc)) from None
    except KeyboardInterrupt:
        pass
    return 0
