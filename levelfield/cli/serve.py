"""``levelfield serve SPEC``: serve any agent levelfield can wrap over A2A (the A2A adapter's server)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from .._core.data.config import ISOLATION_MODES, parse_size
from .._core.errors import ConfigError, MissingExtraError
from ..adapters.a2a.server import MAX_BODY, TOKEN_ENV  # light: a2a-sdk loads only when serving
from .arguments import http_url, port

__all__ = ["add_parser", "run"]


def _body_size(text: str) -> int:
    try:
        return parse_size(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """The ``serve`` command and its options: ``SPEC [--host] [--port] [--name] [--url] [--max-body]
    [--auth-token] [--isolation]``."""
    parser = sub.add_parser(
        "serve",
        help="serve an agent over A2A (agent card, JSON-RPC and REST, streaming)",
        description="Serve any agent levelfield can wrap over A2A, so A2AAgent or any A2A client can call it.",
    )
    parser.add_argument("spec", metavar="SPEC", help="the agent: module:attr (e.g. mypkg.agents:agent)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="interface to listen on (default 127.0.0.1, this machine only; another address "
                             "is warned about: use --auth-token there)")
    parser.add_argument("--port", type=port, default=9999, help="port to listen on (default 9999)")
    parser.add_argument("--name", default=None, help="the agent's name on its card (default: the agent's own)")
    parser.add_argument("--url", type=http_url, default=None, help="the URL the card advertises (default http://HOST:PORT; 127.0.0.1 for --host 0.0.0.0)")
    parser.add_argument("--max-body", type=_body_size, default=MAX_BODY, metavar="SIZE",
                        help=f"the largest request body read, e.g. 1MB; larger ones get HTTP 413 (default {MAX_BODY >> 20}MB)")
    parser.add_argument("--auth-token", default=None, metavar="TOKEN",
                        help=f"require 'Authorization: Bearer TOKEN' on every call but the card's (HTTP 401 otherwise); "
                             f"default: the {TOKEN_ENV} environment variable, which keeps the token out of the process list")
    parser.add_argument("--isolation", choices=ISOLATION_MODES, default="none",
                        help="'process': run the agent in worker processes, so a crash (os._exit, a segfault) fails "
                             "that task only, not the server (default none)")
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """Run ``serve``: the agent of ``SPEC`` over A2A until Ctrl-C; 2 for a spec or option that cannot
    be used, 1 when the port cannot be had."""
    from ..adapters.a2a.server import serve
    from ..adapters.spec import AgentSpecError, agent_from_spec

    token = args.auth_token if args.auth_token is not None else os.environ.get(TOKEN_ENV) or None
    try:
        agent = agent_from_spec(args.spec, name=args.name, isolation=args.isolation)
    except (AgentSpecError, TypeError, MissingExtraError) as exc:
        print(f"levelfield serve: {exc}", file=sys.stderr)
        return 2
    try:
        serve(agent, host=args.host, port=args.port, name=args.name, url=args.url,
              max_body=args.max_body, auth_token=token, isolation=args.isolation)
    except ConfigError as exc:
        print(f"levelfield serve: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"levelfield serve: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0
