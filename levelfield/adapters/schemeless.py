"""A URL written without its scheme (``127.0.0.1:9999``, ``localhost:8000/a2a``): told apart from a
``module:attr`` spec, so the error says ``http://`` rather than "cannot import module '127'"."""

from __future__ import annotations

import re

__all__ = ["looks_like_url"]

_HOST_PORT = re.compile(r"^(localhost|\[[0-9a-fA-F:]+\]|\d{1,3}(\.\d{1,3}){3}|[\w-]+(\.[\w-]+)+):\d{1,5}(/.*)?$")


def looks_like_url(spec: str) -> bool:
    """``host:port[/path]`` (an IP, ``localhost`` or a dotted host name and a port): a URL whose ``http://`` was left
    out, not ``module:attr`` (no module name is all digits after a colon)."""
    return bool(_HOST_PORT.match(spec)) or spec.startswith("localhost/") or spec.startswith("//")
