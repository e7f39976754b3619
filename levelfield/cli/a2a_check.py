"""``levelfield a2a-check URL``: does the agent at URL speak A2A? The preflight's table, and an exit code.

0 when no check fails, 1 when one does, 2 when the URL is unusable or unreachable (one line on stderr): a
host that answers HTTP but serves no agent card at either well-known path is unusable.
See :mod:`levelfield.adapters.a2a.preflight` for the checks.
"""

from __future__ import annotations

import json
from typing import Any

from ..adapters.a2a.checks import CARD_PATHS
from ..adapters.a2a.preflight import DEFAULT_PROMPT

__all__ = ["add_parser", "run"]


def _header(text: str) -> tuple[str, str]:
    import argparse

    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"{text.split(':')[0]!r}: expected 'Name: value', e.g. 'Authorization: Bearer TOKEN'")
    return name.strip(), value.strip()


def run(args: Any) -> int:
    import sys

    from .._core.errors import LevelfieldError
    from .._core.run import budget
    from ..adapters.a2a.agent import A2AAgent

    url = args.url
    if not url.startswith(("http://", "https://")):
        print(f"levelfield a2a-check: {url!r} is not an http(s):// URL; give the agent's base URL, e.g. "
              f"http://{url if '://' not in url else '127.0.0.1:9999'}", file=sys.stderr)
        return 2
    cap = budget.set_response_cap(args.max_response)
    try:
        # Through A2AAgent: its checks of the headers, and what a server echoes of a credential shown as ***.
        agent = A2AAgent(url, headers=dict(args.header or []), timeout=args.timeout, card_timeout=args.timeout)
        found = agent.preflight(args.prompt, timeout=args.timeout)
    except LevelfieldError as exc:  # the message names the URL without its credentials
        print(f"levelfield a2a-check: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    finally:
        budget.reset_response_cap(cap)
    fetched = found.check("card.fetch")
    if fetched is not None and fetched.status == "fail":
        # A host that answers HTTP without a card is no A2A agent: the URL is unusable, as the exit codes say.
        print(f"levelfield a2a-check: {found.url} answers HTTP but serves no agent card at {CARD_PATHS[0]} "
              f"(A2A 0.3 and 1.0) or {CARD_PATHS[1]} (older servers): {fetched.detail}; is it the agent's base URL?",
              file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(found.to_dict(), indent=2, ensure_ascii=False))
    else:
        print(found.table())
    return 0 if found.ok else 1


def add_parser(subparsers: Any) -> Any:
    """Add ``levelfield a2a-check URL [--header] [--prompt] [--timeout] [--max-response] [--json]`` to the CLI's subparsers."""
    from .._core.data.config import DEFAULT_MAX_RESPONSE_BYTES
    from .arguments import number, response_size

    parser = subparsers.add_parser(
        "a2a-check",
        help="check that a remote agent speaks A2A: its card, then probe messages (exit 1 when a check fails)",
        description="Read the agent card at URL and send a few probe messages over each JSON-RPC version it offers "
                    "(1.0, 0.3); print every check with pass/warn/fail/skip and the spec section it comes from. "
                    "Exit 0 when no check fails, 1 when one does, 2 when the URL is unusable or unreachable.",
    )
    parser.add_argument("url", metavar="URL", help="the agent's base URL (its card is at URL/.well-known/agent-card.json)")
    parser.add_argument("--header", "-H", action="append", type=_header, metavar="'NAME: VALUE'",
                        help="a header sent with every request, e.g. 'Authorization: Bearer TOKEN' (repeatable)")
    parser.add_argument("--prompt", default=DEFAULT_PROMPT,
                        help="what the probe messages say; use one that makes the agent call a tool to see how it "
                             "exposes tool calls")
    parser.add_argument("--timeout", type=number(0, above=True, what=" seconds"), default=30.0, metavar="SECONDS",
                        help="seconds per request as a whole (the agent card too, however slowly it arrives), and how "
                             "long a running task is polled for a final state (default 30)")
    parser.add_argument("--max-response", type=response_size, default=DEFAULT_MAX_RESPONSE_BYTES, metavar="SIZE",
                        help="the largest answer read, the card's too (e.g. 32MB, 1GB, none; default "
                             f"{DEFAULT_MAX_RESPONSE_BYTES >> 20}MB)")
    parser.add_argument("--json", action="store_true", help="print the checks as JSON")
    parser.set_defaults(func=run)
    return parser
